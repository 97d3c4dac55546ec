"""Query routers: decide which content retrievers a query goes to.

:class:`DefaultQueryRouter` sends every query to all its retrievers;
:class:`LanguageModelQueryRouter` asks a chat model which retrievers fit, from their
descriptions, and falls back as configured when the model fails or answers nonsense.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from ragloom.core.chat.messages import UserMessage
from ragloom.core.chat.model import ChatModel
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError, RetrievalError
from ragloom.core.prompt_template import PromptTemplate
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever

__all__ = [
    "QueryRouter",
    "DefaultQueryRouter",
    "FallbackStrategy",
    "ROUTING_PROMPT_TEMPLATE",
    "LanguageModelQueryRouter",
]

_log = logging.getLogger(__name__)

R = TypeVar("R", bound=ContentRetriever)


@runtime_checkable
class QueryRouter(Protocol):
    """Routes a :class:`Query` to the retrievers that should answer it (possibly none)."""

    def route(self, query: Query) -> list[ContentRetriever]:
        """The retrievers for ``query``."""
        ...


def _check_retriever(retriever: object) -> ContentRetriever:
    if not isinstance(retriever, ContentRetriever):
        raise InvalidArgumentTypeError(
            f"each retriever must be a ContentRetriever (an object with retrieve(query)), "
            f"got {type(retriever).__name__}"
        )
    return retriever


class DefaultQueryRouter(QueryRouter):
    """Routes every query to all ``content_retrievers`` (the augmentor's default)."""

    def __init__(self, *content_retrievers: ContentRetriever) -> None:
        if not content_retrievers:
            raise InvalidArgumentError(
                "content_retrievers is empty: DefaultQueryRouter needs at least one"
            )
        self.content_retrievers = [_check_retriever(r) for r in content_retrievers]

    def route(self, query: Query) -> list[ContentRetriever]:
        return list(self.content_retrievers)

    async def aroute(self, query: Query) -> list[ContentRetriever]:
        """Same as :meth:`route`."""
        return list(self.content_retrievers)


class FallbackStrategy(enum.Enum):
    """What :class:`LanguageModelQueryRouter` does when the model fails or cannot be parsed."""

    DO_NOT_ROUTE = "do_not_route"
    """Route to no retriever: the question is answered without retrieved content."""
    ROUTE_TO_ALL = "route_to_all"
    """Route to every retriever, as :class:`DefaultQueryRouter` would."""
    FAIL = "fail"
    """Raise :class:`~ragloom.core.errors.RetrievalError` (chained to the cause)."""


ROUTING_PROMPT_TEMPLATE = PromptTemplate(
    "Based on the user query, determine the most suitable data source(s) "
    "to retrieve relevant information from the following options:\n"
    "{options}\n"
    "It is very important that your answer consists of either a single number "
    "or multiple numbers separated by commas and nothing else!\n"
    "User query: {query}"
)

_SEPARATORS = re.compile(r"[\s,;]+")


class LanguageModelQueryRouter(QueryRouter):
    """Asks ``chat_model`` which retrievers suit the query, from their descriptions.

    The prompt lists the retrievers as numbered options (``1: description``); the answer
    must be those numbers, separated by commas or spaces. When the model raises, or the
    answer is not such a list of valid numbers, ``fallback_strategy`` decides
    (:attr:`FallbackStrategy.DO_NOT_ROUTE` by default, as in the spec).
    ``prompt_template`` must contain ``{options}`` and ``{query}``.
    """

    def __init__(
        self,
        chat_model: ChatModel,
        retriever_to_description: Mapping[R, str] | Sequence[tuple[R, str]],
        *,
        prompt_template: str | PromptTemplate | None = None,
        fallback_strategy: FallbackStrategy = FallbackStrategy.DO_NOT_ROUTE,
    ) -> None:
        pairs = list(
            retriever_to_description.items()
            if isinstance(retriever_to_description, Mapping)
            else retriever_to_description
        )
        if not pairs:
            raise InvalidArgumentError(
                "retriever_to_description is empty: need at least one retriever"
            )
        for _, description in pairs:
            if not isinstance(description, str) or not description.strip():
                raise InvalidArgumentError(
                    f"retriever description must be a non-empty str: {description!r}"
                )
        if not isinstance(fallback_strategy, FallbackStrategy):
            raise InvalidArgumentTypeError(
                f"fallback_strategy must be a FallbackStrategy: {fallback_strategy!r}"
            )
        self.chat_model = chat_model
        self.retrievers = [_check_retriever(retriever) for retriever, _ in pairs]
        self.descriptions = [" ".join(description.split()) for _, description in pairs]
        self.fallback_strategy = fallback_strategy
        self.prompt_template = PromptTemplate.of(
            prompt_template or ROUTING_PROMPT_TEMPLATE
        ).require({"options", "query"}, used_by="LanguageModelQueryRouter")

    def route(self, query: Query) -> list[ContentRetriever]:
        try:
            answer = self.chat_model.chat([self._prompt(query)]).text
        except Exception as exc:
            return self._fall_back(query, f"the chat model failed: {exc}", exc)
        return self._parse(answer, query)

    async def aroute(self, query: Query) -> list[ContentRetriever]:
        """:meth:`route` with the model's ``achat``."""
        try:
            answer = (await self.chat_model.achat([self._prompt(query)])).text
        except Exception as exc:
            return self._fall_back(query, f"the chat model failed: {exc}", exc)
        return self._parse(answer, query)

    def _prompt(self, query: Query) -> UserMessage:
        options = "\n".join(
            f"{number}: {description}" for number, description in enumerate(self.descriptions, 1)
        )
        return UserMessage(self.prompt_template.render(options=options, query=query.text))

    def _parse(self, answer: str, query: Query) -> list[ContentRetriever]:
        tokens = [token for token in _SEPARATORS.split(answer.strip()) if token]
        numbers = [int(token) for token in tokens if token.isdecimal()]
        valid = range(1, len(self.retrievers) + 1)
        if not tokens or len(numbers) != len(tokens) or any(n not in valid for n in numbers):
            return self._fall_back(
                query,
                f"cannot parse the model's answer {answer!r} as option numbers "
                f"between 1 and {len(self.retrievers)}",
                None,
            )
        return [self.retrievers[number - 1] for number in dict.fromkeys(numbers)]

    def _fall_back(
        self, query: Query, reason: str, cause: Exception | None
    ) -> list[ContentRetriever]:
        if self.fallback_strategy is FallbackStrategy.FAIL:
            raise RetrievalError(f"cannot route query {query.text!r}: {reason}") from cause
        _log.warning(
            "routing query %r: %s; falling back to %s",
            query.text,
            reason,
            self.fallback_strategy.name,
        )
        if self.fallback_strategy is FallbackStrategy.ROUTE_TO_ALL:
            return list(self.retrievers)
        return []
