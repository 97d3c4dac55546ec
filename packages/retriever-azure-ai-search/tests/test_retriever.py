"""AzureAiSearchContentRetriever: filters evaluated by the server, and service errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from azure.core.credentials import AzureKeyCredential

from ragloom.core.errors import RetrievalError
from ragloom.core.filters import MetadataFilterBuilder as key
from ragloom.core.query import Query
from ragloom.retrievers.azure_ai_search import AzureAiSearchContentRetriever, SearchMode
from ragloom.retrievers.azure_ai_search.testing import SearchWireServer

DOCS = [
    {"id": "1", "content": "bread dough rises", "topic": "baking", "year": 2020},
    {"id": "2", "content": "sourdough bread starter", "topic": "baking", "year": 2024},
    {"id": "3", "content": "bread crumbs in chess club", "topic": "chess", "year": 2022},
    {"id": "4", "content": "bread of O'Brien", "topic": "O'Brien", "year": 2021},
]


@pytest.fixture
def endpoint() -> Iterator[str]:
    with SearchWireServer("docs", DOCS).running() as url:
        yield url


def _ids(endpoint: str, **kwargs: object) -> list[str]:
    retriever = AzureAiSearchContentRetriever(
        endpoint,
        "docs",
        AzureKeyCredential("test-key"),
        mode=SearchMode.FULL_TEXT,
        metadata_fields=["topic", "year"],
        max_results=10,
        **kwargs,  # type: ignore[arg-type]
    )
    try:
        contents = retriever.retrieve(Query("bread"))
    finally:
        retriever.close()
    return sorted(
        str(c.text_segment.metadata["topic"]) + str(c.text_segment.metadata["year"])
        for c in contents
    )


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (key("topic").is_equal_to("baking"), ["baking2020", "baking2024"]),
        (key("topic").is_not_in(["baking", "chess"]), ["O'Brien2021"]),
        (key("year").is_greater_than(2021) & ~key("topic").is_equal_to("chess"), ["baking2024"]),
        (
            key("topic").is_equal_to("O'Brien") | key("year").is_less_than(2021),
            ["O'Brien2021", "baking2020"],
        ),
        (key("topic").is_equal_to("x' or topic ne 'y"), []),  # an injection attempt
    ],
)
def test_filters_are_evaluated_by_the_server(
    endpoint: str, condition: object, expected: list[str]
) -> None:
    assert _ids(endpoint, filter=condition) == expected


def test_unknown_index_and_bad_key_raise_retrieval_error(endpoint: str) -> None:
    for index, credential in [("nope", "test-key"), ("docs", "wrong")]:
        retriever = AzureAiSearchContentRetriever(
            endpoint, index, AzureKeyCredential(credential), mode=SearchMode.FULL_TEXT
        )
        try:
            with pytest.raises(RetrievalError, match=f"index '{index}' refused"):
                retriever.retrieve(Query("bread"))
        finally:
            retriever.close()
