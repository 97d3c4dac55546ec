"""Milvus boolean expressions built from parts: text, field paths and parameters.

An :class:`Expr` is a tuple of parts; values are :class:`Param` parts, never text. It is
rendered either as a template (``{p0}`` placeholders plus a ``filter_params`` dict, which a
Milvus server >= 2.5 binds itself) or, for Milvus Lite 2.5 (whose parser has no
templates), with each parameter written as a literal by :func:`literal` -- the one place
that turns a value into expression text, and it accepts only what it can write exactly.

Keys of the JSON metadata fields are written as string literals inside ``field["..."]``
by :func:`path` (Milvus has no template for a path); :func:`expressible` says which
strings can be written at all: Milvus Lite's lexer decodes only the ``\\"``, ``\\'`` and
``\\\\`` escapes and refuses raw control characters, so a string holding U+0000-U+001F or
U+007F cannot appear in an expression (the filter compiler then falls back to an exact
check in Python, see ``_filters``); nor can a key holding ``/`` or ``~`` (JSON pointer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragloom.core.errors import InvalidFilterError

_CONTROL = frozenset(chr(code) for code in (*range(0x20), 0x7F))
_INT64 = 2**63
JsonScalar = str | int | float | bool


@dataclass(frozen=True, slots=True)
class Param:
    """A value passed to the server as a parameter (str, number, bool, or a list of them)."""

    value: JsonScalar | tuple[JsonScalar, ...]


Part = str | Param
Expr = tuple[Part, ...]


def expressible(text: str) -> bool:
    """Whether ``text`` can be written as a Milvus string literal (no control characters,
    valid Unicode)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return _CONTROL.isdisjoint(text)


def key_expressible(key: str) -> bool:
    """Whether ``field["key"]`` names the top-level ``key``: Milvus turns the path into a
    JSON pointer without escaping, so ``/`` and ``~`` would address other keys."""
    return expressible(key) and "/" not in key and "~" not in key


def string_literal(text: str) -> str:
    """``text`` as a double-quoted Milvus string literal (only ``\\`` and ``"`` escaped)."""
    if not expressible(text):
        raise InvalidFilterError(f"{text!r} cannot be written in a Milvus expression")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def literal(value: JsonScalar | tuple[JsonScalar, ...]) -> str:
    """A parameter value as Milvus expression text, exactly, or InvalidFilterError."""
    if isinstance(value, tuple):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        if -_INT64 <= value < _INT64:
            return str(value)
        raise InvalidFilterError(f"int {value} is outside Milvus's int64 range")
    if type(value) is float:
        if not math.isfinite(value):
            raise InvalidFilterError(f"float {value!r} cannot be written in a Milvus expression")
        return repr(value)
    if type(value) is str:
        return string_literal(value)
    raise InvalidFilterError(f"unsupported expression parameter {value!r}")


def path(field: str, key: str) -> str:
    """``field["key"]``: a top-level key of a JSON field (see :func:`key_expressible`)."""
    if not key_expressible(key):
        raise InvalidFilterError(f"metadata key {key!r} cannot be named in a Milvus expression")
    return f"{field}[{string_literal(key)}]"


def join(operator: str, operands: Sequence[Expr]) -> Expr:
    """``(a op b op ...)``."""
    parts: list[Part] = ["("]
    for position, operand in enumerate(operands):
        if position:
            parts.append(f" {operator} ")
        parts.extend(operand)
    parts.append(")")
    return tuple(parts)


def render_template(expr: Expr) -> tuple[str, dict[str, Any]]:
    """The expression text with ``{pN}`` placeholders and its ``filter_params``."""
    text: list[str] = []
    params: dict[str, Any] = {}
    for part in expr:
        if isinstance(part, Param):
            name = f"p{len(params)}"
            params[name] = list(part.value) if isinstance(part.value, tuple) else part.value
            text.append("{" + name + "}")
        else:
            text.append(part)
    return "".join(text), params


def render_literal(expr: Expr) -> str:
    """The expression text with every parameter written as a literal (Milvus Lite)."""
    return "".join(literal(part.value) if isinstance(part, Param) else part for part in expr)


def filter_arguments(expr: Expr, templates: bool) -> dict[str, Any]:
    """The ``filter`` (and, with ``templates``, ``filter_params``) arguments of a call."""
    if templates:
        text, params = render_template(expr)
        return {"filter": text, "filter_params": params} if params else {"filter": text}
    return {"filter": render_literal(expr)}
