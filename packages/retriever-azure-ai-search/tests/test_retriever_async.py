"""AzureAiSearchContentRetriever.aretrieve: the sync request on an ``aio.SearchClient`` of the
running loop (equal answers in every mode), within ``timeout`` (also the sync ``retrieve``),
one client per loop closed by ``aclose``; a given sync client runs in a worker thread."""

from __future__ import annotations

import asyncio
import gc
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from azure.core.credentials import AzureKeyCredential
from azure.search.documents import SearchClient

from ragloom.core import aio
from ragloom.core.content import Content
from ragloom.core.errors import RetrievalError
from ragloom.core.filters import MetadataFilterBuilder as key
from ragloom.core.query import Query
from ragloom.retrievers.azure_ai_search import AzureAiSearchContentRetriever, SearchMode
from ragloom.retrievers.azure_ai_search.testing import SearchWireServer
from ragloom.testkit import FakeEmbeddingModel
from ragloom.testkit.wire import delay, slowly

MODEL = FakeEmbeddingModel(dimension=16)
TEXTS = ["bread dough rises", "sourdough bread starter", "chess openings", "bread of O'Brien"]
Retrievers = Callable[..., AzureAiSearchContentRetriever]
STALL = 30.0  # seconds a stalled answer would take: far beyond every timeout here


@pytest.fixture
def server() -> Iterator[SearchWireServer]:
    documents = [
        {
            "id": str(i),
            "content": text,
            "topic": "chess" if "chess" in text else "baking",
            "content_vector": np.asarray(MODEL.embed(text).embedding).tolist(),
        }
        for i, text in enumerate(TEXTS)
    ]
    server = SearchWireServer("docs", documents)
    with server.running():
        yield server


@pytest.fixture
def make(server: SearchWireServer, topic_retriever: Retrievers) -> Retrievers:
    """Builds a retriever of the server (hybrid unless ``mode`` says otherwise)."""

    def build(
        mode: SearchMode = SearchMode.HYBRID, **options: Any
    ) -> AzureAiSearchContentRetriever:
        assert server.wire is not None
        return topic_retriever(server, server.wire.url, mode, MODEL, max_results=3, **options)

    return build


def _view(contents: list[Content]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return [(c.text_segment.text, c.text_segment.metadata, dict(c.metadata)) for c in contents]


async def _closing(retriever: AzureAiSearchContentRetriever, query: Query) -> list[Content]:
    try:
        return await aio.aretrieve(retriever, query)
    finally:
        await retriever.aclose()


@pytest.mark.parametrize("mode", list(SearchMode))
def test_aretrieve_equals_retrieve(make: Retrievers, mode: SearchMode) -> None:
    query = Query("bread")
    expected = _view(make(mode).retrieve(query))
    assert expected  # the comparison is of something
    assert _view(asyncio.run(_closing(make(mode), query))) == expected
    filtered = make(mode, filter=key("topic").is_equal_to("chess"))
    chess = Query("chess bread")
    assert [c.text_segment.text for c in asyncio.run(_closing(filtered, chess))] == [
        "chess openings"
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "stall",
    [delay(STALL), slowly((200, {"value": [{"id": "x" * 2000}]}), chunk_size=16, interval=0.2)],
    ids=["late", "dribbled"],
)
def test_a_stalled_search_fails_within_the_timeout(
    make: Retrievers, server: SearchWireServer, mode: str, stall: Any
) -> None:
    retriever = make(timeout=1.0)
    assert server.wire is not None
    server.wire.script(stall)

    async def stalled_then_answered() -> list[Content]:
        try:
            with pytest.raises(RetrievalError, match=r"index 'docs' refused the hybrid search"):
                await retriever.aretrieve(Query("bread"))
            return await retriever.aretrieve(Query("bread"))
        finally:
            await retriever.aclose()

    start = time.monotonic()
    if mode == "sync":
        with pytest.raises(RetrievalError, match=r"index 'docs' refused the hybrid search"):
            retriever.retrieve(Query("bread"))
        assert retriever.retrieve(Query("bread"))  # the next search is answered
        retriever.close()
    else:
        assert asyncio.run(stalled_then_answered())
    assert time.monotonic() - start < STALL / 3  # the timeout ended it, not the stall


def test_an_answer_past_max_response_bytes_fails(
    make: Retrievers,
) -> None:
    retriever = make(max_response_bytes=200)
    with pytest.raises(RetrievalError, match=r"max_bytes=200"):
        asyncio.run(_closing(retriever, Query("bread")))


def test_each_loop_gets_its_own_client_and_aclose_closes_it(
    make: Retrievers,
) -> None:
    retriever = make()

    async def twice() -> Any:
        await retriever.aretrieve(Query("bread"))
        first = retriever._async_client
        await retriever.aretrieve(Query("dough"))
        assert retriever._async_client is first  # reused within the loop
        await retriever.aclose()
        assert retriever._async_client is None
        return first

    gc.collect()  # what earlier tests left is not counted
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        first, second = asyncio.run(twice()), asyncio.run(twice())
        gc.collect()
    assert first is not None
    assert first is not second
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_given_sync_client_runs_in_a_worker_thread(
    make: Retrievers, server: SearchWireServer
) -> None:
    assert server.wire is not None
    client = SearchClient(server.wire.url, "docs", AzureKeyCredential(server.api_key))
    retriever = make(client=client)
    expected = _view(retriever.retrieve(Query("bread")))
    assert _view(asyncio.run(_closing(retriever, Query("bread")))) == expected
    assert retriever._async_client is None
    client.close()  # aclose left the given client open
    retriever.close()
