"""Compact text of a query result: a header line, then one ``|``-separated line per row."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any

from ragloom.retrievers.sql.executor import QueryResult

__all__ = ["cell_text", "format_table", "metadata_value"]

MAX_CELL = 200  # characters of one cell in the text; longer values are cut with "…"


def cell_text(value: Any) -> str:
    """One cell as text: NULL for None, ISO dates, bytes by size, newlines flattened."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    text = value.isoformat() if isinstance(value, dt.date | dt.time) else str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def format_table(result: QueryResult) -> str:
    """The header and the rows, ``|``-separated; a last line says when rows were cut off."""
    lines = [" | ".join(result.columns)]
    lines += [" | ".join(cell_text(v) for v in row) for row in result.rows]
    if result.byte_limited:
        lines.append(f"(only the first {len(result.rows)} rows: the result's byte limit)")
    elif result.truncated:
        lines.append(f"(only the first {len(result.rows)} rows)")
    return "\n".join(lines)


def metadata_value(value: Any) -> str | int | float | bool | uuid.UUID | None:
    """A cell as a ragloom metadata value (``None`` for NULL and binary cells)."""
    if value is None or isinstance(value, bytes | bytearray | memoryview):
        return None
    if isinstance(value, str | bool | int | float | uuid.UUID):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)
