"""Query transformers: turn the user's query into one or more queries that retrieve better.

:class:`DefaultQueryTransformer` passes the query through; :class:`CompressingQueryTransformer`
rewrites a follow-up question into a self-contained one using the conversation;
:class:`ExpandingQueryTransformer` asks for several rewordings; :class:`HydeQueryTransformer`
retrieves with a hypothetical answer; :class:`StepBackQueryTransformer` adds a more general
question; :class:`RewritingQueryTransformer` turns chatty wording into a search query. The
model-backed ones have async variants (``atransform``) that use the chat model's ``achat``.

The model's answer is untrusted text: control characters are removed, its length is
bounded, and an answer with nothing usable keeps the original query (never an error).
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
    "HYDE_PROMPT_TEMPLATE",
    "HydeQueryTransformer",
    "STEP_BACK_PROMPT_TEMPLATE",
    "StepBackQueryTransformer",
    "REWRITING_PROMPT_TEMPLATE",
    "RewritingQueryTransformer",
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
        """The model's answer as the query (hostile text: control characters removed, cut
        at a word boundary to 500 characters); the original query when it is blank."""
        text = _passage(answer, _MAX_QUERY_CHARS)
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


class _OneCallTransformer(QueryTransformer):
    """A transformer that asks its chat model once: ``_prompt`` builds the message,
    ``_parse`` turns the (hostile) answer into queries."""

    chat_model: ChatModel

    def transform(self, query: Query) -> list[Query]:
        return self._parse(self.chat_model.chat([self._prompt(query)]).text, query)

    async def atransform(self, query: Query) -> list[Query]:
        """:meth:`transform` with the model's ``achat``."""
        return self._parse((await self.chat_model.achat([self._prompt(query)])).text, query)

    def _prompt(self, query: Query) -> UserMessage:
        raise NotImplementedError

    def _parse(self, answer: str, query: Query) -> list[Query]:
        raise NotImplementedError


class ExpandingQueryTransformer(_OneCallTransformer):
    """Asks the model for ``n`` (3) rewordings of the query, one per line of its answer.

    Blank lines, repeated lines, list markers ("1.", "-") and lines past 500 characters are
    dropped, and at most ``n`` queries are kept (the answer is hostile text); every new query
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

    def _prompt(self, query: Query) -> UserMessage:
        return UserMessage(self.prompt_template.render(query=query.text, n=self.n))

    def _parse(self, answer: str, query: Query) -> list[Query]:
        """At most ``n`` queries (each retrieval costs: a hostile answer of a thousand lines
        must not become a thousand searches), control characters removed, lines longer than
        500 characters dropped."""
        texts = [
            _LIST_MARKER.sub("", line).strip() for line in _CONTROL.sub("", answer).splitlines()
        ]
        unique = dict.fromkeys(text for text in texts if text and len(text) <= _MAX_QUERY_CHARS)
        return [Query(text, query.metadata) for text in list(unique)[: self.n]] or [query]


# Control characters a hostile answer may carry (newline and tab are kept).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Quote pairs a model may wrap its answer in.
_QUOTES = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}
_MAX_QUERY_CHARS = 500
_MAX_PASSAGE_CHARS = 2000


def _check_max_chars(max_chars: int) -> int:
    if type(max_chars) is not int or max_chars < 1:
        raise InvalidArgumentError(f"max_chars must be a positive int, got {max_chars!r}")
    return max_chars


def _one_line_query(answer: str, max_chars: int) -> str | None:
    """The first non-blank line of ``answer`` without list marker or wrapping quotes;
    ``None`` when there is none or it is longer than ``max_chars`` (the model rambled)."""
    for line in _CONTROL.sub("", answer).splitlines():
        text = _LIST_MARKER.sub("", line).strip()
        while len(text) >= 2 and _QUOTES.get(text[0]) == text[-1] and text[0] not in text[1:-1]:
            text = text[1:-1].strip()
        if text:
            return text if len(text) <= max_chars else None
    return None


def _passage(answer: str, max_chars: int) -> str | None:
    """``answer`` without control characters, cut to ``max_chars`` at a word boundary;
    ``None`` when blank."""
    text = _CONTROL.sub("", answer).strip()
    if len(text) > max_chars:
        cut = text[:max_chars]
        space = cut.rfind(" ")
        text = (cut[:space] if space > max_chars // 2 else cut).rstrip()
    return text or None


HYDE_PROMPT_TEMPLATE = PromptTemplate(
    "Write a short passage that answers the question below, as it would appear in a "
    "document that contains the answer. If you are not sure, write a plausible passage "
    "anyway. Write only the passage, without any introduction.\n"
    "Question: {query}"
)


class HydeQueryTransformer(_OneCallTransformer):
    """HyDE (hypothetical document embeddings): retrieve with a passage the model writes
    as an answer, since an answer resembles the stored passages more than a question does.

    Returns ``[original, hypothetical]`` (``include_original``, the default) or just the
    hypothetical passage, cut to ``max_chars`` (2000) at a word boundary. A blank answer
    keeps the original query. ``prompt_template`` must contain ``{query}``.
    """

    def __init__(
        self,
        chat_model: ChatModel,
        *,
        prompt_template: str | PromptTemplate | None = None,
        include_original: bool = True,
        max_chars: int = _MAX_PASSAGE_CHARS,
    ) -> None:
        self.chat_model = chat_model
        self.include_original = include_original
        self.max_chars = _check_max_chars(max_chars)
        self.prompt_template = PromptTemplate.of(prompt_template or HYDE_PROMPT_TEMPLATE).require(
            {"query"}, used_by="HydeQueryTransformer"
        )

    def _prompt(self, query: Query) -> UserMessage:
        return UserMessage(self.prompt_template.render(query=query.text))

    def _parse(self, answer: str, query: Query) -> list[Query]:
        passage = _passage(answer, self.max_chars)
        if passage is None or passage == query.text:
            return [query]
        hypothetical = Query(passage, query.metadata)
        return [query, hypothetical] if self.include_original else [hypothetical]


STEP_BACK_PROMPT_TEMPLATE = PromptTemplate(
    "You are an expert at world knowledge. Your task is to step back and paraphrase a "
    "question to a more generic step-back question, which is easier to answer and "
    "retrieves the background needed to answer the original one.\n"
    "Example: 'Could the members of The Police perform lawful arrests?' steps back to "
    "'What can the members of The Police do?'\n"
    "It is very important that you provide only the step-back question and nothing else!\n"
    "Question: {query}"
)


class StepBackQueryTransformer(_OneCallTransformer):
    """Step-back prompting: also retrieve for a more general question, which finds the
    background (principles, definitions, overviews) a specific question may need.

    Returns ``[original, step_back]``: the step-back question is the first non-blank line
    of the answer (list markers and wrapping quotes removed). An answer that is blank,
    longer than ``max_chars`` (500) or equal to the query keeps only the original query.
    ``prompt_template`` must contain ``{query}``.
    """

    def __init__(
        self,
        chat_model: ChatModel,
        *,
        prompt_template: str | PromptTemplate | None = None,
        max_chars: int = _MAX_QUERY_CHARS,
    ) -> None:
        self.chat_model = chat_model
        self.max_chars = _check_max_chars(max_chars)
        self.prompt_template = PromptTemplate.of(
            prompt_template or STEP_BACK_PROMPT_TEMPLATE
        ).require({"query"}, used_by="StepBackQueryTransformer")

    def _prompt(self, query: Query) -> UserMessage:
        return UserMessage(self.prompt_template.render(query=query.text))

    def _parse(self, answer: str, query: Query) -> list[Query]:
        text = _one_line_query(answer, self.max_chars)
        if text is None or text == query.text:
            return [query]
        return [query, Query(text, query.metadata)]


REWRITING_PROMPT_TEMPLATE = PromptTemplate(
    "Rewrite the user's message below as a concise search query for a search engine "
    "over documents: keep the key terms, names and numbers, resolve references using the "
    "conversation, and drop greetings, politeness and filler words.\n"
    "\n"
    "Conversation:\n"
    "{chat_memory}\n"
    "\n"
    "User message: {query}\n"
    "\n"
    "It is very important that you provide only the search query and nothing else!"
)


class RewritingQueryTransformer(QueryTransformer):
    """Rewrite-for-retrieval: turns a chatty message ("hi, could you tell me how I'd go
    about cancelling my booking?") into a search query ("cancel booking").

    Unlike :class:`CompressingQueryTransformer` the model is asked even without history
    (the conversation then reads ``(none)``). The rewritten query is the first non-blank
    line of the answer; blank or longer than ``max_chars`` (500) keeps the original query.
    ``prompt_template`` must contain ``{query}`` and may use ``{chat_memory}``.
    """

    def __init__(
        self,
        chat_model: ChatModel,
        *,
        prompt_template: str | PromptTemplate | None = None,
        max_chars: int = _MAX_QUERY_CHARS,
    ) -> None:
        self.chat_model = chat_model
        self.max_chars = _check_max_chars(max_chars)
        self.prompt_template = PromptTemplate.of(
            prompt_template or REWRITING_PROMPT_TEMPLATE
        ).require({"query"}, used_by="RewritingQueryTransformer")

    def transform(self, query: Query) -> list[Query]:
        return [self._parse(self.chat_model.chat([self._prompt(query)]).text, query)]

    async def atransform(self, query: Query) -> list[Query]:
        """:meth:`transform` with the model's ``achat``."""
        return [self._parse((await self.chat_model.achat([self._prompt(query)])).text, query)]

    def _prompt(self, query: Query) -> UserMessage:
        conversation = format_conversation(query.metadata.chat_memory) or "(none)"
        return UserMessage(self.prompt_template.render(chat_memory=conversation, query=query.text))

    def _parse(self, answer: str, query: Query) -> Query:
        text = _one_line_query(answer, self.max_chars)
        return query if text is None else Query(text, query.metadata)
