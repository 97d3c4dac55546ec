"""A batch of entries column by column, in the collection's field order.

The sync client writes new entries with a columnar insert (pymilvus's ORM
``Collection.insert``): for the store's eight fields it costs a fraction of the
row-by-row conversion ``MilvusClient.insert`` does. Upserts and the async client take
rows, made from the columns on the way out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Row = dict[str, Any]


@dataclass(slots=True)
class Columns:
    """Field values of a batch; ``seqs`` may be updated in place (kept positions)."""

    ids: list[str]
    seqs: list[int]
    vectors: list[list[float]]
    texts: list[str]
    has_text: list[bool]
    metadata: list[dict[str, Any]]
    kinds: list[dict[str, str]]
    exact: list[dict[str, str]]

    def __len__(self) -> int:
        return len(self.ids)

    def values(self) -> list[list[Any]]:
        """The columns in the collection's field order (id, seq, vector, text, has_text,
        metadata, kinds, exact)."""
        return [
            self.ids,
            self.seqs,
            self.vectors,
            self.texts,
            self.has_text,
            self.metadata,
            self.kinds,
            self.exact,
        ]

    def take(self, positions: Sequence[int] | slice) -> Columns:
        """The entries at ``positions`` (or in a slice)."""
        if isinstance(positions, slice):
            return Columns(*(column[positions] for column in self.values()))
        return Columns(*([column[i] for i in positions] for column in self.values()))

    def rows(self) -> list[Row]:
        """The entries as rows (for ``upsert`` and the async client's ``insert``)."""
        return [
            {
                "id": id,
                "seq": seq,
                "vector": vector,
                "text": text,
                "has_text": has_text,
                "metadata": metadata,
                "kinds": kinds,
                "exact": exact,
            }
            for id, seq, vector, text, has_text, metadata, kinds, exact in zip(
                *self.values(), strict=True
            )
        ]
