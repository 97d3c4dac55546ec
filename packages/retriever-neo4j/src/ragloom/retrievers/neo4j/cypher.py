"""Cypher from a model's reply: extraction, a tokenizer, the read-only check, the row bound.

The check works on tokens (:func:`tokenize`), not on text: string literals, comments and
backtick-quoted names are single tokens, so ``'DELETE me'`` or `` `SET` `` is never a
clause, while ``CALL `apoc`.`load`.`json`()`` still joins into the procedure name
``apoc.load.json`` that the allowlist refuses. A word is a clause keyword only where a
clause can stand: not after ``.`` (``n.set``), ``:`` (a label) or ``AS`` (an alias), and
not before ``:`` or ``.`` (a map key ``{set: 1}``, a variable ``set.x``). It is the first
of two guards: the query then runs in a READ transaction that is rolled back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragloom.core.errors import RetrievalError

__all__ = [
    "MAX_RANGE",
    "READ_PROCEDURES",
    "Token",
    "UnsafeCypherError",
    "bound_rows",
    "check_range_sizes",
    "check_read_only",
    "extract_cypher",
    "tokenize",
]

_FENCE = re.compile(r"```[ \t]*(?:cypher|neo4j|sql)?[ \t]*\n?(.*?)```", re.IGNORECASE | re.DOTALL)
_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>//[^\n]*|/\*.*?\*/)
    |(?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    |(?P<name>`(?:[^`]|``)*`)
    |(?P<param>\$(?:[^\W\d]\w*|\d+|`(?:[^`]|``)*`))
    |(?P<number>0[xX][0-9a-fA-F]+|0o[0-7]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
    |(?P<word>[^\W\d]\w*)
    |(?P<punct>\.\.|->|<-|<>|<=|>=|=~|\+=|[^\s\w'"`])
    """,
    re.DOTALL | re.VERBOSE,
)
_WRITE_CLAUSES = frozenset(
    {"CREATE", "MERGE", "DELETE", "DETACH", "SET", "REMOVE", "DROP", "FOREACH", "INSERT"}
)
_ADMIN_COMMANDS = frozenset(
    {"SHOW", "GRANT", "DENY", "REVOKE", "ALTER", "START", "STOP", "TERMINATE", "USING"}
    | {"ENABLE", "RENAME"}
)
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
# Namespaced functions that only compute (temporal, spatial, vector); apoc.*, db.* and
# other user-defined functions are refused: some run Cypher or reach files and URLs.
_READ_FUNCTION_NAMESPACES = frozenset(
    {"date", "datetime", "localdatetime", "localtime", "time", "duration", "point", "vector"}
)
# Procedures that only read: schema introspection and index searches.
READ_PROCEDURES = frozenset(
    {
        "db.labels",
        "db.relationshiptypes",
        "db.propertykeys",
        "db.schema.visualization",
        "db.schema.nodetypeproperties",
        "db.schema.reltypeproperties",
        "db.index.fulltext.querynodes",
        "db.index.fulltext.queryrelationships",
        "db.index.vector.querynodes",
        "db.index.vector.queryrelationships",
        "db.idx.fulltext.querynodes",
        "db.idx.vector.querynodes",
    }
)
MAX_RANGE = 1_000_000
"""Default bound on the elements of a literal ``range()`` (a server may build it whole)."""


class UnsafeCypherError(RetrievalError):
    """The model's Cypher would write, load files, run more than one statement, or is unbounded."""


@dataclass(frozen=True, slots=True)
class Token:
    """One Cypher token: ``kind`` (word, name, string, param, number, punct), its value
    (a backtick name unquoted) and its ``start``/``end`` offsets in the query."""

    kind: str
    value: str
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        """True for a bare (not backticked) word equal to one of ``words``, any case."""
        return self.kind == "word" and self.value.upper() in words


def extract_cypher(reply: str) -> str:
    """The Cypher in ``reply``: the first fenced block if any, else the whole text, trimmed.

    A trailing ``;`` is dropped; an empty result raises :class:`RetrievalError`.
    """
    fenced = _FENCE.search(reply)
    text = (fenced.group(1) if fenced else reply).strip()
    if text.lower().startswith("cypher\n"):
        text = text[len("cypher\n") :]
    text = text.strip().removesuffix(";").strip()
    if not text:
        raise RetrievalError(f"the chat model's reply holds no Cypher query: {reply!r}")
    return text


def tokenize(cypher: str) -> list[Token]:
    """The tokens of ``cypher``, without spaces and comments.

    Raises :class:`UnsafeCypherError` on an unterminated string, backtick name or comment.
    """
    tokens: list[Token] = []
    position = 0
    while position < len(cypher):
        match = _TOKEN.match(cypher, position)
        if match is None or match.lastgroup is None:  # a lone quote, backtick or "/*"
            raise UnsafeCypherError(
                f"unterminated string, name or comment at offset {position} in Cypher: {cypher!r}"
            )
        kind, text = match.lastgroup, match.group()
        if kind == "punct" and cypher.startswith("/*", position):
            raise UnsafeCypherError(f"unterminated comment in Cypher: {cypher!r}")
        if kind == "name":
            text = text[1:-1].replace("``", "`")
        if kind not in ("space", "comment"):
            tokens.append(Token(kind, text, match.start(), match.end()))
        position = match.end()
    return tokens


def _keyword_at(tokens: list[Token], i: int) -> str | None:
    """The upper-case keyword at ``tokens[i]``, or None where the word is a property name,
    label, alias, map key or variable (``n.set``, ``:Set``, ``AS set``, ``{set: 1}``)."""
    token = tokens[i]
    if token.kind != "word":
        return None
    before = tokens[i - 1] if i else None
    after = tokens[i + 1] if i + 1 < len(tokens) else None
    if before is not None and (before.value in (".", ":") or before.is_word("AS")):
        return None
    if after is not None and after.kind == "punct" and after.value in (":", "."):
        return None
    return token.value.upper()


def _dotted_name(tokens: list[Token], i: int) -> tuple[str, int]:
    """The dotted name starting at ``tokens[i]`` (bare or backticked parts, any spacing)
    and the index after it."""
    parts = [tokens[i].value]
    i += 1
    while (
        i + 1 < len(tokens)
        and tokens[i].value == "."
        and tokens[i].kind == "punct"
        and tokens[i + 1].kind in ("word", "name")
    ):
        parts.append(tokens[i + 1].value)
        i += 2
    return ".".join(parts), i


def check_read_only(cypher: str, *, read_procedures: frozenset[str] = READ_PROCEDURES) -> None:
    """Raise :class:`UnsafeCypherError` unless ``cypher`` is one read-only statement.

    Refused: write clauses (CREATE, MERGE, DELETE, DETACH DELETE, SET, REMOVE, DROP,
    FOREACH, INSERT), ``LOAD CSV``, ``CALL { ... }`` subqueries and ``IN TRANSACTIONS``,
    ``USING PERIODIC COMMIT``, ``USE``, procedures outside ``read_procedures`` (compared
    case-insensitively, backticked parts joined: ``apoc.*``, ``dbms.*``, ...), namespaced
    functions outside the temporal/spatial/vector ones, admin commands, and more than one
    statement.
    """
    tokens = tokenize(cypher)
    allowed = frozenset(p.lower() for p in read_procedures)
    for i, token in enumerate(tokens):
        if token.kind == "punct" and token.value == ";":
            raise UnsafeCypherError(f"more than one Cypher statement is not allowed: {cypher!r}")
        keyword = _keyword_at(tokens, i)
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if keyword in _WRITE_CLAUSES:
            raise UnsafeCypherError(f"{keyword} is not allowed (read-only queries): {cypher!r}")
        if (keyword in _ADMIN_COMMANDS and i == 0) or keyword in ("USE", "PERIODIC"):
            raise UnsafeCypherError(f"{keyword} commands are not allowed: {cypher!r}")
        if keyword == "LOAD" and following is not None and following.is_word("CSV"):
            raise UnsafeCypherError(f"LOAD CSV is not allowed: {cypher!r}")
        if keyword == "TRANSACTIONS" and i and tokens[i - 1].is_word("IN"):
            raise UnsafeCypherError(f"IN TRANSACTIONS is not allowed: {cypher!r}")
        if keyword == "CALL":
            if following is None or following.value in ("{", "("):
                raise UnsafeCypherError(f"CALL subqueries are not allowed: {cypher!r}")
            if following.kind not in ("word", "name"):
                raise UnsafeCypherError(f"CALL without a procedure name: {cypher!r}")
            procedure, _ = _dotted_name(tokens, i + 1)
            if procedure.lower() not in allowed:
                raise UnsafeCypherError(
                    f"procedure {procedure} is not allowed (not a known read procedure): {cypher!r}"
                )
        elif token.kind in ("word", "name") and (i == 0 or tokens[i - 1].value != "."):
            name, end = _dotted_name(tokens, i)
            called = end < len(tokens) and tokens[end].value == "("
            if called and "." in name and (i == 0 or not tokens[i - 1].is_word("CALL")):
                namespace = name.split(".", 1)[0].lower()
                if namespace not in _READ_FUNCTION_NAMESPACES:
                    raise UnsafeCypherError(f"function {name} is not allowed: {cypher!r}")


def check_range_sizes(cypher: str, *, max_elements: int = MAX_RANGE) -> None:
    """Raise :class:`UnsafeCypherError` for a ``range(a, b[, step])`` of integer literals
    with more than ``max_elements`` elements: servers build such lists whole (FalkorDB
    allocates 16 bytes per element before any LIMIT applies)."""
    tokens = tokenize(cypher)
    for i, token in enumerate(tokens):
        if not token.is_word("RANGE") or i + 1 >= len(tokens) or tokens[i + 1].value != "(":
            continue
        bounds: list[int] = []
        j = i + 2
        while j < len(tokens):
            sign = -1 if tokens[j].value == "-" else 1
            j += tokens[j].value in ("-", "+")
            if j >= len(tokens) or tokens[j].kind != "number" or not tokens[j].value.isdigit():
                break
            bounds.append(sign * int(tokens[j].value))
            j += 1
            if j >= len(tokens) or tokens[j].value != ",":
                break
            j += 1
        if len(bounds) < 2 or j >= len(tokens) or tokens[j].value != ")":
            continue  # computed bounds: only the deadline and the server bound them
        step = bounds[2] if len(bounds) > 2 and bounds[2] else 1
        size = max(0, (bounds[1] - bounds[0]) // step + 1)
        if size > max_elements:
            raise UnsafeCypherError(
                f"range() of {size} elements exceeds the limit of {max_elements}: {cypher!r}"
            )


def bound_rows(cypher: str, limit: int) -> str:
    """``cypher`` with every top-level ``RETURN`` limited to ``limit`` rows, so the server
    itself stops there: ``LIMIT <limit>`` appended, or a larger literal ``LIMIT`` lowered.

    (``CALL { <query> } RETURN * LIMIT n`` would be the general form, but FalkorDB fails
    on a subquery that starts with ``WITH`` and Neo4j wants every item aliased in it.)
    Each ``UNION`` branch gets the limit. A query without a top-level ``RETURN`` (a
    standalone procedure call) is returned as is. A ``LIMIT`` that is not an integer
    literal raises :class:`UnsafeCypherError`.
    """
    tokens = tokenize(cypher)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement)
    depth = 0
    in_return = False
    limit_at: int | None = None
    for i, token in enumerate([*tokens, None]):
        if token is not None and token.kind == "punct" and token.value in _OPEN:
            depth += 1
            continue
        if token is not None and token.kind == "punct" and token.value in _CLOSE:
            depth -= 1
            continue
        if depth or (token is None and not in_return):
            continue
        keyword = None if token is None else _keyword_at(tokens, i)
        if in_return and (token is None or keyword == "UNION"):
            end = tokens[i - 1].end
            if limit_at is None:
                edits.append((end, end, f" LIMIT {int(limit)}"))
            else:
                given = tokens[limit_at + 1 : i]
                if len(given) != 1 or not given[0].value.isdigit():
                    raise UnsafeCypherError(f"LIMIT must be an integer literal: {cypher!r}")
                if int(given[0].value) > limit:
                    edits.append((given[0].start, given[0].end, str(int(limit))))
            in_return, limit_at = False, None
        elif keyword == "RETURN":
            in_return = True
        elif in_return and keyword == "LIMIT":
            limit_at = i
    text = cypher
    for begin, end, replacement in sorted(edits, reverse=True):
        text = text[:begin] + replacement + text[end:]
    return text
