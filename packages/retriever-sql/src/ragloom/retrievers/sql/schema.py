"""The schema text put in the prompt: tables, columns, types, keys and a few sample rows."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from ragloom.core.errors import InvalidArgumentError
from ragloom.retrievers.sql.executor import ReadOnlyExecutor, SqlExecutionError
from ragloom.retrievers.sql.table import format_table

__all__ = ["describe_schema"]


def _column(column: dict[str, object], primary: Sequence[str]) -> str:
    parts = [str(column["name"]), str(column["type"])]
    if column["name"] in primary and len(primary) == 1:
        parts.append("PRIMARY KEY")
    elif not column.get("nullable", True):
        parts.append("NOT NULL")
    return " ".join(parts)


def describe_schema(
    executor: ReadOnlyExecutor,
    *,
    schema: str | None = None,
    include_tables: Sequence[str] | None = None,
    sample_rows: int = 3,
) -> str:
    """Describe the tables (all of ``schema``, or ``include_tables``) as compact DDL-like text.

    ``sample_rows`` rows of each table (0 for none) are read through ``executor``, so under
    the same read-only rules as the model's queries.
    """
    if isinstance(sample_rows, bool) or not isinstance(sample_rows, int) or sample_rows < 0:
        raise InvalidArgumentError(f"sample_rows must be an int >= 0, got {sample_rows!r}")
    try:
        return _describe(executor, schema, include_tables, sample_rows)
    except sa.exc.SQLAlchemyError as exc:
        raise SqlExecutionError(
            f"cannot read the schema {schema or 'default'!r} of {executor.engine.url!r}: {exc}"
        ) from exc


def _describe(
    executor: ReadOnlyExecutor,
    schema: str | None,
    include_tables: Sequence[str] | None,
    sample_rows: int,
) -> str:
    with executor.connect() as conn:  # connecting is bounded by the executor's timeout
        inspector = sa.inspect(conn)
        return _describe_tables(executor, inspector, schema, include_tables, sample_rows)


def _describe_tables(
    executor: ReadOnlyExecutor,
    inspector: sa.Inspector,
    schema: str | None,
    include_tables: Sequence[str] | None,
    sample_rows: int,
) -> str:
    names = sorted(inspector.get_table_names(schema=schema))
    if include_tables is not None:
        missing = sorted(set(include_tables) - set(names))
        if missing:
            raise InvalidArgumentError(
                f"include_tables names tables not in schema {schema or 'default'!r}: {missing}"
            )
        names = [name for name in names if name in set(include_tables)]
    blocks = []
    for name in names:
        columns = inspector.get_columns(name, schema=schema)
        primary = inspector.get_pk_constraint(name, schema=schema).get("constrained_columns") or []
        lines = [f"TABLE {name} ("]
        lines += [f"  {_column(dict(c), primary)}," for c in columns]
        if len(primary) > 1:
            lines.append(f"  PRIMARY KEY ({', '.join(primary)}),")
        for fk in inspector.get_foreign_keys(name, schema=schema):
            lines.append(
                f"  FOREIGN KEY ({', '.join(fk['constrained_columns'])}) REFERENCES "
                f"{fk['referred_table']}({', '.join(fk['referred_columns'])}),"
            )
        lines[-1] = lines[-1].rstrip(",")
        lines.append(")")
        if sample_rows:
            table = sa.table(name, *(sa.column(str(c["name"])) for c in columns), schema=schema)
            query = sa.select(table).limit(sample_rows)
            sql = str(query.compile(executor.engine, compile_kwargs={"literal_binds": True}))
            try:
                result = executor.run(sql)
            except SqlExecutionError as exc:
                raise SqlExecutionError(
                    f"cannot read sample rows of table {name!r}: {exc}"
                ) from exc
            if result.rows:
                lines.append(f"-- {len(result.rows)} sample rows of {name}:")
                lines += [f"-- {line}" for line in format_table(result).splitlines()]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
