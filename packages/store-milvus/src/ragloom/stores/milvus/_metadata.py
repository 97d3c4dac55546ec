"""Typed metadata in three JSON fields: values to filter on, kinds, and exact forms.

JSON cannot tell int from float (a server may read ``2.0`` back as ``2``) or a UUID from
a str, and has no NaN or infinity, so each entry stores:

==========  =========================================  ==============================
field       holds                                      for
==========  =========================================  ==============================
metadata    key -> plain JSON value (UUID as its        filter expressions
            canonical str; ±inf as ±max float; NaN
            left out; an int beyond int64 as a float)
kinds       key -> one letter (table below)             decoding; type-mismatch checks
exact       key -> decimal text of an int beyond int64  decoding
==========  =========================================  ==============================

Kinds: the kit's one alphabet (``ragloom.core.kit.metadata_codec.EXACT_LETTERS``): ``s``
str, ``i`` int, ``f`` finite float, ``p`` +inf, ``m`` -inf, ``x`` NaN, ``b`` bool, ``u``
UUID. Collections written before the one codec hold -inf as ``n`` (a letter that means
"number" everywhere else); it is still read, and filters treat it as a number.
"""

from __future__ import annotations

import math
import sys
import uuid
from collections.abc import Mapping
from typing import Any

from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filter_values import NUMBER
from ragloom.core.kit.metadata_codec import EXACT_LETTERS, EXACT_LETTERS_OF
from ragloom.core.metadata import MetadataValue

LEGACY_MINUS_INF = "n"
"""How collections written before the one codec store -inf (still read)."""
NUMBER_KINDS = (*EXACT_LETTERS_OF[NUMBER], LEGACY_MINUS_INF)
KINDS_OF: dict[str, tuple[str, ...]] = {**EXACT_LETTERS_OF, NUMBER: NUMBER_KINDS}
"""The stored kinds of each filter value kind (core's ``filter_values`` kinds)."""
ALL_STORED_KINDS = (*EXACT_LETTERS, LEGACY_MINUS_INF)
_INT64 = 2**63
_MAX = sys.float_info.max


def _storable_str(key: str, text: str, what: str) -> str:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EmbeddingStoreError(
                f"metadata key {key!r}: {what} {text!r} is not valid Unicode ({exc})"
            ) from exc
    return str.__str__(text)


def encode_metadata(
    metadata: Mapping[str, MetadataValue],
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """``(values, kinds, exact)`` of one entry's metadata (see the module docstring)."""
    values: dict[str, Any] = {}
    kinds: dict[str, str] = {}
    exact: dict[str, str] = {}
    for raw_key, value in metadata.items():
        key = (
            raw_key
            if type(raw_key) is str and raw_key.isascii()
            else _storable_str(str(raw_key), raw_key, "key")
        )
        # fast paths for the common exact types, then the general case
        if type(value) is str and value.isascii():
            values[key], kinds[key] = value, "s"
        elif type(value) is int and -_INT64 <= value < _INT64:
            values[key], kinds[key] = value, "i"
        elif type(value) is float and -_MAX <= value <= _MAX:
            values[key], kinds[key] = value, "f"
        elif isinstance(value, bool):
            values[key], kinds[key] = value, "b"
        elif isinstance(value, int):
            number = int(value)
            if -_INT64 <= number < _INT64:
                values[key] = number
            else:
                values[key] = _clamped_float(number)
                exact[key] = str(number)
            kinds[key] = "i"
        elif isinstance(value, float):
            real = float(value)
            if math.isnan(real):
                kinds[key] = "x"
            elif math.isinf(real):
                values[key], kinds[key] = (_MAX, "p") if real > 0 else (-_MAX, "m")
            else:
                values[key], kinds[key] = real, "f"
        elif isinstance(value, str):
            values[key], kinds[key] = _storable_str(key, value, "value"), "s"
        elif isinstance(value, uuid.UUID):
            values[key], kinds[key] = str(uuid.UUID(int=value.int)), "u"
        else:
            raise EmbeddingStoreError(
                f"metadata key {key!r}: value {value!r} has type {type(value).__name__}; "
                "allowed types are str, int, float, bool and uuid.UUID"
            )
    return values, kinds, exact


def _clamped_float(number: int) -> float:
    try:
        return float(number)
    except OverflowError:
        return _MAX if number > 0 else -_MAX


def decode_metadata(
    values: Mapping[str, Any] | None,
    kinds: Mapping[str, str] | None,
    exact: Mapping[str, str] | None,
) -> dict[str, MetadataValue]:
    """The typed metadata of a stored entry."""
    result: dict[str, MetadataValue] = {}
    values = values or {}
    exact = exact or {}
    for key, kind in (kinds or {}).items():
        value: Any = values.get(key)
        if kind == "s":
            result[key] = str(value)
        elif kind == "i":
            result[key] = int(exact[key]) if key in exact else int(value)
        elif kind == "f":
            result[key] = float(value)
        elif kind == "p":
            result[key] = math.inf
        elif kind == "m" or kind == LEGACY_MINUS_INF:
            result[key] = -math.inf
        elif kind == "x":
            result[key] = math.nan
        elif kind == "b":
            result[key] = bool(value)
        elif kind == "u":
            result[key] = uuid.UUID(str(value))
        else:
            raise EmbeddingStoreError(f"metadata key {key!r} has an unknown stored kind {kind!r}")
    return result
