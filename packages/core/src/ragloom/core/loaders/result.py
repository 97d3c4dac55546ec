"""LoadedDocuments: the documents of a bulk load plus what was skipped and why."""

from __future__ import annotations

from dataclasses import dataclass

from ragloom.core.document import Document
from ragloom.core.errors import RagloomError

__all__ = [
    "LoadFailure",
    "LoadedDocuments",
]


@dataclass(frozen=True, slots=True)
class LoadFailure:
    """One source that could not be loaded or parsed."""

    source: str
    error: RagloomError

    def __str__(self) -> str:
        return f"{self.source}: {self.error}"


class LoadedDocuments(list[Document]):
    """A plain list of the loaded documents, with ``failures`` for the skipped sources.

    A bulk load never loses good files because of a bad one: each bad file becomes a
    :class:`LoadFailure` here (and a logged warning); pass ``strict=True`` to the loader
    to raise on the first failure instead.
    """

    def __init__(self, documents: list[Document], failures: list[LoadFailure]) -> None:
        super().__init__(documents)
        self.failures = failures
