"""parse_filter: read a filter from text, for CLIs and text-to-filter.

Grammar (keywords are case-insensitive; ``str(filter)`` writes this syntax back)::

    filter     := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | "(" filter ")" | comparison
    comparison := key ("==" | "!=" | ">" | ">=" | "<" | "<=") value
                | key ["not"] "in" "(" value ("," value)* [","] ")"
                | key "contains" string
    key        := identifier (letters, digits, _ . -; not starting with a digit)
                | `backtick-quoted` (any text; reserved words must be quoted)
    value      := string | int | float | "true" | "false" | "uuid" "(" string ")"

Strings are single- or double-quoted with the escapes ``\\\\ \\' \\" \\` \\n \\r \\t \\xHH
\\uHHHH \\UHHHHHHHH``. Numbers are ``-?digits``, optionally with ``.digits`` and an exponent.
A hand-written recursive-descent parser: the text is only ever read as data, never evaluated.
Errors are :class:`InvalidFilterError` with the 1-based column and the offending token.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ragloom.core.errors import InvalidFilterError
from ragloom.core.filter_syntax import BARE_KEY, RESERVED_WORDS, read_quoted
from ragloom.core.filters import (
    ContainsString,
    Filter,
    FilterValue,
    IsEqualTo,
    IsGreaterThan,
    IsGreaterThanOrEqualTo,
    IsIn,
    IsLessThan,
    IsLessThanOrEqualTo,
    IsNotEqualTo,
    IsNotIn,
    Not,
    and_,
    or_,
)

__all__ = ["parse_filter"]

_MAX_DEPTH = 100
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_NUMBER_TAIL = re.compile(r"[\w.]")
_OPERATOR = re.compile(r"==|!=|>=|<=|>|<")
_HINTS = {
    "=": " (use '==' for equality)",
    "!": " (use 'not' or '!=')",
    "&": " (use 'and')",
    "|": " (use 'or')",
}
_COMPARISONS: dict[str, Callable[[str, FilterValue], Filter]] = {
    "==": IsEqualTo,
    "!=": IsNotEqualTo,
    ">": IsGreaterThan,
    ">=": IsGreaterThanOrEqualTo,
    "<": IsLessThan,
    "<=": IsLessThanOrEqualTo,
}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # name, key, string, int, float, op, punct or end
    text: str  # as written in the source
    value: FilterValue | None  # a literal's value or a quoted key; None for other tokens
    column: int  # 1-based


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = _skip_space(text, 0)
    while pos < len(text):
        char = text[pos]
        column = pos + 1
        if char in "\"'`":
            value, end = read_quoted(text, pos)
            tokens.append(_Token("key" if char == "`" else "string", text[pos:end], value, column))
        elif number := _NUMBER.match(text, pos):
            end = number.end()
            if _NUMBER_TAIL.match(text, end):
                raise InvalidFilterError(
                    f"malformed number starting at column {column} "
                    "(quote keys that start with a digit with backticks)"
                )
            literal = number.group()
            try:
                parsed: int | float = (
                    float(literal) if number.group(1, 2) != (None, None) else int(literal)
                )
            except ValueError:  # more digits than int() converts
                raise InvalidFilterError(f"number too long at column {column}") from None
            tokens.append(
                _Token("float" if type(parsed) is float else "int", literal, parsed, column)
            )
        elif name := BARE_KEY.match(text, pos):
            end = name.end()
            tokens.append(_Token("name", name.group(), None, column))
        elif operator := _OPERATOR.match(text, pos):
            end = operator.end()
            tokens.append(_Token("op", operator.group(), None, column))
        elif char in "(),":
            end = pos + 1
            tokens.append(_Token("punct", char, None, column))
        else:
            hint = _HINTS.get(char, "")
            raise InvalidFilterError(f"unexpected character {char!r} at column {column}{hint}")
        pos = _skip_space(text, end)
    tokens.append(_Token("end", "", None, len(text) + 1))
    return tokens


class _Parser:
    """Recursive descent over the token list; one method per grammar rule."""

    def __init__(self, text: str) -> None:
        self._tokens = _tokenize(text)
        self._pos = 0
        self._depth = 0

    def parse(self) -> Filter:
        result = self._or()
        if self._peek().kind != "end":
            raise self._error("'and', 'or' or end of input")
        return result

    def _or(self) -> Filter:
        operands = [self._and()]
        while self._at_word("or"):
            self._advance()
            operands.append(self._and())
        return or_(*operands)

    def _and(self) -> Filter:
        operands = [self._not()]
        while self._at_word("and"):
            self._advance()
            operands.append(self._not())
        return and_(*operands)

    def _not(self) -> Filter:
        token = self._peek()
        if self._at_word("not") or self._at_punct("("):
            self._depth += 1
            if self._depth > _MAX_DEPTH:
                raise InvalidFilterError(
                    f"filter nested deeper than {_MAX_DEPTH} levels at column {token.column}"
                )
            self._advance()
            if token.kind == "name":
                result: Filter = Not(self._not())
            else:
                result = self._or()
                self._expect_punct(")")
            self._depth -= 1
            return result
        return self._comparison()

    def _comparison(self) -> Filter:
        token = self._peek()
        if token.kind == "key":
            key = str(token.value)
        elif token.kind == "name" and token.text.lower() not in RESERVED_WORDS:
            key = token.text
        else:
            hint = "; quote keys that are keywords with backticks" if token.kind == "name" else ""
            raise self._error("a metadata key", hint)
        self._advance()
        operator = self._peek()
        if operator.kind == "op":
            self._advance()
            value = self._value()
            return self._build(token, lambda: _COMPARISONS[operator.text](key, value))
        if self._at_word("in"):
            self._advance()
            values = self._values()
            return self._build(token, lambda: IsIn(key, values))
        if self._at_word("not"):
            self._advance()
            if not self._at_word("in"):
                raise self._error("'in'")
            self._advance()
            values = self._values()
            return self._build(token, lambda: IsNotIn(key, values))
        if self._at_word("contains"):
            self._advance()
            if self._peek().kind != "string":
                raise self._error("a quoted string")
            text = str(self._advance().value)
            return self._build(token, lambda: ContainsString(key, text))
        raise self._error("an operator (==, !=, >, >=, <, <=, in, not in, contains)")

    def _values(self) -> tuple[FilterValue, ...]:
        self._expect_punct("(")
        values = [self._value()]
        while self._at_punct(","):
            self._advance()
            if self._at_punct(")"):
                break
            values.append(self._value())
        self._expect_punct(")")
        return tuple(values)

    def _value(self) -> FilterValue:
        token = self._peek()
        if token.kind in ("string", "int", "float") and token.value is not None:
            self._advance()
            return token.value
        word = token.text.lower() if token.kind == "name" else ""
        if word in ("true", "false"):
            self._advance()
            return word == "true"
        if word == "uuid":
            self._advance()
            self._expect_punct("(")
            if self._peek().kind != "string":
                raise self._error("a quoted UUID")
            text = self._advance()
            self._expect_punct(")")
            try:
                return uuid.UUID(str(text.value))
            except ValueError:
                raise InvalidFilterError(
                    f"invalid UUID {text.value!r} at column {text.column}"
                ) from None
        hint = "; quote text values" if token.kind == "name" else ""
        raise self._error("a value", hint)

    def _build(self, key_token: _Token, make: Callable[[], Filter]) -> Filter:
        """``make()``, with the key's column added to a filter construction error."""
        try:
            return make()
        except InvalidFilterError as error:
            raise InvalidFilterError(f"{error} (at column {key_token.column})") from error

    def _peek(self) -> _Token:
        return self._tokens[self._pos]

    def _advance(self) -> _Token:
        token = self._tokens[self._pos]
        if token.kind != "end":
            self._pos += 1
        return token

    def _at_word(self, word: str) -> bool:
        token = self._peek()
        return token.kind == "name" and token.text.lower() == word

    def _at_punct(self, char: str) -> bool:
        token = self._peek()
        return token.kind == "punct" and token.text == char

    def _expect_punct(self, char: str) -> None:
        if not self._at_punct(char):
            raise self._error(f"'{char}'")
        self._advance()

    def _error(self, expected: str, hint: str = "") -> InvalidFilterError:
        token = self._peek()
        after = f" after {self._tokens[self._pos - 1].text!r}" if self._pos else ""
        found = "end of input" if token.kind == "end" else repr(token.text)
        return InvalidFilterError(
            f"expected {expected}{after} at column {token.column}, found {found}{hint}"
        )


def parse_filter(text: str) -> Filter:
    """The :class:`Filter` written in ``text``, e.g. ``'year >= 2020 and lang in ("en", "de")'``.

    Raises :class:`InvalidFilterError` naming the column and the offending token.
    """
    if not isinstance(text, str):
        raise InvalidFilterError(f"parse_filter takes a str, got {type(text).__name__}")
    return _Parser(text).parse()
