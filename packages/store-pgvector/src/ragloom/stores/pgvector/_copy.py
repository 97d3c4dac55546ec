"""A batch of rows to write, as a binary ``COPY`` stream or as upsert parameters.

The binary COPY stream is built here rather than row by row through psycopg's adapters:
the vector fields of the whole batch are laid out by numpy in one pass, the kind-tag
arrays repeat (rows tend to share their keys) and are encoded once each, and each row is
one ``bytes.join``. Text is encoded as UTF-8, so the stream is used only on UTF-8
connections (the store falls back to psycopg's ``write_row`` otherwise).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ragloom.stores.pgvector._database import VectorParam
from ragloom.stores.pgvector._filters import jsonb_text

__all__ = ["Batch"]

_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
_TRAILER = b"\xff\xff"
_FIELDS = b"\x00\x05"  # id, embedding, text, metadata, metadata_kinds
_NULL = b"\xff\xff\xff\xff"
_INT32 = struct.Struct(">i")
_ARRAY_HEADER = struct.Struct(">iiiii")  # ndim, has nulls, element type, length, lower bound
_TEXT_OID = 25
_EMPTY_TEXT_ARRAY = struct.pack(">iii", 0, 0, _TEXT_OID)
_CHUNK = 1 << 20


def _text_array(tags: list[str]) -> bytes:
    """A ``text[]`` field (length-prefixed) in PostgreSQL's binary array format."""
    if not tags:
        body = _EMPTY_TEXT_ARRAY
    else:
        encoded = [tag.encode("utf-8") for tag in tags]
        body = _ARRAY_HEADER.pack(1, 0, _TEXT_OID, len(encoded), 1) + b"".join(
            [_INT32.pack(len(item)) + item for item in encoded]
        )
    return _INT32.pack(len(body)) + body


@dataclass
class Batch:
    """Validated rows: ids, float32 vectors, texts (None: no segment), metadata JSON, tags."""

    ids: list[str]
    matrix: npt.NDArray[np.float32]
    texts: list[str | None]
    documents: list[str]
    tags: list[list[str]]

    def __len__(self) -> int:
        return len(self.ids)

    def vector_payloads(self) -> list[VectorParam]:
        """pgvector's binary form of each row (for statement parameters)."""
        count, dimension = self.matrix.shape
        header = struct.pack(">HH", dimension, 0)
        blob = self.matrix.astype(">f4").tobytes()
        width = 4 * dimension
        return [VectorParam(header + blob[i * width : (i + 1) * width]) for i in range(count)]

    def param_rows(self) -> list[tuple[Any, ...]]:
        """``(id, vector, text, metadata, tags)`` tuples for statements and ``write_row``."""
        return [
            (embedding_id, vector, text, jsonb_text(document), tags)
            for embedding_id, vector, text, document, tags in zip(
                self.ids,
                self.vector_payloads(),
                self.texts,
                self.documents,
                self.tags,
                strict=True,
            )
        ]

    def copy_chunks(self) -> Iterator[bytes]:
        """The whole binary COPY stream (signature, rows, trailer), in ~1 MB chunks."""
        count, dimension = self.matrix.shape
        width = 8 + 4 * dimension
        fields = np.empty((count, width), dtype=np.uint8)
        fields[:, :4] = np.frombuffer(_INT32.pack(4 + 4 * dimension), dtype=np.uint8)
        fields[:, 4:8] = np.frombuffer(struct.pack(">HH", dimension, 0), dtype=np.uint8)
        fields[:, 8:] = self.matrix.astype(">f4").view(np.uint8).reshape(count, 4 * dimension)
        vectors = memoryview(fields.tobytes())
        arrays: dict[tuple[str, ...], bytes] = {}
        pack = _INT32.pack
        parts: list[bytes | memoryview] = [_SIGNATURE]
        size = len(_SIGNATURE)
        for row, (embedding_id, text, document, tags) in enumerate(
            zip(self.ids, self.texts, self.documents, self.tags, strict=True)
        ):
            key = tuple(tags)
            array = arrays.get(key)
            if array is None:
                array = arrays[key] = _text_array(tags)
            id_bytes = embedding_id.encode("utf-8")
            json_bytes = document.encode("utf-8")
            if text is None:
                text_field = _NULL
            else:
                text_bytes = text.encode("utf-8")
                text_field = pack(len(text_bytes)) + text_bytes
            record = b"".join(
                [
                    _FIELDS,
                    pack(len(id_bytes)),
                    id_bytes,
                    vectors[row * width : (row + 1) * width],
                    text_field,
                    pack(len(json_bytes) + 1),
                    b"\x01",
                    json_bytes,
                    array,
                ]
            )
            parts.append(record)
            size += len(record)
            if size >= _CHUNK:
                yield b"".join(parts)
                parts, size = [], 0
        parts.append(_TRAILER)
        yield b"".join(parts)
