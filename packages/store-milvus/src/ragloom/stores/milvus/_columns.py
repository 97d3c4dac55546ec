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

import numpy as np
import numpy.typing as npt

from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.metadata import MetadataValue
from ragloom.stores.milvus._expr import expressible
from ragloom.stores.milvus._metadata import encode_metadata
from ragloom.stores.milvus._schema import MAX_VARCHAR

__all__ = ["Columns", "Row", "with_rows"]

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

    @classmethod
    def of(
        cls,
        ids: list[str],
        seqs: Sequence[int],
        vectors: npt.NDArray[np.float32],
        texts: list[str | None],
        metadata: list[dict[str, MetadataValue]] | None,
    ) -> Columns:
        """The columns of new entries; raises for an id or text Milvus cannot store."""
        for id in ids:
            if not expressible(id) or len(id.encode("utf-8")) > MAX_VARCHAR:
                raise EmbeddingStoreError(
                    f"id {id!r} cannot be stored in Milvus: ids must be valid Unicode without "
                    f"control characters (U+0000-U+001F, U+007F), at most {MAX_VARCHAR} bytes "
                    "in UTF-8"
                )
        for position, text in enumerate(texts):
            if text is not None and not (text.isascii() and len(text) <= MAX_VARCHAR):
                id = ids[position]
                try:
                    size = len(text.encode("utf-8"))
                except UnicodeEncodeError as exc:
                    raise EmbeddingStoreError(
                        f"entry {id!r}: text is not valid Unicode ({exc})"
                    ) from exc
                if size > MAX_VARCHAR:
                    raise EmbeddingStoreError(
                        f"entry {id!r}: text of {size} bytes exceeds Milvus's VARCHAR limit "
                        f"of {MAX_VARCHAR} bytes; split the document into smaller segments"
                    )
        encoded = [encode_metadata(entry) for entry in metadata] if metadata else []
        empty: dict[str, Any] = {}
        return cls(
            ids=ids,
            seqs=list(seqs),
            vectors=vectors.tolist(),
            texts=[text or "" for text in texts],
            has_text=[text is not None for text in texts],
            metadata=[values for values, _, _ in encoded] or [empty] * len(ids),
            kinds=[kinds for _, kinds, _ in encoded] or [empty] * len(ids),
            exact=[exact for _, _, exact in encoded] or [empty] * len(ids),
        )

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


def with_rows(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Call arguments with a batch of columns turned into rows."""
    return tuple(arg.rows() if isinstance(arg, Columns) else arg for arg in args)
