"""The payload of a point: the entry as stored, plus typed filter fields.

Qdrant payloads are JSON, which cannot tell ``2`` from ``2.0`` on every transport, nor a
UUID from a str, and whose field paths give meaning to ``.``, ``[`` and quotes. So each
point carries:

==========  ====================================================================
``rid``     the caller's id (the point id is ``uuid5`` of it)
``seq``     insertion sequence (int): equal scores come back in insertion order
``text``    the segment's text, or null for an entry without a segment
``meta``    the metadata as JSON text, types tagged (the kit's ``metadata_codec``):
            the exact round trip of str/int/float/bool/UUID
``vec``     the vector as added, float32 little-endian, base64 (Qdrant normalizes
            cosine vectors; scores are recomputed exactly from this)
``kinds``   the filter fields present, e.g. ``["s_<h>", "n_<h>"]`` (type checks)
``s_<h>``   a str value;  ``n_<h>`` a number (float64, exact);  ``b_<h>`` a bool;
``u_<h>``   a UUID's canonical str -- where ``<h>`` is a hash of the metadata key
==========  ====================================================================

Hashing the key into the field name means no key, whatever its characters, is ever
parsed as a Qdrant path: there is nothing to escape and nothing to inject.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filter_values import BOOL, NUMBER, STR, UUID
from ragloom.core.kit.metadata_codec import KIND_LETTERS, decode_metadata, encode_metadata
from ragloom.core.metadata import MetadataValue

__all__ = [
    "FIELD_PREFIX",
    "decode_meta",
    "decode_vector",
    "field",
    "number_field_value",
    "point_id",
    "point_payload",
]

#: The payload field prefix of each value kind.
FIELD_PREFIX = {kind: letter + "_" for kind, letter in KIND_LETTERS.items()}
_ID_NAMESPACE = uuid.UUID("3f0e9a52-4d0c-5b53-9a43-7c1b2a6e0d11")
_dumps = json.JSONEncoder(ensure_ascii=True, allow_nan=False).encode


def point_id(entry_id: str) -> str:
    """The Qdrant point id of a ragloom id: a deterministic UUID (uuid5)."""
    return str(uuid.uuid5(_ID_NAMESPACE, entry_id))


@functools.lru_cache(maxsize=4096)
def field(kind: str, key: str) -> str:
    """The payload field holding values of ``kind`` for metadata ``key`` (cached: a
    batch names the same few keys in every entry)."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return FIELD_PREFIX[kind] + digest


def _check_text(text: str, what: str) -> str:
    """``text`` if UTF-8 can carry it (JSON to a server cannot carry lone surrogates)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EmbeddingStoreError(f"{what} {text!r} is not valid Unicode ({exc})") from exc
    return text


def number_field_value(key: str, value: int | float) -> float:
    """A metadata number as the float64 the filters compare, refused if that is inexact."""
    if type(value) is float:
        if not math.isfinite(value):
            raise EmbeddingStoreError(
                f"metadata key {key!r}: value {value!r} is not finite; Qdrant payloads "
                "(JSON) cannot hold NaN or infinity"
            )
        return value
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if number != value:  # int/float comparison in Python is exact
        raise EmbeddingStoreError(
            f"metadata key {key!r}: int {value} is not exactly representable as a 64-bit "
            "float, which Qdrant's range filters compare; store it as a str"
        )
    return number


def point_payload(
    entry_id: str,
    seq: int,
    vector: npt.NDArray[np.float32],
    text: str | None,
    metadata: Mapping[str, MetadataValue] | None,
) -> dict[str, Any]:
    """The payload of one entry (see the module docstring); raises for what JSON cannot hold."""
    payload: dict[str, Any] = {
        "rid": _check_text(entry_id, "id"),
        "seq": seq,
        "text": None if text is None else _check_text(text, "segment text"),
        "vec": base64.b64encode(vector.astype("<f4", copy=False).tobytes()).decode("ascii"),
    }
    kinds: list[str] = []
    if metadata:
        for key, value in metadata.items():
            _check_text(key, "metadata key")
            if type(value) is bool:
                name = field(BOOL, key)
                payload[name] = value
            elif isinstance(value, int | float):
                name = field(NUMBER, key)
                payload[name] = number_field_value(key, value)
            elif isinstance(value, str):
                name = field(STR, key)
                payload[name] = _check_text(str.__str__(value), f"metadata key {key!r}: value")
            elif isinstance(value, uuid.UUID):
                name = field(UUID, key)
                payload[name] = str(value)
            else:
                raise EmbeddingStoreError(
                    f"metadata key {key!r}: value {value!r} has type {type(value).__name__}; "
                    "allowed types are str, int, float, bool and uuid.UUID"
                )
            kinds.append(name)
        payload["meta"] = _dumps(encode_metadata(metadata))
    payload["kinds"] = kinds
    return payload


def decode_meta(payload: Mapping[str, Any]) -> dict[str, MetadataValue]:
    """The typed metadata of a stored payload."""
    text = payload.get("meta")
    if text is None:
        return {}
    try:
        return decode_metadata(json.loads(text))
    except (ValueError, TypeError) as exc:
        raise EmbeddingStoreError(
            f"point {payload.get('rid')!r} has unreadable metadata {text!r}: {exc}"
        ) from exc


def decode_vector(payload: Mapping[str, Any], dimension: int) -> npt.NDArray[np.float32]:
    """The vector as added, from the ``vec`` payload field."""
    try:
        raw = base64.b64decode(payload["vec"], validate=True)
        vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbeddingStoreError(
            f"point {payload.get('rid')!r} has no readable 'vec' payload: it was not written "
            "by ragloom's Qdrant store"
        ) from exc
    if vector.shape != (dimension,):
        raise EmbeddingStoreError(
            f"point {payload.get('rid')!r}: stored vector has {vector.size} values, "
            f"expected {dimension}"
        )
    return vector
