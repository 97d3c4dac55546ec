"""ParentStore: where small-to-big retrieval keeps the parents of the indexed segments.

Parent-document and auto-merging retrieval embed small segments (children) but answer with
the larger segment or document around them (their parent). The embedding store holds the
children only; each child names its parent in its metadata (``parent_id``, a string, so
every store keeps and returns it). The parents themselves live here, keyed by id, and are
read back by the retrievers after the search. Keeping them out of the embedding store's
metadata avoids copying a parent into each of its children and the stores' metadata limits
(Milvus caps a JSON field at 64 KiB), and works the same whichever embedding store is used.

Each parent is a :class:`TextSegment` whose ``start``/``end`` are its character offsets in
the original document, so a returned parent cites the exact span it came from.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ragloom.core.document import TextSegment
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.metadata import MetadataValue

__all__ = [
    "PARENT_ID",
    "CHILD_COUNT",
    "ParentStore",
    "InMemoryParentStore",
]

PARENT_ID = "parent_id"
"""Segment metadata key: the id of the segment's parent in a :class:`ParentStore`."""
CHILD_COUNT = "child_count"
"""Parent metadata key: how many direct children the parent was split into."""

_FORMAT = "ragloom.parent_store/1"


@runtime_checkable
class ParentStore(Protocol):
    """A key-value store of parent segments, by parent id."""

    def put_all(self, parents: Mapping[str, TextSegment]) -> None:
        """Store (or replace) the parents under their ids."""
        ...

    def get_all(self, ids: Iterable[str]) -> dict[str, TextSegment]:
        """The stored parents among ``ids``; unknown ids are left out."""
        ...

    def remove_all(self, ids: Iterable[str]) -> None:
        """Remove the given ids; unknown ids are ignored."""
        ...


class InMemoryParentStore:
    """A :class:`ParentStore` in a dict, saved to and loaded from a JSON file."""

    def __init__(self) -> None:
        self._parents: dict[str, TextSegment] = {}
        self._lock = threading.Lock()

    def put_all(self, parents: Mapping[str, TextSegment]) -> None:
        """Store (or replace) the parents under their ids."""
        for id, parent in parents.items():
            if not isinstance(id, str) or not id:
                raise InvalidArgumentError(f"parent ids must be non-empty strings, got {id!r}")
            if not isinstance(parent, TextSegment):
                raise InvalidArgumentTypeError(
                    f"parent {id!r} must be a TextSegment, got {type(parent).__name__}"
                )
        with self._lock:
            self._parents.update(parents)

    def get_all(self, ids: Iterable[str]) -> dict[str, TextSegment]:
        """The stored parents among ``ids``; unknown ids are left out."""
        parents = self._parents
        return {id: parents[id] for id in ids if id in parents}

    def remove_all(self, ids: Iterable[str]) -> None:
        """Remove the given ids; unknown ids are ignored."""
        with self._lock:
            for id in ids:
                self._parents.pop(id, None)

    def __len__(self) -> int:
        return len(self._parents)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write every parent to ``path`` (JSON), replacing the file atomically."""
        with self._lock:
            entries = [
                {"id": id, "text": parent.text, "metadata": _encode(parent.metadata.to_dict())}
                for id, parent in self._parents.items()
            ]
        target = Path(path)
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_text(
            json.dumps({"format": _FORMAT, "parents": entries}, ensure_ascii=False),
            encoding="utf-8",
        )
        os.replace(temporary, target)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> InMemoryParentStore:
        """The store saved at ``path`` by :meth:`save`."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise InvalidArgumentError(f"{os.fspath(path)!r} is not a saved parent store")
        store = cls()
        store._parents = {
            entry["id"]: TextSegment(entry["text"], _decode(entry["metadata"]))
            for entry in data["parents"]
        }
        return store


def _encode(metadata: dict[str, MetadataValue]) -> dict[str, Any]:
    """Metadata as JSON values; a UUID (which JSON lacks) becomes ``{"uuid": str}``."""
    return {
        key: {"uuid": str(value)} if isinstance(value, uuid.UUID) else value
        for key, value in metadata.items()
    }


def _decode(metadata: dict[str, Any]) -> dict[str, MetadataValue]:
    return {
        key: uuid.UUID(value["uuid"]) if isinstance(value, dict) else value
        for key, value in metadata.items()
    }
