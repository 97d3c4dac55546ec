"""One metadata codec for every store: typed values in JSON, and one alphabet of kind letters.

JSON cannot tell a UUID from a str and has no NaN or infinity, so a store that keeps
metadata as JSON writes (this is also the in-memory store's saved format):

- **tagged values** (:func:`encode_metadata` / :func:`decode_metadata`): ``str``, ``int``,
  ``float`` and ``bool`` as plain JSON; ``uuid.UUID`` as ``{"$uuid": "..."}``; NaN and
  ±infinity as ``{"$float": "nan"}`` (``"inf"``, ``"-inf"``). A string that looks like a tag
  stays a string: tags are JSON objects.
- **kind letters**, one alphabet for all stores: :data:`KIND_LETTERS` names the filter
  kinds (``s`` str, ``n`` number, ``b`` bool, ``u`` UUID: type tags, field prefixes), and
  :data:`EXACT_LETTERS` the exact type of a value stored as plain JSON, where JSON loses
  it (``i`` int, ``f`` finite float, ``p`` +inf, ``m`` -inf, ``x`` NaN, and ``s``, ``b``,
  ``u``). No letter means two things: ``n`` is always "number".
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Mapping
from typing import Any

from ragloom.core.errors import InvalidMetadataError
from ragloom.core.filter_values import BOOL, NUMBER, STR, UUID
from ragloom.core.metadata import MetadataValue, validate_key

__all__ = [
    "EXACT_LETTERS",
    "EXACT_LETTERS_OF",
    "KIND_LETTERS",
    "decode_metadata",
    "decode_metadata_rows",
    "encode_metadata",
    "exact_letter",
]

KIND_LETTERS = {STR: "s", NUMBER: "n", BOOL: "b", UUID: "u"}
"""The letter of each filter kind (:mod:`ragloom.core.filter_values`)."""

EXACT_LETTERS_OF: dict[str, tuple[str, ...]] = {
    NUMBER: ("i", "f", "p", "m", "x"),
    STR: ("s",),
    BOOL: ("b",),
    UUID: ("u",),
}
"""The exact-type letters of each filter kind."""

EXACT_LETTERS = ("s", "i", "f", "p", "m", "x", "b", "u")
"""Every exact-type letter."""

_PLAIN_TYPES = frozenset({str, int, float, bool})


def exact_letter(value: MetadataValue) -> str:
    """The exact-type letter of a metadata value."""
    if isinstance(value, bool):
        return "b"
    if isinstance(value, int):
        return "i"
    if isinstance(value, float):
        if math.isnan(value):
            return "x"
        return "f" if math.isfinite(value) else ("p" if value > 0 else "m")
    if isinstance(value, str):
        return "s"
    if isinstance(value, uuid.UUID):
        return "u"
    raise InvalidMetadataError(f"{value!r} ({type(value).__name__}) is not a metadata value")


def encode_metadata(metadata: Mapping[str, MetadataValue]) -> dict[str, Any]:
    """Metadata as JSON values that keep their type (see the module docstring)."""
    encoded: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, uuid.UUID):
            encoded[key] = {"$uuid": str(value)}
        elif isinstance(value, float) and not math.isfinite(value):
            encoded[key] = {"$float": repr(value)}
        else:
            encoded[key] = value
    return encoded


def decode_metadata(encoded: object) -> dict[str, MetadataValue]:
    """The inverse of :func:`encode_metadata`; raises ``ValueError`` on anything else.

    Null, lists and untagged objects are refused (:class:`InvalidMetadataError` for the
    values), so every value returned is a valid metadata value.
    """
    return decode_metadata_rows([encoded])[0]


def decode_metadata_rows(rows: list[Any]) -> list[dict[str, MetadataValue]]:
    """:func:`decode_metadata` of each row; rows of plain values take a fast path and
    each distinct key is validated once."""
    keys: set[str] = set()
    decoded: list[dict[str, MetadataValue]] = []
    for row in rows:
        plain = type(row) is dict and set(map(type, row.values())) <= _PLAIN_TYPES
        if plain and row.keys() <= keys:
            decoded.append(row.copy())
        else:
            decoded.append(_decode_row(row, keys))
    return decoded


def _decode_row(row: object, keys: set[str]) -> dict[str, MetadataValue]:
    """Decode one metadata object, adding its keys to the validated ``keys``."""
    if not isinstance(row, Mapping):
        raise ValueError(f"metadata must be a JSON object, got {row!r}")
    decoded: dict[str, MetadataValue] = {}
    for key, value in row.items():
        if key not in keys:
            keys.add(validate_key(key))
        if type(value) in _PLAIN_TYPES:
            decoded[key] = value
        elif isinstance(value, Mapping) and len(value) == 1:
            decoded[key] = _decode_tagged(key, value)
        else:
            raise InvalidMetadataError(f"metadata key {key!r}: unsupported value {value!r}")
    return decoded


def _decode_tagged(key: str, value: Mapping[str, Any]) -> MetadataValue:
    """The value of a one-key tag object, ``{"$uuid": ...}`` or ``{"$float": ...}``."""
    tag, text = next(iter(value.items()))
    if tag == "$float" and text in ("nan", "inf", "-inf"):
        return float(text)
    if tag == "$uuid" and isinstance(text, str):
        with contextlib.suppress(ValueError):
            return uuid.UUID(text)
    raise ValueError(f"metadata key {key!r}: invalid encoded value {dict(value)!r}")
