"""Retrievers as tools: the model decides when and what to retrieve.

A :class:`RetrieverTool` offers a :class:`~ragloom.core.retrievers.base.ContentRetriever`
to a chat model as a tool taking one argument, ``query``. :class:`ToolLoop` runs the
rounds of one answer: it sends the conversation with the tools, runs the tools the model
asks for, feeds their results back, and stops after ``max_rounds`` rounds (the last call
offers the tools with ``tool_choice="none"``). Everything the model writes is untrusted:
arguments are checked against the tool's JSON schema, calls per round and result sizes
are bounded, and a bad call is answered with an error text the model can correct, never
run.

Results are numbered across the whole answer (``[1] ...``, ``[2] ...``) so the model can
cite them; :attr:`ToolLoop.sources` keeps the retrieved contents in that order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragloom.core.chat.messages import ChatMessage, ToolExecutionResultMessage
from ragloom.core.chat.model import ChatResponse
from ragloom.core.chat.tools import ToolExecutionRequest, ToolSpecification
from ragloom.core.content import Content
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.query import Query, QueryMetadata
from ragloom.core.retrievers.base import ContentRetriever

__all__ = [
    "DEFAULT_RETRIEVER_TOOL_DESCRIPTION",
    "RetrieverTool",
    "ToolLoop",
]

DEFAULT_RETRIEVER_TOOL_DESCRIPTION = (
    "Search the documents for passages relevant to a query. Call it whenever the answer "
    "needs facts from the documents; results are numbered [n], cite them as [n]."
)
"""What a :class:`RetrieverTool` tells the model when no description is given."""


class RetrieverTool:
    """A retriever offered to the model as the tool ``name`` with a ``query`` argument.

    ``max_query_chars`` bounds the query the model may write (the schema says so and it
    is enforced); ``max_result_chars`` bounds the text one call returns to the model:
    contents are given whole while they fit, the one that overflows is cut, the rest
    dropped (and not counted as sources).
    """

    def __init__(
        self,
        retriever: ContentRetriever,
        *,
        name: str = "search",
        description: str = DEFAULT_RETRIEVER_TOOL_DESCRIPTION,
        max_query_chars: int = 500,
        max_result_chars: int = 8_000,
    ) -> None:
        if not callable(getattr(retriever, "retrieve", None)):
            raise InvalidArgumentTypeError(
                f"retriever must be a ContentRetriever, got {type(retriever).__name__}"
            )
        for label, bound in (
            ("max_query_chars", max_query_chars),
            ("max_result_chars", max_result_chars),
        ):
            if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
                raise InvalidArgumentError(f"{label} must be a positive int, got {bound!r}")
        self.retriever = retriever
        self.max_result_chars = max_result_chars
        self.specification = ToolSpecification(
            name,
            description,
            {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What to search for, in the words of the documents.",
                        "minLength": 1,
                        "maxLength": max_query_chars,
                    }
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        )

    @property
    def name(self) -> str:
        """The tool's name, as the model sees it."""
        return self.specification.name

    def __repr__(self) -> str:
        return f"RetrieverTool(name={self.name!r}, retriever={self.retriever!r})"

    def retrieve(self, request: ToolExecutionRequest, metadata: QueryMetadata) -> list[Content]:
        """The contents for ``request``'s query (checked against the schema first)."""
        arguments = self.specification.parse_arguments(request.arguments)
        query: str = arguments["query"]
        if not query.strip():
            raise InvalidArgumentError(f"tool {self.name!r} arguments.query is blank")
        return self.retriever.retrieve(Query(query, metadata))


class ToolLoop:
    """The tool rounds of one answer: the messages to send, then :meth:`after` each reply.

    ``messages`` is the conversation so far (ending with the user's message). Call the
    model with :attr:`messages` and :meth:`options`, then :meth:`after` with its
    response: it returns the contents retrieved in that round when another call is
    needed, ``None`` when the response is the answer. Not thread-safe (one per answer).
    """

    def __init__(
        self,
        tools: Sequence[RetrieverTool],
        messages: Sequence[ChatMessage],
        metadata: QueryMetadata,
        *,
        max_rounds: int,
        max_calls_per_round: int,
    ) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self.messages: list[ChatMessage] = list(messages)
        self._metadata = metadata
        self._max_rounds = max_rounds
        self._max_calls = max_calls_per_round
        self.rounds = 0
        self.sources: list[Content] = []
        self._numbers: dict[tuple[str, str | None], int] = {}

    def options(self) -> dict[str, Any]:
        """The model options of the next call: the tools, and ``tool_choice="none"`` for
        the last call once the rounds are spent."""
        specifications = [tool.specification for tool in self._tools.values()]
        if self.rounds >= self._max_rounds:
            return {"tools": specifications, "tool_choice": "none"}
        return {"tools": specifications}

    def after(self, response: ChatResponse) -> list[Content] | None:
        """Run the tools ``response`` asks for; the new contents, or ``None`` when done."""
        requests = response.tool_execution_requests
        if not requests or self.rounds >= self._max_rounds:
            return None
        self.rounds += 1
        self.messages.append(response.ai_message)
        found: list[Content] = []
        for index, request in enumerate(requests):
            if index >= self._max_calls:
                text = f"error: not run; at most {self._max_calls} tool calls are run per round"
            else:
                text = self._run(request, found)
            self.messages.append(ToolExecutionResultMessage.from_request(request, text))
        return found

    def _run(self, request: ToolExecutionRequest, found: list[Content]) -> str:
        tool = self._tools.get(request.name)
        if tool is None:
            return (
                f"error: there is no tool {request.name[:64]!r}; the tools are "
                f"{', '.join(sorted(self._tools))}"
            )
        try:
            contents = tool.retrieve(request, self._metadata)
        except InvalidArgumentError as exc:
            return f"error: {exc}"
        if not contents:
            return "no results"
        parts: list[str] = []
        room = tool.max_result_chars
        for content in contents:
            entry = f"[{self._number(content, found)}] {content.text}"
            if len(entry) + 2 > room:
                if room > 40:  # a useful piece of this content fits
                    parts.append(entry[: room - 4] + " ...")
                else:
                    self._forget_if_new(content, found)
                break
            parts.append(entry)
            room -= len(entry) + 2
        return "\n\n".join(parts)

    def _number(self, content: Content, found: list[Content]) -> int:
        """The citation number of ``content``: the one it already has, else the next."""
        key = (content.text, content.embedding_id)
        number = self._numbers.get(key)
        if number is None:
            self.sources.append(content)
            found.append(content)
            number = self._numbers[key] = len(self.sources)
        return number

    def _forget_if_new(self, content: Content, found: list[Content]) -> None:
        """Take back the number just given to ``content`` when none of it was sent."""
        if found and found[-1] is content and self.sources[-1] is content:
            found.pop()
            self.sources.pop()
            del self._numbers[(content.text, content.embedding_id)]
