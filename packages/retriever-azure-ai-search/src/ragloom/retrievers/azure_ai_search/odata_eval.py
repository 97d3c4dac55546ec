"""An evaluator of Azure AI Search OData ``$filter`` expressions, for the test server.

It parses the subset that ragloom's compilers emit and more: ``eq ne gt ge lt le``,
``and or not``, parentheses, literals (``'str'`` with ``''`` escapes, numbers, ``true``,
``false``, ``null``), field paths (``a/b``), ``any``/``all`` lambdas over collections
(``metadata/any(m: m/key eq 'k' and m/n gt 2)``, ``tags/any()``) and
``search.in(field, 'a,b', ',')``. Semantics follow Azure's documentation: a comparison
with ``null`` is false except ``eq null`` / ``ne null``, so ``ne`` holds for a missing
value; comparing values of different types, or ordering booleans, is an error (Azure
rejects such a filter with 400). ``search.ismatch`` and other functions are refused.

    predicate = parse_filter("(a eq 'x' and n gt 2)")
    predicate({"a": "x", "n": 3})  # True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["ODataError", "parse_filter"]

Env = tuple[Mapping[str, Any], Mapping[str, Any]]  # (document, lambda variables)
Node = Callable[[Env], Any]

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')"
    r"|(?P<num>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:[./][A-Za-z_][A-Za-z0-9_]*)*)"
    r"|(?P<punct>[(),:]))"
)
_COMPARISONS = {"eq", "ne", "gt", "ge", "lt", "le"}
_KEYWORDS = _COMPARISONS | {"and", "or", "not", "true", "false", "null"}


class ODataError(ValueError):
    """The filter is not valid OData (or compares incompatible types): Azure's 400."""


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "Edm.Boolean"
    if isinstance(value, int | float):
        return "Edm.Double"
    if isinstance(value, str):
        return "Edm.String"
    raise ODataError(f"cannot compare a {type(value).__name__} value: {value!r}")


def compare(op: str, left: Any, right: Any) -> bool:
    """``left <op> right`` with OData's null and type rules."""
    if left is None or right is None:
        if op == "eq":
            return left is None and right is None
        if op == "ne":
            return not (left is None and right is None)
        return False
    if _kind(left) != _kind(right):
        raise ODataError(f"incompatible types in comparison: {left!r} {op} {right!r}")
    if op == "eq":
        return bool(left == right)
    if op == "ne":
        return bool(left != right)
    if isinstance(left, bool):
        raise ODataError(f"operator {op!r} is not defined for Edm.Boolean")
    return bool(
        {"gt": left > right, "ge": left >= right, "lt": left < right, "le": left <= right}[op]
    )


class _Parser:
    def __init__(self, text: str, fields: Callable[[str], None] | None) -> None:
        self.tokens: list[tuple[str, str]] = []
        self.check_field = fields
        position = 0
        text = text.rstrip()
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                raise ODataError(
                    f"Invalid expression: syntax error at position {position} in $filter {text!r}"
                )
            kind = match.lastgroup
            assert kind is not None
            self.tokens.append((kind, match.group(kind)))
            position = match.end()
        self.position = 0
        self.variables: list[str] = []

    def peek(self) -> str | None:
        return self.tokens[self.position][1] if self.position < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.position >= len(self.tokens):
            raise ODataError("Invalid expression: unexpected end of $filter")
        token = self.tokens[self.position]
        if expected is not None and token[1] != expected:
            raise ODataError(f"Invalid expression: expected {expected!r}, found {token[1]!r}")
        self.position += 1
        return token

    def parse(self) -> Node:
        node = self.or_()
        if self.peek() is not None:
            raise ODataError(f"Invalid expression: unexpected {self.peek()!r}")
        return node

    def or_(self) -> Node:
        nodes = [self.and_()]
        while self.peek() == "or":
            self.take()
            nodes.append(self.and_())
        return nodes[0] if len(nodes) == 1 else lambda env: any(_bool(n(env)) for n in nodes)

    def and_(self) -> Node:
        nodes = [self.not_()]
        while self.peek() == "and":
            self.take()
            nodes.append(self.not_())
        return nodes[0] if len(nodes) == 1 else lambda env: all(_bool(n(env)) for n in nodes)

    def not_(self) -> Node:
        if self.peek() == "not":
            self.take()
            inner = self.not_()
            return lambda env: not _bool(inner(env))
        return self.comparison()

    def comparison(self) -> Node:
        left = self.primary()
        op = self.peek()
        if op not in _COMPARISONS:
            return left
        self.take()
        right = self.primary()
        return lambda env: compare(op, left(env), right(env))

    def primary(self) -> Node:
        kind, text = self.take()
        if text == "(":
            node = self.or_()
            self.take(")")
            return node
        if kind == "str":
            value = text[1:-1].replace("''", "'")
            return lambda env: value
        if kind == "num":
            number: float | int = float(text) if any(c in text for c in ".eE") else int(text)
            return lambda env: number
        if kind != "name" or text in _KEYWORDS - {"true", "false", "null"}:
            raise ODataError(f"Invalid expression: unexpected {text!r}")
        if text in ("true", "false", "null"):
            constant = {"true": True, "false": False, "null": None}[text]
            return lambda env: constant
        if text == "search.in":
            return self.search_in()
        if "." in text:
            raise ODataError(f"Invalid expression: function {text!r} is not supported here")
        head, _, last = text.rpartition("/")
        if last in ("any", "all") and head and self.peek() == "(":
            return self.lambda_(head, last)
        return self.path(text)

    def path(self, text: str) -> Node:
        parts = text.split("/")
        if parts[0] in self.variables:
            variable, rest = parts[0], parts[1:]
            return lambda env: _walk(env[1][variable], rest)
        if self.check_field is not None:
            self.check_field("/".join(parts))
        return lambda env: _walk(env[0], parts)

    def lambda_(self, collection: str, quantifier: str) -> Node:
        source = self.path(collection)
        self.take("(")
        if self.peek() == ")":
            self.take()
            if quantifier == "all":
                raise ODataError("Invalid expression: all() needs a lambda")
            return lambda env: bool(source(env))
        kind, variable = self.take()
        if kind != "name" or variable in _KEYWORDS:
            raise ODataError(f"Invalid expression: bad lambda variable {variable!r}")
        self.take(":")
        self.variables.append(variable)
        body = self.or_()
        self.variables.pop()
        self.take(")")
        test = any if quantifier == "any" else all

        def run(env: Env) -> bool:
            items = source(env) or []
            document, variables = env
            return test(_bool(body((document, {**variables, variable: item}))) for item in items)

        return run

    def search_in(self) -> Node:
        self.take("(")
        kind, field = self.take()
        if kind != "name":
            raise ODataError("Invalid expression: search.in needs a field first")
        value = self.path(field)
        self.take(",")
        kind, values = self.take()
        if kind != "str":
            raise ODataError("Invalid expression: search.in needs a string of values")
        delimiters = " ,"
        if self.peek() == ",":
            self.take()
            kind, given = self.take()
            if kind != "str":
                raise ODataError("Invalid expression: search.in delimiters must be a string")
            delimiters = given[1:-1].replace("''", "'")
        self.take(")")
        members = set(re.split("[" + re.escape(delimiters) + "]", values[1:-1].replace("''", "'")))
        return lambda env: value(env) in members


def _walk(value: Any, parts: Sequence[str]) -> Any:
    for part in parts:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise ODataError(f"Invalid expression: {part!r} is not a sub-field here")
        value = value.get(part)
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ODataError(f"Invalid expression: {value!r} is not a boolean expression")
    return value


def parse_filter(
    text: str, check_field: Callable[[str], None] | None = None
) -> Callable[[Mapping[str, Any]], bool]:
    """A predicate over documents for the OData filter ``text``; ``check_field(path)``
    may raise :class:`ODataError` for a path the index does not have."""
    node = _Parser(text, check_field).parse()

    def predicate(document: Mapping[str, Any]) -> bool:
        return _bool(node((document, {})))

    return predicate
