"""Neo4jContentRetriever: a question -> Cypher (by a chat model) -> rows -> Contents.

The model gets the graph schema, optional examples and the question; its Cypher is
extracted (code fences tolerated), checked read-only (:func:`check_read_only`), then run
wrapped in ``CALL { ... } RETURN * LIMIT n`` (the server stops at the row limit) in a READ
transaction (READ access mode, which Neo4j enforces) with a transaction timeout, rolled
back, under a client deadline whose watchdog closes the connection. When the check or the server
rejects the query, the error goes back to the model, for at most ``max_retries`` more
attempts. Each row becomes one :class:`Content` (text ``column: value`` lines, scalar
columns as segment metadata, the Cypher under ``cypher`` in the content metadata).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import neo4j
from neo4j.exceptions import DriverError, Neo4jError
from ragloom.core.chat.messages import AiMessage, ChatMessage, UserMessage
from ragloom.core.chat.model import ChatModel
from ragloom.core.content import Content
from ragloom.core.document import TextSegment
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError, RetrievalError
from ragloom.core.prompt_template import PromptTemplate
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.retrievers.neo4j.cypher import (
    MAX_RANGE,
    READ_PROCEDURES,
    bound_rows,
    check_range_sizes,
    check_read_only,
    extract_cypher,
)
from ragloom.retrievers.neo4j.schema import GraphSchema, introspect_schema

__all__ = ["CYPHER", "DEFAULT_PROMPT_TEMPLATE", "CypherDeadlineError", "Neo4jContentRetriever"]

_log = logging.getLogger(__name__)

CYPHER = "cypher"
"""Key of Content.metadata holding the Cypher query that produced the row."""

DEFAULT_PROMPT_TEMPLATE = PromptTemplate(
    "You write one read-only Cypher query answering the question from a Neo4j graph.\n"
    "Use only the labels, relationship types and properties of this schema:\n"
    "{schema}\n"
    "{examples}"
    "Never write to the graph (no CREATE, MERGE, DELETE, SET, REMOVE, LOAD CSV).\n"
    "Answer with the Cypher query only, in a ```cypher code block.\n"
    "Question: {question}"
)
RETRY_TEMPLATE = PromptTemplate(
    "That query failed: {error}\nWrite a corrected read-only Cypher query, "
    "in a ```cypher code block."
)


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float | bool)


def _row_content(row: Mapping[str, Any], cypher: str) -> Content:
    lines = [f"{key}: {value}" for key, value in row.items()]
    metadata: dict[str, Any] = {}
    for key, value in row.items():
        if _scalar(value):
            metadata[key] = value
        elif isinstance(value, Mapping):  # a node or relationship, as its properties
            metadata.update({f"{key}.{k}": v for k, v in value.items() if _scalar(v)})
    return Content(TextSegment("\n".join(lines), metadata), {CYPHER: cypher})


class Neo4jContentRetriever(ContentRetriever):
    """Answers queries from a Neo4j graph through Cypher written by ``chat_model``.

    ``driver`` is a ``neo4j.Driver`` the caller owns (and closes). ``schema`` is
    introspected on first use when not given (:func:`introspect_schema`); ``examples``
    are ``(question, cypher)`` pairs shown to the model. ``timeout`` (seconds) bounds the
    whole ``retrieve()`` call (a watchdog closes the query's connection when it passes)
    and each transaction on the server; ``max_rows`` the rows, applied by the server
    (:func:`bound_rows`); ``max_cell_chars`` each cell's text; ``max_result_bytes`` the
    text of all rows; ``max_range`` a literal ``range()``. ``max_retries`` is how many
    corrected queries are asked for after a failure.
    """

    def __init__(
        self,
        driver: neo4j.Driver,
        chat_model: ChatModel,
        *,
        database: str | None = None,
        schema: GraphSchema | str | None = None,
        examples: Sequence[tuple[str, str]] = (),
        max_rows: int = 50,
        timeout: float = 10.0,
        max_retries: int = 2,
        prompt_template: str | PromptTemplate | None = None,
        read_procedures: frozenset[str] = READ_PROCEDURES,
        max_cell_chars: int = 10_000,
        max_result_bytes: int = 1_000_000,
        max_range: int = MAX_RANGE,
    ) -> None:
        if not isinstance(driver, neo4j.Driver):
            raise InvalidArgumentTypeError(f"driver must be a neo4j.Driver, got {driver!r}")
        for name, value, low in (
            ("max_rows", max_rows, 1),
            ("max_retries", max_retries, 0),
            ("max_cell_chars", max_cell_chars, 1),
            ("max_result_bytes", max_result_bytes, 1),
            ("max_range", max_range, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvalidArgumentError(f"{name} must be an int >= {low}, got {value!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidArgumentError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        self.driver = driver
        self.chat_model = chat_model
        self.database = database
        self._schema = schema
        self.examples = [(str(q), str(c)) for q, c in examples]
        self.max_rows = max_rows
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.max_cell_chars = max_cell_chars
        self.max_result_bytes = max_result_bytes
        self.max_range = max_range
        self.read_procedures = frozenset(p.lower() for p in read_procedures)
        self.prompt_template = PromptTemplate.of(
            prompt_template or DEFAULT_PROMPT_TEMPLATE
        ).require({"schema", "question"}, used_by="Neo4jContentRetriever")

    @property
    def schema(self) -> str:
        """The schema text given to the model (introspected once, on first use)."""
        if self._schema is None:
            try:
                self._schema = introspect_schema(self.driver, database=self.database)
            except (Neo4jError, DriverError) as exc:
                raise RetrievalError(f"cannot read the graph schema: {exc}") from exc
        return self._schema if isinstance(self._schema, str) else self._schema.describe()

    def refresh_schema(self) -> None:
        """Forget the introspected schema; the next query reads it again."""
        if not isinstance(self._schema, str):
            self._schema = None

    def prompt(self, question: str) -> str:
        """The first prompt sent to the model for ``question``."""
        examples = "".join(
            f"Example question: {q}\nExample Cypher:\n```cypher\n{c}\n```\n"
            for q, c in self.examples
        )
        return self.prompt_template.render(schema=self.schema, examples=examples, question=question)

    def retrieve(self, query: Query) -> list[Content]:
        """One Content per row of the model's Cypher, in the query's order, within ``timeout``."""
        deadline = time.monotonic() + self.timeout
        messages: list[ChatMessage] = [UserMessage(self.prompt(query.text))]
        error: RetrievalError | None = None
        for _ in range(1 + self.max_retries):
            reply = self.chat_model.chat(messages).text
            try:
                cypher = extract_cypher(reply)
                check_read_only(cypher, read_procedures=self.read_procedures)
                check_range_sizes(cypher, max_elements=self.max_range)
                rows = self._run(cypher, deadline)
            except _ServerError:
                raise
            except RetrievalError as exc:
                error = exc
                messages += [AiMessage(reply), UserMessage(RETRY_TEMPLATE.render(error=exc))]
                continue
            return [_row_content(row, cypher) for row in rows]
        raise RetrievalError(
            f"no working Cypher after {1 + self.max_retries} attempt(s) for "
            f"{query.text!r}; last error: {error}"
        ) from error

    def _run(self, cypher: str, deadline: float) -> list[dict[str, Any]]:
        """The rows of ``cypher``, run in a worker thread the caller stops waiting for at
        ``deadline``; the watchdog then closes the query's connection."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CypherDeadlineError(
                f"the {self.timeout} s deadline passed before Cypher query {cypher!r} could run"
            )
        call = _Call()
        worker = threading.Thread(
            target=self._work, args=(cypher, remaining, call), daemon=True, name="ragloom-neo4j"
        )
        worker.start()
        worker.join(remaining)
        if worker.is_alive():
            call.cut()
            warnings.warn(
                f"the Neo4j server did not end Cypher query {cypher!r} at its transaction "
                f"timeout: it ignores Bolt's tx_timeout (FalkorDB does) or never answered; "
                f"the client's {self.timeout} s deadline closed the connection",
                RuntimeWarning,
                stacklevel=3,
            )
            raise CypherDeadlineError(
                f"Cypher query {cypher!r} passed the {self.timeout} s deadline; "
                "its connection was closed"
            )
        if call.error is not None:
            raise call.error
        return call.rows

    def _work(self, cypher: str, remaining: float, call: _Call) -> None:
        """Run ``cypher`` row-bounded in a READ transaction that is rolled back; results
        and errors go to ``call`` (never raised: this runs in the worker thread)."""
        # The server's own timeout ends a little before the client's deadline, so a server
        # that honours it answers with its error before the watchdog fires.
        server_timeout = max(remaining - min(1.0, remaining / 5), 0.001)
        try:
            with self.driver.session(
                database=self.database,
                default_access_mode=neo4j.READ_ACCESS,
                connection_acquisition_timeout=remaining,
                fetch_size=min(self.max_rows, 100),
            ) as session:
                call.session = session
                with session.begin_transaction(timeout=server_timeout) as tx:
                    result = tx.run(bound_rows(cypher, self.max_rows))
                    call.rows = self._read(result, cypher)
                    tx.rollback()
        except Neo4jError as exc:  # the server refused the query: the model may fix it
            call.error = RetrievalError(f"{exc.code}: {exc.message} (query: {cypher!r})")
        except DriverError as exc:
            call.error = _ServerError(f"Neo4j driver error running {cypher!r}: {exc}")
        except Exception as exc:  # a malformed answer the driver cannot decode
            call.error = RetrievalError(
                f"the Neo4j driver could not read the answer to {cypher!r}: "
                f"{type(exc).__name__}: {exc}"
            )

    def _read(self, result: neo4j.Result, cypher: str) -> list[dict[str, Any]]:
        """At most ``max_rows`` rows, each cell cut to ``max_cell_chars``, until the rows
        hold ``max_result_bytes`` (later rows are dropped, with a warning logged)."""
        rows: list[dict[str, Any]] = []
        used = 0
        for record in result:
            row = {key: _cap(value, self.max_cell_chars) for key, value in record.data().items()}
            used += sum(len(key) + len(str(value)) for key, value in row.items())
            if (rows and used > self.max_result_bytes) or len(rows) == self.max_rows:
                _log.warning(
                    "Cypher query %r: rows after the first %d dropped (max_rows %d, "
                    "max_result_bytes %d)",
                    cypher,
                    len(rows),
                    self.max_rows,
                    self.max_result_bytes,
                )
                break
            rows.append(row)
        return rows


class _Call:
    """One query's state shared by the caller and its worker thread."""

    def __init__(self) -> None:
        self.session: neo4j.Session | None = None
        self.rows: list[dict[str, Any]] = []
        self.error: RetrievalError | None = None

    def cut(self) -> None:
        """Shut the session's socket down, so the worker's blocked read ends and the driver
        drops the connection. The driver has no public handle for this."""
        connection = getattr(self.session, "_connection", None)
        raw = getattr(getattr(connection, "socket", None), "_socket", None)
        if isinstance(raw, socket.socket):
            with contextlib.suppress(OSError):
                raw.shutdown(socket.SHUT_RDWR)


def _cap(value: Any, limit: int) -> Any:
    """``value``, or its text cut to ``limit`` characters with the original size noted
    when it is a string, list or map longer than that."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list | dict):
        text = str(value)
    else:
        return value
    if len(text) <= limit:
        return value
    return f"{text[:limit]}... [cut: {len(text)} characters]"


class _ServerError(RetrievalError):
    """The server is unreachable or the session broke: not for the model to fix."""


class CypherDeadlineError(_ServerError, TimeoutError):
    """A retrieve() call passed its ``timeout``; the query's connection was closed."""
