"""Typed metadata as JSONB: the encoding, its decoding, and the per-row kind tags.

Each metadata value is stored as the JSON value closest to it, so the ``metadata`` column
reads naturally in SQL, and the value's type survives the round trip:

========  ===============================  ===========================================
type      stored as                        why
========  ===============================  ===========================================
str       JSON string                      -
bool      JSON ``true`` / ``false``        -
int       JSON number without a ``.``      any size (jsonb numbers are ``numeric``)
float     JSON number with a ``.``         jsonb keeps a number's scale, so ``2.0``
                                           comes back as ``2.0``: a float, not an int
NaN, ±inf ``{"$float": "nan"|"inf"|"-inf"}`` JSON numbers cannot hold them
UUID      ``{"$uuid": "<canonical str>"}``  distinct from a str with the same text
========  ===============================  ===========================================

(the same ``$uuid``/``$float`` forms as the kit's ``metadata_codec``).

Numbers are compared as ``numeric``, exactly. A finite float below 2**53 in magnitude is
written as its shortest ``repr``, which rounds back to the same float: this preserves
order and equality among floats, and no int lies strictly between a float and its repr
(below 2**53 every int is a float), so int/float comparisons are exact too. Larger floats
are integers and are written with all their digits (``2.0**70`` as
``1180591620717411303424.0``), so ``2**70 == 2.0**70`` holds in SQL as in Python.
Negative zero is stored as ``0.0`` (``numeric`` has no signed zero; ``-0.0 == 0.0``).

The kind tags (``metadata_kinds text[]``, one ``<kind letter>:<key>`` per key, letters
``s`` str, ``n`` number, ``b`` bool, ``u`` UUID: the codec's ``KIND_LETTERS``) let a GIN
index answer "does any row hold key k with a kind this filter cannot compare?" without
reading the rows.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from typing import Any

from ragloom.core import filter_values as kinds
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.kit.metadata_codec import KIND_LETTERS
from ragloom.core.metadata import MetadataValue
from ragloom.core.stores.validation import check_segment_text

STR, NUMBER, BOOL, UUID = (
    KIND_LETTERS[k] for k in (kinds.STR, kinds.NUMBER, kinds.BOOL, kinds.UUID)
)
_FLOAT_LIMIT = 2.0**53
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_encode_str = json.JSONEncoder(ensure_ascii=False).encode


def kind_tag(kind: str, key: str) -> str:
    """The tag of ``key`` holding a value of ``kind`` (one of the letters above)."""
    return f"{kind}:{key}"


def encode_number(value: int | float) -> str:
    """The JSON number text of a finite int or float (see the module docstring)."""
    if type(value) is float:
        if abs(value) < _FLOAT_LIMIT:
            return repr(value)
        return f"{int(value)}.0"
    return str(int(value))


def encode_value(key: str, value: MetadataValue) -> tuple[str, str]:
    """``(json_text, kind)`` of one metadata value; raises for what PostgreSQL cannot hold."""
    if isinstance(value, bool):
        return ("true" if value else "false"), BOOL
    if isinstance(value, int):
        try:
            return str(int(value)), NUMBER
        except ValueError as exc:  # beyond Python's int/str conversion limit
            raise EmbeddingStoreError(f"metadata key {key!r}: int too large to store") from exc
    if isinstance(value, float):
        value = float(value)
        if math.isfinite(value):
            return encode_number(value), NUMBER
        name = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return f'{{"$float": "{name}"}}', NUMBER
    if isinstance(value, str):
        check_text(value, f"metadata key {key!r}: value")
        return _encode_str(str.__str__(value)), STR
    if isinstance(value, uuid.UUID):
        return f'{{"$uuid": "{uuid.UUID(int=value.int)}"}}', UUID
    raise EmbeddingStoreError(
        f"metadata key {key!r}: value {value!r} has type {type(value).__name__}; "
        "allowed types are str, int, float, bool and uuid.UUID"
    )


_FAST_KINDS: dict[type, str] = {str: STR, int: NUMBER, bool: BOOL}
_dumps = json.JSONEncoder(ensure_ascii=False).encode


def encode_metadata(metadata: Mapping[str, MetadataValue]) -> tuple[str, list[str]]:
    """The JSON object text of ``metadata`` and its kind tags.

    Fast path: values that are plain str, int, bool or floats below 2**53 in magnitude are
    written by the C JSON encoder as they are (a float's repr is what it writes); then one
    check over the whole text finds any NUL or lone surrogate. Anything else is encoded
    value by value.
    """
    if not metadata:
        return "{}", []
    tags: list[str] = []
    for key, value in metadata.items():
        kind = _FAST_KINDS.get(type(value))
        if kind is None:
            if type(value) is float and -_FLOAT_LIMIT < value < _FLOAT_LIMIT:  # not NaN/inf
                kind = NUMBER
            else:
                return _encode_each(metadata)
        tags.append(f"{kind}:{key}")
    try:
        text = _dumps(metadata)
    except ValueError:  # an int beyond the str conversion limit: reported value by value
        return _encode_each(metadata)
    if "\\u0000" in text or not (text.isascii() or _encodable(text)):
        return _encode_each(metadata)  # names the culprit (or passes on a false alarm)
    return text, tags


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _encode_each(metadata: Mapping[str, MetadataValue]) -> tuple[str, list[str]]:
    parts: list[str] = []
    tags: list[str] = []
    for key, value in metadata.items():
        check_text(key, "metadata key")
        text, kind = encode_value(key, value)
        parts.append(f"{_encode_str(key)}: {text}")
        tags.append(kind_tag(kind, key))
    return "{" + ", ".join(parts) + "}", tags


def check_text(text: str, what: str) -> None:
    """Raise when PostgreSQL text cannot hold ``text`` (NUL, lone surrogates)."""
    if "\x00" in text:
        raise EmbeddingStoreError(
            f"{what} {text!r} contains a NUL character, which PostgreSQL text cannot hold"
        )
    check_segment_text(text, what)


def _decode_special(value: dict[str, Any]) -> MetadataValue:
    if "$uuid" in value:
        return uuid.UUID(value["$uuid"])
    if "$float" in value:
        return _NON_FINITE[value["$float"]]
    raise EmbeddingStoreError(f"unexpected metadata value {value!r} in the table")


def decode_metadata(text: str | None) -> dict[str, MetadataValue]:
    """The metadata dict of a stored JSON object text (see :func:`encode_metadata`)."""
    if not text or text == "{}":
        return {}
    data: dict[str, Any] = json.loads(text)
    if "{" in text[1:]:
        for key, value in data.items():
            if type(value) is dict:
                data[key] = _decode_special(value)
    return data


def decode_many(texts: list[str | None]) -> list[dict[str, MetadataValue]]:
    """:func:`decode_metadata` of several texts with one JSON parse (a search's matches)."""
    data: list[dict[str, Any]] = json.loads("[" + ",".join(text or "{}" for text in texts) + "]")
    for text, entry in zip(texts, data, strict=True):
        if text and "{" in text[1:]:
            for key, value in entry.items():
                if type(value) is dict:
                    entry[key] = _decode_special(value)
    return data
