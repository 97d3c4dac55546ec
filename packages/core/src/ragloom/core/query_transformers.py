"""Query transformers: turn the user's query into one or more queries that retrieve better.

:class:`DefaultQueryTransformer` passes the query through; :class:`CompressingQueryTransformer`
rewrites a follow-up question into a self-contained one using the conversation;
:class:`ExpandingQueryTransformer` asks for several rewordings. The model-backed ones have
async variants (``atransform``) that use the chat model's ``achat``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ragloom.core.chat.messages import AiMessage, ChatMessage, UserMessage
from ragloom.core.chat.model import ChatModel
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.prompt_template import PromptTemplate
from ragloom.core.query import Query

__all__ = [
    "QueryTransformer",
    "DefaultQueryTransformer",
    "COMPRESSING_PROMPT_TEMPLATE",
    "CompressingQueryTransformer",
    "format_conversation",
    "EXPANDING_PROMPT_TEMPLATE",
    "ExpandingQueryTransformer",
]


@runtime_checkable
class QueryTransformer(Protocol):
    """Transforms a :class:`Query` into the queries to retrieve with (at least one, usually)."""

    def transform(self, query: Query) -> list[Query]:
        """The queries to run instead of ``query``."""
        ...


class DefaultQueryTransformer(QueryTransformer):
    """Passes the query through unchanged (the default of the retrieval augmentor)."""

    def transform(self, query: Query) -> list[Query]:
        return [query]

    async def atransform(self, query: Query) -> list[Query]:
        """Same as :meth:`transform`."""
        return [query]


COMPRESSING_PROMPT_TEMPLATE = PromptTemplate(
    "Read and understand the conversation between the User and the AI. "
    "Then, analyze the new query from the User. "
    "Identify all relevant details, terms, and context from both the conversation "
    "and the new query. Reformulate this query into a clear, concise, and self-contained "
    "format suitable for information retrieval.\n"
    "\n"
    "Conversation:\n"
    "{chat_memory}\n"
    "\n"
    "User query: {query}\n"
    "\n"
    "It is very important that you provide only reformulated query and nothing else! "
    "Do not prepend a query with anything!"
)


class CompressingQueryTransformer(QueryTransformer):
    """Rewrites a follow-up ("Where did he live?") into a standalone query using the history.

    The conversation comes from ``query.metadata.chat_memory`` (user and AI messages;
    system messages are left out). With no history the query is passed through and the
    model is not called. ``prompt_template`` must contain ``{chat_memory}`` and
    ``{query}``. A blank answer keeps the original query.
    """

    def __init__(
        self, chat_model: ChatModel, *, prompt_template: str | PromptTemplate | None = None
    ) -> None:
        self.chat_model = chat_model
        self.prompt_template = PromptTemplate.of(
            prompt_template or COMPRESSING_PROMPT_TEMPLATE
        ).require({"chat_memory", "query"}, used_by="CompressingQueryTransformer")

    def transform(self, query: Query) -> list[Query]:
        prompt = self._prompt(query)
        if prompt is None:
            return [query]
        return [self._parse(self.chat_model.chat([prompt]).text, query)]

    async def atransform(self, query: Query) -> list[Query]:
        """:meth:`transform` with the model's ``achat``."""
        prompt = self._prompt(query)
        if prompt is None:
            return [query]
        return [self._parse((await self.chat_model.achat([prompt])).text, query)]

    def _prompt(self, query: Query) -> UserMessage | None:
        conversation = format_conversation(query.metadata.chat_memory)
        if not conversation:
            return None
        return UserMessage(self.prompt_template.render(chat_memory=conversation, query=query.text))

    @staticmethod
    def _parse(answer: str, query: Query) -> Query:
        text = answer.strip()
        return Query(text, query.metadata) if text else query


def format_conversation(messages: Sequence[ChatMessage]) -> str:
    """User and AI messages as ``User: ...`` / ``AI: ...`` lines (system messages left out)."""
    lines = []
    for message in messages:
        if isinstance(message, UserMessage):
            lines.append(f"User: {message.text}")
        elif isinstance(message, AiMessage):
            lines.append(f"AI: {message.text}")
    return "\n".join(lines)


EXPANDING_PROMPT_TEMPLATE = PromptTemplate(
    "Generate {n} different versions of a provided user query. "
    "Each version should be worded differently, using synonyms or alternative sentence "
    "structures, but they should all retain the original meaning. "
    "These versions will be used to retrieve relevant documents. "
    "It is very important to provide each query version on a separate line, "
    "without enumerations, hyphens, or any additional formatting!\n"
    "User query: {query}"
)

# A list marker a model may add despite the instructions: "1.", "2)", "-", "*", "•".
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")


class ExpandingQueryTransformer(QueryTransformer):
    """Asks the model for ``n`` (3) rewordings of the query, one per line of its answer.

    Blank lines, repeated lines and list markers ("1.", "-") are dropped; every new query
    keeps the original metadata. ``prompt_template`` must contain ``{query}`` and may use
    ``{n}``. An answer without any usable line keeps the original query.
    """

    def __init__(
        self,
        chat_model: ChatModel,
        *,
        prompt_template: str | PromptTemplate | None = None,
        n: int = 3,
    ) -> None:
        if type(n) is not int or n < 1:
            raise InvalidArgumentError(f"n must be a positive int, got {n!r}")
        self.chat_model = chat_model
        self.n = n
        self.prompt_template = PromptTemplate.of(prompt_template or EXPANDING_PROMPT_TEMPLATE)
        self.prompt_template.require({"query"}, used_by="ExpandingQueryTransformer")

    def transform(self, query: Query) -> list[Query]:
        return self._parse(self.chat_model.chat([self._prompt(query)]).text, query)

    async def atransform(self, query: Query) -> list[Query]:
        """:meth:`transform` with the model's ``achat``."""
        return self._parse((await self.chat_model.achat([self._prompt(query)])).text, query)

    def _prompt(self, query: Query) -> UserMessage:
        return UserMessage(self.prompt_template.render(query=query.text, n=self.n))

    @staticmethod
    def _parse(answer: str, query: Query) -> list[Query]:
        texts = [_LIST_MARKER.sub("", line).strip() for line in answer.splitlines()]
        unique = dict.fromkeys(text for text in texts if text)
        return [Query(text, query.metadata) for text in unique] or [query]
