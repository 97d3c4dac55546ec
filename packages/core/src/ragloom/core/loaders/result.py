"""LoadedDocuments: the documents of a bulk load plus what was skipped and why."""

from __future__ import annotations

from dataclasses import dataclass

from ragloom.core.document import Document
from ragloom.core.errors import EmptyDocumentError, RagloomError

__all__ = [
    "LoadFailure",
    "LoadedDocuments",
]


@dataclass(frozen=True, slots=True)
class LoadFailure:
    """One source that could not be loaded or parsed."""

    source: str
    error: RagloomError

    @property
    def no_text(self) -> bool:
        """True when the source was read but holds no text (a 0-byte or blank file, an
        image): nothing to ingest, so callers skip it rather than count it as a failure.
        The one definition of "no text": the parser raised :class:`EmptyDocumentError`;
        corrupt, encrypted or unreadable sources are real failures."""
        return isinstance(self.error, EmptyDocumentError)

    def __str__(self) -> str:
        message = str(self.error)
        # ragloom's errors name their source already: never ``uri: uri: reason``
        return message if self.source in message else f"{self.source}: {message}"


class LoadedDocuments(list[Document]):
    """A plain list of the loaded documents, with ``failures`` for the skipped sources.

    A bulk load never loses good files because of a bad one: each bad file becomes a
    :class:`LoadFailure` here (and a logged warning); pass ``strict=True`` to the loader
    to raise on the first failure instead. ``failures`` holds every source not loaded;
    :attr:`skipped` the ones with no text, :attr:`errors` the others (real failures).
    """

    def __init__(self, documents: list[Document], failures: list[LoadFailure]) -> None:
        super().__init__(documents)
        self.failures = failures

    @property
    def skipped(self) -> list[LoadFailure]:
        """The sources skipped because they hold no text (:attr:`LoadFailure.no_text`)."""
        return [failure for failure in self.failures if failure.no_text]

    @property
    def errors(self) -> list[LoadFailure]:
        """The sources that failed: unreadable, corrupt, encrypted, too large, ..."""
        return [failure for failure in self.failures if not failure.no_text]
