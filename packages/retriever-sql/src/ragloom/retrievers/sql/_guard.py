"""The statement check: exactly one SELECT (or WITH ... SELECT), parsed by sqlglot.

This is the first line of defence and gives the model a clear reason; the database's
read-only transaction (see :mod:`ragloom.retrievers.sql.executor`) is the one that holds.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import expressions as exp
from sqlglot.errors import SqlglotError

from ragloom.core.errors import RetrievalError

__all__ = ["SqlSyntaxError", "UnsafeSqlError", "check_select", "extract_sql"]

# Nodes that write, change the session or leave the query language, wherever they appear
# (a DELETE hidden in a CTE, SELECT ... INTO, SELECT ... FOR UPDATE).
_FORBIDDEN: tuple[type[exp.Expression], ...] = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.TruncateTable,
    exp.Copy,
    exp.Command,
    exp.Set,
    exp.Pragma,
    exp.Into,
    exp.Lock,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Attach,
    exp.Detach,
    exp.Grant,
    exp.Revoke,
)
# Functions that read nothing yet act beyond the query: session-level locks that outlive
# it (held by a pooled connection), session settings, signals to other sessions, server
# files, notifications and connections to other servers.
_FORBIDDEN_FUNCTIONS = re.compile(
    r"pg_(try_)?advisory_.*|set_config|pg_cancel_backend|pg_terminate_backend|pg_notify"
    r"|pg_reload_conf|pg_(read|read_binary|stat)_file|pg_ls_.*|lo_.*|dblink.*|load_extension"
)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)```", re.DOTALL)


class UnsafeSqlError(RetrievalError):
    """The model's SQL is not a single read-only query; it is refused, never executed."""


class SqlSyntaxError(RetrievalError):
    """The model's SQL does not parse in the database's dialect (fed back to the model)."""


def extract_sql(reply: str) -> str:
    """The SQL in a model's reply: the first fenced block if any, else the whole text.

    A ```sql fence is preferred to an unlabelled one; trailing semicolons are dropped.
    """
    blocks = _FENCE.findall(reply)
    labelled = [body for label, body in blocks if label.lower() in ("sql", "postgresql", "sqlite")]
    chosen = labelled[0] if labelled else blocks[0][1] if blocks else reply
    return chosen.strip().rstrip(";").strip()


def _name(node: exp.Expr) -> str:
    key = node.key.upper()
    return {"INTO": "SELECT ... INTO", "LOCK": "SELECT ... FOR UPDATE/SHARE"}.get(key, key)


def check_select(sql: str, dialect: str | None) -> exp.Expression:
    """Parse ``sql`` in ``dialect`` (a sqlglot dialect name) and accept one read-only query.

    Raises :class:`SqlSyntaxError` when it does not parse and :class:`UnsafeSqlError` for
    anything but exactly one SELECT / set operation / WITH ... SELECT free of writes.
    """
    if not sql.strip():
        raise SqlSyntaxError("the model returned no SQL")
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as exc:
        raise SqlSyntaxError(f"SQL does not parse as {dialect or 'SQL'}: {exc}") from exc
    if len(statements) != 1:
        raise UnsafeSqlError(
            f"exactly one SQL statement is allowed, got {len(statements)}: {sql!r}"
        )
    (tree,) = statements
    if not isinstance(tree, exp.Select | exp.SetOperation):
        raise UnsafeSqlError(
            f"only SELECT queries (optionally WITH ...) are allowed, got {_name(tree)}: {sql!r}"
        )
    forbidden = tree.find(*_FORBIDDEN)
    if forbidden is not None:
        raise UnsafeSqlError(f"{_name(forbidden)} is not allowed in a read-only query: {sql!r}")
    for func in tree.find_all(exp.Func):
        name = func.name if isinstance(func, exp.Anonymous) else func.sql_name()
        if _FORBIDDEN_FUNCTIONS.fullmatch(name.lower()):
            raise UnsafeSqlError(
                f"function {name}() is not allowed in a read-only query (it takes locks, "
                f"changes the session, or reaches beyond the database): {sql!r}"
            )
    return tree
