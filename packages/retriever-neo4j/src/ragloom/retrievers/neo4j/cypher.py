"""Cypher from a model's reply: extraction and the read-only check.

The check is token-level: comments, string literals and backtick-quoted names are
removed first, so a write keyword inside a string (``'DELETE me'``) or a name
(`` `SET` ``) is not mistaken for a clause, and a clause hidden in a comment cannot slip
through. It is the first of two guards: the query then runs in a READ transaction, which
a Neo4j server enforces by itself.
"""

from __future__ import annotations

import itertools
import re

from ragloom.core.errors import RetrievalError

__all__ = ["UnsafeCypherError", "check_read_only", "extract_cypher"]

_FENCE = re.compile(r"```[ \t]*(?:cypher|neo4j|sql)?[ \t]*\n?(.*?)```", re.IGNORECASE | re.DOTALL)
# Line and block comments, then the three quoted forms ('...', "...", `...`) with escapes.
_LEXEMES = re.compile(
    r"//[^\n]*|/\*.*?\*/|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`",
    re.DOTALL,
)
_WRITE_CLAUSES = ("CREATE", "MERGE", "DELETE", "DETACH", "SET", "REMOVE", "DROP", "FOREACH")
_ADMIN_COMMANDS = frozenset(
    {"SHOW", "GRANT", "DENY", "REVOKE", "ALTER", "START", "STOP", "TERMINATE", "USE", "USING"}
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CALL = re.compile(r"\bCALL\s*(\{|[A-Za-z_][A-Za-z0-9_.]*)", re.IGNORECASE)
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


class UnsafeCypherError(RetrievalError):
    """The model's Cypher would write, load files, or run more than one statement."""


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


def check_read_only(cypher: str, *, read_procedures: frozenset[str] = READ_PROCEDURES) -> None:
    """Raise :class:`UnsafeCypherError` unless ``cypher`` is one read-only statement.

    Rejected: write clauses (CREATE, MERGE, DELETE, DETACH DELETE, SET, REMOVE, DROP,
    FOREACH), ``LOAD CSV``, ``CALL { ... }`` subqueries (``IN TRANSACTIONS`` writes),
    procedures outside ``read_procedures`` (``apoc.*``, ``dbms.*``, ...), schema and
    admin commands, and more than one statement.
    """
    code = _LEXEMES.sub(" ", cypher)
    if "'" in code or '"' in code or "`" in code or "/*" in code:
        raise UnsafeCypherError(f"unterminated string, name or comment in Cypher: {cypher!r}")
    if ";" in code:
        raise UnsafeCypherError(f"more than one Cypher statement is not allowed: {cypher!r}")
    words = [word.upper() for word in _WORD.findall(code)]
    for clause in _WRITE_CLAUSES:
        if clause in words:
            raise UnsafeCypherError(f"{clause} is not allowed (read-only queries): {cypher!r}")
    if words and words[0] in _ADMIN_COMMANDS:
        raise UnsafeCypherError(f"{words[0]} commands are not allowed: {cypher!r}")
    for first, second in itertools.pairwise(words):
        if (first, second) == ("LOAD", "CSV"):
            raise UnsafeCypherError(f"LOAD CSV is not allowed: {cypher!r}")
    for match in _CALL.finditer(code):
        target = match.group(1)
        if target == "{":
            raise UnsafeCypherError(f"CALL subqueries are not allowed: {cypher!r}")
        if target.lower() not in read_procedures:
            raise UnsafeCypherError(
                f"procedure {target} is not allowed (not a known read procedure): {cypher!r}"
            )
