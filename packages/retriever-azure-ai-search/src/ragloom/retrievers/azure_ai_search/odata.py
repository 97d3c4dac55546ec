"""ragloom Filters -> OData ``$filter`` expressions of Azure AI Search.

Keys must be field names (``[A-Za-z][A-Za-z0-9_]*``, ``/`` for sub-fields); strings are
quoted with ``'`` doubled, the OData escape; numbers must be finite. ``contains_string``
has no exact OData equivalent (``search.ismatch`` is tokenized full text), so it is
refused. A missing field is ``null`` in OData: comparisons with it are false, ``ne``
true, as ragloom's semantics want.
"""

from __future__ import annotations

import math
import re
import uuid

from ragloom.core.errors import InvalidFilterError
from ragloom.core.filter_compiler import FilterCompiler
from ragloom.core.filter_values import FilterValue
from ragloom.core.filters import (
    ContainsString,
    IsEqualTo,
    IsIn,
    IsNotEqualTo,
    IsNotIn,
)

__all__ = ["ODATA_ORDERINGS", "ODataFilterCompiler", "odata_literal"]

_FIELD = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:/[A-Za-z][A-Za-z0-9_]*)*")


def odata_literal(value: object) -> str:
    """``value`` as an OData literal (strings single-quoted, ``'`` doubled)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidFilterError(f"filter value {value!r} is not a finite number")
        return repr(value)
    if isinstance(value, str | uuid.UUID):
        return "'" + str(value).replace("'", "''") + "'"
    raise InvalidFilterError(f"filter value {value!r} ({type(value).__name__}) has no OData form")


def _field(key: str) -> str:
    if not _FIELD.fullmatch(key):
        raise InvalidFilterError(
            f"filter key {key!r} is not an Azure AI Search field name "
            "(letters, digits and _, starting with a letter; / for sub-fields)"
        )
    return key


class ODataFilterCompiler(FilterCompiler[str]):
    """Compiles a ragloom Filter to an OData ``$filter`` string."""

    def _compare(self, key: str, op: str, value: object) -> str:
        return f"{_field(key)} {op} {odata_literal(value)}"

    def is_equal_to(self, filter: IsEqualTo) -> str:
        return self._compare(filter.key, "eq", filter.value)

    def is_not_equal_to(self, filter: IsNotEqualTo) -> str:
        return self._compare(filter.key, "ne", filter.value)

    def order(self, key: str, operator: str, value: FilterValue) -> str:
        return self._compare(key, ODATA_ORDERINGS[operator], value)

    def is_in(self, filter: IsIn) -> str:
        return "(" + " or ".join(self._compare(filter.key, "eq", v) for v in filter.values) + ")"

    def is_not_in(self, filter: IsNotIn) -> str:
        return "(" + " and ".join(self._compare(filter.key, "ne", v) for v in filter.values) + ")"

    def contains_string(self, filter: ContainsString) -> str:
        raise self.unsupported(filter)

    def and_(self, operands: list[str]) -> str:
        return "(" + " and ".join(operands) + ")"

    def or_(self, operands: list[str]) -> str:
        return "(" + " or ".join(operands) + ")"

    def not_(self, operand: str) -> str:
        return f"not ({operand})"


ODATA_ORDERINGS = {">": "gt", ">=": "ge", "<": "lt", "<=": "le"}
"""ragloom's ordering operators -> OData's."""
