"""Text-to-SQL ContentRetriever over a SQL database, read-only enforced by the database."""

from ragloom.retrievers.sql._guard import SqlSyntaxError, UnsafeSqlError, check_select, extract_sql
from ragloom.retrievers.sql.executor import (
    QueryResult,
    ReadOnlyExecutor,
    SqlConnectionError,
    SqlExecutionError,
)
from ragloom.retrievers.sql.retriever import DEFAULT_SYSTEM_PROMPT, SqlDatabaseContentRetriever
from ragloom.retrievers.sql.schema import describe_schema

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "QueryResult",
    "ReadOnlyExecutor",
    "SqlDatabaseContentRetriever",
    "SqlConnectionError",
    "SqlExecutionError",
    "SqlSyntaxError",
    "UnsafeSqlError",
    "check_select",
    "describe_schema",
    "extract_sql",
]
