"""SqlDatabaseContentRetriever: answers a query with rows of a SQL database (text-to-SQL).

The chat model gets the schema (tables, columns, types, keys, sample rows), the dialect
and the question, and answers with one SELECT. The SQL is taken from its reply (code
fences tolerated), checked by sqlglot (one read-only query, else :class:`UnsafeSqlError`),
then run by :class:`ReadOnlyExecutor`, where the database enforces read-only, a row limit
and a statement timeout. When the statement fails, the error goes back to the model, at
most ``max_retries`` times. The rows become one :class:`Content` (a compact table, the
SQL under ``sql`` in its metadata), or one Content per row with ``content_per_row``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from urllib.parse import quote

import sqlalchemy as sa

from ragloom.core.chat.messages import AiMessage, ChatMessage, SystemMessage, UserMessage
from ragloom.core.chat.model import ChatModel
from ragloom.core.content import Content
from ragloom.core.document import TextSegment
from ragloom.core.errors import ChatModelError, InvalidArgumentError, RetrievalError
from ragloom.core.metadata import Metadata
from ragloom.core.prompt_template import PromptTemplate
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.retrievers.sql._guard import SqlSyntaxError, check_select, extract_sql
from ragloom.retrievers.sql.executor import (
    QueryResult,
    ReadOnlyExecutor,
    SqlConnectionError,
    SqlExecutionError,
)
from ragloom.retrievers.sql.schema import describe_schema
from ragloom.retrievers.sql.table import cell_text, format_table, metadata_value

__all__ = ["DEFAULT_SYSTEM_PROMPT", "SqlDatabaseContentRetriever"]

# Keys of each Content's metadata.
SQL = "sql"
ROW_COUNT = "row_count"
TRUNCATED = "truncated"
CUT_CELLS = "cut_cells"

DEFAULT_SYSTEM_PROMPT = PromptTemplate(
    "You write one read-only SQL query for a {dialect} database to answer the user's "
    "question. Use only the tables and columns of the schema below. Write a single SELECT "
    "statement (WITH ... SELECT is fine); never modify data. Answer with the SQL only, in "
    "a ```sql code block.\n\nSchema:\n{schema}"
)
_RETRY_PROMPT = (
    "The database rejected that query: {error}\n"
    "Write a corrected query; answer with the SQL only, in a ```sql code block."
)


def _read_only_url(url: str) -> str:
    """A SQLite file URL opened with ``mode=ro`` (the file cannot be written at all)."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return url
    if parsed.database.startswith("file:"):
        return url
    query = {**parsed.query, "mode": "ro", "uri": "true"}
    return parsed.set(database="file:" + quote(parsed.database), query=query).render_as_string()


class SqlDatabaseContentRetriever(ContentRetriever):
    """Text-to-SQL over ``engine`` (an SQLAlchemy Engine or URL) through ``chat_model``.

    PostgreSQL (``postgresql+psycopg://``) and SQLite are supported; a SQLite file given
    as a URL is opened read-only (``mode=ro``). The schema text is built once, on first
    use (:meth:`refresh_schema` rebuilds it).
    """

    def __init__(
        self,
        engine: sa.Engine | str,
        chat_model: ChatModel,
        *,
        schema: str | None = None,
        include_tables: Sequence[str] | None = None,
        sample_rows: int = 3,
        max_rows: int = 100,
        timeout_seconds: float = 10.0,
        max_cell_chars: int = 65_536,
        max_result_bytes: int = 4 * 1024 * 1024,
        max_retries: int = 2,
        content_per_row: bool = False,
        allow_superuser: bool = False,
        system_prompt: PromptTemplate | str = DEFAULT_SYSTEM_PROMPT,
    ) -> None:
        if isinstance(engine, str):
            engine = sa.create_engine(_read_only_url(engine))
        if not isinstance(engine, sa.Engine):
            raise InvalidArgumentError(
                f"engine must be an sqlalchemy Engine or URL, got {type(engine).__name__}"
            )
        if not isinstance(chat_model, ChatModel):
            raise InvalidArgumentError(
                f"chat_model must be a ChatModel, got {type(chat_model).__name__}"
            )
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError(f"max_retries must be an int >= 0, got {max_retries!r}")
        system_prompt = PromptTemplate.of(system_prompt).require(
            ("dialect", "schema"), used_by="SqlDatabaseContentRetriever"
        )
        self.executor = ReadOnlyExecutor(
            engine,
            max_rows=max_rows,
            timeout_seconds=timeout_seconds,
            max_cell_chars=max_cell_chars,
            max_result_bytes=max_result_bytes,
            schema=schema,
            allow_superuser=allow_superuser,
        )
        if isinstance(sample_rows, bool) or not isinstance(sample_rows, int) or sample_rows < 0:
            raise InvalidArgumentError(f"sample_rows must be an int >= 0, got {sample_rows!r}")
        self.chat_model = chat_model
        self.schema = schema
        self.include_tables = None if include_tables is None else tuple(include_tables)
        self.sample_rows = sample_rows
        self.max_retries = max_retries
        self.content_per_row = content_per_row
        self.system_prompt = system_prompt
        self._schema_text: str | None = None
        self._lock = threading.Lock()

    @property
    def schema_text(self) -> str:
        """The schema as given to the model (built on first use)."""
        with self._lock:
            if self._schema_text is None:
                self._schema_text = describe_schema(
                    self.executor,
                    schema=self.schema,
                    include_tables=self.include_tables,
                    sample_rows=self.sample_rows,
                )
            return self._schema_text

    def refresh_schema(self) -> str:
        """Re-read the schema (after tables changed) and return its text."""
        with self._lock:
            self._schema_text = None
        return self.schema_text

    def retrieve(self, query: Query) -> list[Content]:
        """The rows answering ``query``: one table Content, or one per row; ``[]`` if none."""
        dialect = self.executor.dialect
        messages: list[ChatMessage] = [
            SystemMessage(self.system_prompt.render(dialect=dialect, schema=self.schema_text)),
            UserMessage(f"Question: {query.text}"),
        ]
        for attempt in range(self.max_retries + 1):
            try:
                reply = self.chat_model.chat(messages).text
            except ChatModelError as exc:
                raise RetrievalError(f"the chat model failed to write SQL: {exc}") from exc
            sql = extract_sql(reply)
            try:
                check_select(sql, dialect)  # UnsafeSqlError is raised, never retried
                result = self.executor.run(sql)
            except SqlConnectionError:
                raise  # no SQL can fix an unreachable database: not fed back
            except (SqlSyntaxError, SqlExecutionError) as exc:
                if attempt == self.max_retries:
                    raise SqlExecutionError(
                        f"no working SQL after {attempt + 1} attempts for {query.text!r}; "
                        f"last statement {sql!r} failed: {exc}"
                    ) from exc
                messages += [AiMessage(reply), UserMessage(_RETRY_PROMPT.format(error=exc))]
                continue
            return self._contents(sql, result)
        raise AssertionError("unreachable")  # pragma: no cover

    def _contents(self, sql: str, result: QueryResult) -> list[Content]:
        if not result.rows:
            return []
        info = {
            SQL: sql,
            ROW_COUNT: len(result.rows),
            TRUNCATED: result.truncated,
            CUT_CELLS: result.cut_cells,
        }
        if not self.content_per_row:
            return [Content(TextSegment(format_table(result)), info)]
        contents = []
        for row in result.rows:
            text = "\n".join(
                f"{c}: {cell_text(v)}" for c, v in zip(result.columns, row, strict=True)
            )
            values = {c: metadata_value(v) for c, v in zip(result.columns, row, strict=True)}
            metadata = Metadata({c: v for c, v in values.items() if v is not None})
            contents.append(Content(TextSegment(text, metadata), info))
        return contents
