"""DefaultQueryRouter and LanguageModelQueryRouter with each fallback strategy."""

from __future__ import annotations

import asyncio
import logging

import pytest

from ragloom.core import (
    ChatModelError,
    Content,
    DefaultQueryRouter,
    FallbackStrategy,
    LanguageModelQueryRouter,
    PromptTemplateError,
    Query,
    QueryRouter,
    RetrievalError,
)
from ragloom.testkit import ScriptedChatModel


class NamedRetriever:
    """A retriever over one fixed text; enough to see where a query was routed."""

    def __init__(self, name: str) -> None:
        self.name = name

    def retrieve(self, query: Query) -> list[Content]:
        return [Content.from_text(f"{self.name} about {query.text}")]


BOOKS = NamedRetriever("books")
WEATHER = NamedRetriever("weather")
RECIPES = NamedRetriever("recipes")
DESCRIPTIONS = {
    BOOKS: "A library catalogue: books, authors, ISBNs.",
    WEATHER: "Weather forecasts\n and   observations.",
    RECIPES: "Cooking recipes.",
}


def router(answer: object, strategy: FallbackStrategy | None = None) -> LanguageModelQueryRouter:
    model = ScriptedChatModel([answer])  # type: ignore[list-item]
    if strategy is None:
        return LanguageModelQueryRouter(model, DESCRIPTIONS)
    return LanguageModelQueryRouter(model, DESCRIPTIONS, fallback_strategy=strategy)


def test_default_router_routes_to_every_retriever() -> None:
    default = DefaultQueryRouter(BOOKS, WEATHER)
    assert isinstance(default, QueryRouter)
    assert default.route(Query("anything")) == [BOOKS, WEATHER]
    assert asyncio.run(default.aroute(Query("anything"))) == [BOOKS, WEATHER]


def test_default_router_rejects_non_retrievers() -> None:
    with pytest.raises(ValueError, match="at least one"):
        DefaultQueryRouter()
    with pytest.raises(TypeError, match="must be a ContentRetriever.*got list"):
        DefaultQueryRouter([BOOKS])  # type: ignore[arg-type]


def test_prompt_lists_numbered_normalized_descriptions_and_the_query() -> None:
    model = ScriptedChatModel(["2"])
    LanguageModelQueryRouter(model, DESCRIPTIONS).route(Query("Will it rain tomorrow?"))
    assert model.prompts[0] == (
        "Based on the user query, determine the most suitable data source(s) to retrieve "
        "relevant information from the following options:\n"
        "1: A library catalogue: books, authors, ISBNs.\n"
        "2: Weather forecasts and observations.\n"
        "3: Cooking recipes.\n"
        "It is very important that your answer consists of either a single number or "
        "multiple numbers separated by commas and nothing else!\n"
        "User query: Will it rain tomorrow?"
    )


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("2", [WEATHER]),
        ("3, 1", [RECIPES, BOOKS]),
        (" 1,3 \n", [BOOKS, RECIPES]),
        ("1 2", [BOOKS, WEATHER]),
        ("2, 2, 1", [WEATHER, BOOKS]),
    ],
)
def test_numbers_in_the_answer_pick_the_retrievers(
    answer: str, expected: list[NamedRetriever]
) -> None:
    assert router(answer).route(Query("q")) == expected


UNPARSABLE = ["", "books", "1 and 3", "4", "0", "2.", "-1", "1, x"]


@pytest.mark.parametrize("answer", UNPARSABLE)
def test_unparsable_answer_does_not_route_by_default(
    answer: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="ragloom.core.query_routers"):
        assert router(answer).route(Query("q")) == []
    assert "falling back to DO_NOT_ROUTE" in caplog.text


@pytest.mark.parametrize("answer", UNPARSABLE)
def test_unparsable_answer_routes_to_all_with_route_to_all(answer: str) -> None:
    routed = router(answer, FallbackStrategy.ROUTE_TO_ALL).route(Query("q"))
    assert routed == [BOOKS, WEATHER, RECIPES]


@pytest.mark.parametrize("answer", UNPARSABLE)
def test_unparsable_answer_fails_with_fail(answer: str) -> None:
    with pytest.raises(RetrievalError, match="cannot route query 'q': cannot parse the model's"):
        router(answer, FallbackStrategy.FAIL).route(Query("q"))


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (FallbackStrategy.DO_NOT_ROUTE, []),
        (FallbackStrategy.ROUTE_TO_ALL, [BOOKS, WEATHER, RECIPES]),
    ],
)
def test_model_error_falls_back(strategy: FallbackStrategy, expected: list[NamedRetriever]) -> None:
    failing = router(ChatModelError("rate limited"), strategy)
    assert failing.route(Query("q")) == expected
    assert asyncio.run(router(ChatModelError("down"), strategy).aroute(Query("q"))) == expected


def test_model_error_with_fail_raises_retrieval_error_chained_to_the_cause() -> None:
    with pytest.raises(RetrievalError, match="the chat model failed: rate limited") as caught:
        router(ChatModelError("rate limited"), FallbackStrategy.FAIL).route(Query("q"))
    assert isinstance(caught.value.__cause__, ChatModelError)


def test_async_route_uses_achat() -> None:
    model = ScriptedChatModel(["1,2"])
    routed = asyncio.run(LanguageModelQueryRouter(model, DESCRIPTIONS).aroute(Query("q")))
    assert routed == [BOOKS, WEATHER]
    assert len(model.requests) == 1


def test_descriptions_may_be_pairs_for_unhashable_retrievers() -> None:
    pairs = [(BOOKS, "books"), (WEATHER, "weather")]
    assert LanguageModelQueryRouter(ScriptedChatModel(["2"]), pairs).route(Query("q")) == [WEATHER]


def test_bad_configuration_is_rejected() -> None:
    model = ScriptedChatModel()
    with pytest.raises(ValueError, match="at least one retriever"):
        LanguageModelQueryRouter(model, {})
    with pytest.raises(ValueError, match="description must be a non-empty str"):
        LanguageModelQueryRouter(model, {BOOKS: "  "})
    with pytest.raises(TypeError, match="fallback_strategy must be a FallbackStrategy"):
        LanguageModelQueryRouter(model, DESCRIPTIONS, fallback_strategy="fail")  # type: ignore[arg-type]
    with pytest.raises(PromptTemplateError, match=r"must contain \{options\}"):
        LanguageModelQueryRouter(model, DESCRIPTIONS, prompt_template="Route {query}")
