"""Neo4jContentRetriever: a question -> Cypher (by a chat model) -> rows -> Contents.

The model gets the graph schema, optional examples and the question; its Cypher is
extracted (code fences tolerated), checked read-only (:func:`check_read_only`), then run
in a READ transaction (``execute_read``: READ access mode and READ routing, which Neo4j
enforces) with a transaction timeout and a row limit. When the check or the server
rejects the query, the error goes back to the model, for at most ``max_retries`` more
attempts. Each row becomes one :class:`Content` (text ``column: value`` lines, scalar
columns as segment metadata, the Cypher under ``cypher`` in the content metadata).
"""

from __future__ import annotations

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
from ragloom.retrievers.neo4j.cypher import READ_PROCEDURES, check_read_only, extract_cypher
from ragloom.retrievers.neo4j.schema import GraphSchema, introspect_schema

__all__ = ["CYPHER", "DEFAULT_PROMPT_TEMPLATE", "Neo4jContentRetriever"]

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
    are ``(question, cypher)`` pairs shown to the model. ``max_rows`` bounds the rows
    read per query, ``timeout`` (seconds) the transaction on the server; ``max_retries``
    is how many corrected queries are asked for after a failure.
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
    ) -> None:
        if not isinstance(driver, neo4j.Driver):
            raise InvalidArgumentTypeError(f"driver must be a neo4j.Driver, got {driver!r}")
        for name, value, low in (("max_rows", max_rows, 1), ("max_retries", max_retries, 0)):
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
        """One Content per row of the model's Cypher, in the query's order."""
        messages: list[ChatMessage] = [UserMessage(self.prompt(query.text))]
        error: RetrievalError | None = None
        for _ in range(1 + self.max_retries):
            reply = self.chat_model.chat(messages).text
            try:
                cypher = extract_cypher(reply)
                check_read_only(cypher, read_procedures=self.read_procedures)
                rows = self._run(cypher)
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

    def _run(self, cypher: str) -> list[dict[str, Any]]:
        limit = self.max_rows

        @neo4j.unit_of_work(timeout=self.timeout)
        def read(tx: neo4j.ManagedTransaction) -> list[dict[str, Any]]:
            return [record.data() for record in tx.run(cypher).fetch(limit)]

        try:
            with self.driver.session(
                database=self.database, default_access_mode=neo4j.READ_ACCESS
            ) as session:
                return session.execute_read(read)
        except Neo4jError as exc:  # the server refused the query: the model may fix it
            raise RetrievalError(f"{exc.code}: {exc.message}") from exc
        except DriverError as exc:
            raise _ServerError(f"Neo4j driver error running {cypher!r}: {exc}") from exc


class _ServerError(RetrievalError):
    """The server is unreachable or the session broke: not for the model to fix."""
