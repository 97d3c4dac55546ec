"""The store's bounds and its async clients beyond the testkit suite: a stalled or dribbled
answer fails within ``timeout`` (sync and async), an answer past ``max_response_bytes``
fails, each event loop gets its own ``aio.SearchClient`` and ``aclose`` closes it (no
socket left for the garbage collector), given sync clients run in worker threads.

The shared async contract (awaited == sync, concurrency, cancellation) is the testkit's
AsyncEmbeddingStoreSuite, in test_store_async_conformance.py.
"""

from __future__ import annotations

import asyncio
import gc
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from azure.core.credentials import AzureKeyCredential
from azure.search.documents import SearchClient

from ragloom.core.errors import EmbeddingStoreError, InvalidArgumentError
from ragloom.core.stores.base import EmbeddingSearchRequest
from ragloom.retrievers.azure_ai_search import AzureAiSearchEmbeddingStore
from ragloom.retrievers.azure_ai_search.testing import SearchWireServer
from ragloom.testkit.async_embedding_store import hits, rows
from ragloom.testkit.wire import WireServer, delay, slowly, status

DIMENSION = 8
STALL = 30.0  # seconds a stalled answer would take: far beyond every timeout here

Service = tuple[SearchWireServer, str]


@pytest.fixture
def service() -> Iterator[Service]:
    server = SearchWireServer()
    with server.running() as endpoint:
        yield server, endpoint


def _store(service: Service, **options: Any) -> AzureAiSearchEmbeddingStore:
    server, endpoint = service
    return AzureAiSearchEmbeddingStore(
        endpoint, "vectors", AzureKeyCredential(server.api_key), dimension=DIMENSION, **options
    )


def _wire(service: Service) -> WireServer:
    assert service[0].wire is not None
    return service[0].wire


def _filled(service: Service, **options: Any) -> AzureAiSearchEmbeddingStore:
    store = _store(service, **options)
    vectors, segments = rows(40, DIMENSION)
    store.add_all(vectors, segments)
    return store


def _request() -> EmbeddingSearchRequest:
    return EmbeddingSearchRequest(rows(1, DIMENSION, seed=3)[0][0], max_results=40)


def _search(store: AzureAiSearchEmbeddingStore, mode: str) -> Any:
    if mode == "sync":
        return store.search(_request())
    return asyncio.run(_closing(store, lambda: store.asearch(_request())))


async def _closing(store: AzureAiSearchEmbeddingStore, body: Callable[[], Awaitable[Any]]) -> Any:
    """``body()``, then the loop's async client closed (the sync one stays open)."""
    try:
        return await body()
    finally:
        await store._close_async()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "stall",
    [
        delay(STALL),
        slowly((200, {"value": [{"id": "x" * 2000}]}), chunk_size=16, interval=0.2),
        status(503, {"error": {"code": "", "message": "busy"}}, {"Retry-After": str(STALL * 100)}),
    ],
    ids=["late", "dribbled", "retry-after"],
)
def test_a_stalled_answer_fails_within_the_timeout(service: Service, mode: str, stall: Any) -> None:
    store = _filled(service, timeout=1.0)
    _wire(service).script(stall)
    start = time.monotonic()
    with pytest.raises(EmbeddingStoreError, match=r"index 'vectors': vector search failed"):
        _search(store, mode)
    assert time.monotonic() - start < STALL / 3  # the timeout ended it, not the stall
    assert hits(store.search(_request()))  # the next call is answered
    store.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_answer_past_max_response_bytes_fails(service: Service, mode: str) -> None:
    _filled(service).close()
    store = _store(service, max_response_bytes=4000)  # 40 documents are ~10 kB
    with pytest.raises(EmbeddingStoreError, match=r"vector search failed: .*max_bytes=4,000"):
        _search(store, mode)
    small = EmbeddingSearchRequest(_request().query_embedding, max_results=2)
    assert len(store.search(small).matches) == 2  # small answers pass
    store.close()


def test_each_event_loop_gets_its_own_client(service: Service) -> None:
    store = _filled(service)
    expected = hits(store.search(_request()))

    async def twice() -> tuple[Any, Any]:
        await store.asearch(_request())
        first = store._async_client
        assert hits(await store.asearch(_request())) == expected
        assert store._async_client is first  # one client per loop, reused
        return first, asyncio.get_running_loop()

    first, first_loop = asyncio.run(_closing(store, twice))
    second, second_loop = asyncio.run(_closing(store, twice))
    assert first is not None
    assert second is not None
    assert first is not second
    assert first_loop is not second_loop
    assert store._async_client is None  # closed with its loop
    store.close()


def _socket_warnings(service: Service, aclose: bool) -> list[str]:
    """The ResourceWarnings of what a store's async calls left open, once the store is
    closed (``aclose`` in its loop, else ``close`` after it) and collected."""
    store = _filled(service)

    async def body(store: AzureAiSearchEmbeddingStore) -> None:
        await store.asearch(_request())
        await store.aadd_all(*rows(3, DIMENSION, seed=5))
        if aclose:
            await store.aclose()
            assert store._async_client is None

    gc.collect()  # what earlier tests left is not counted
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        asyncio.run(body(store))
        store.close()
        del store
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


def test_aclose_closes_the_async_client(service: Service) -> None:
    assert _socket_warnings(service, aclose=True) == []
    assert _socket_warnings(service, aclose=False)  # without aclose, the GC finds its sockets


def test_given_sync_clients_run_in_worker_threads(service: Service) -> None:
    server, endpoint = service
    credential = AzureKeyCredential(server.api_key)
    owned = _filled(service)
    given = AzureAiSearchEmbeddingStore(
        endpoint, "vectors", credential, search_client=SearchClient(endpoint, "vectors", credential)
    )
    assert hits(asyncio.run(_closing(given, lambda: given.asearch(_request())))) == hits(
        owned.search(_request())
    )
    assert given._async_client is None
    given.close()  # the index client it made; the given search client stays open
    given._client.search_client.close()
    owned.close()


def test_a_partly_rejected_async_batch_raises_naming_the_document(service: Service) -> None:
    store = _store(service)
    documents = [
        {"id": "Z29vZA==", "content_vector": [1.0] * DIMENSION},  # base64 of "good"
        {"id": "bad key!", "content_vector": [1.0] * DIMENSION},  # not a valid Azure key
    ]

    async def send() -> None:
        await store._arun(store._send(documents, "upload"))

    with pytest.raises(
        EmbeddingStoreError, match=r"rejected 1 of 2 documents \(upload\): 'bad key!': 400"
    ):
        asyncio.run(_closing(store, send))
    assert [e.embedding_id for e in store.get(["good"])] == ["good"]  # the 207's other half
    store.close()


def test_async_service_errors_name_the_index_and_the_call(service: Service) -> None:
    server, _ = service
    store = _filled(service)
    del server.indexes["vectors"]  # deleted behind the store's back
    with pytest.raises(EmbeddingStoreError, match=r"'vectors': vector search failed: .*No index"):
        _search(store, "async")
    store.close()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("timeout", 0, "timeout must be a number of seconds > 0, got 0"),
        ("timeout", float("inf"), "timeout must be a number of seconds > 0, got inf"),
        ("max_response_bytes", 0, "max_response_bytes must be an int >= 1, got 0"),
        ("max_response_bytes", 1.5, "max_response_bytes must be an int >= 1, got 1.5"),
    ],
)
def test_bad_bounds_are_refused_naming_the_option(
    service: Service, option: str, value: object, message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        _store(service, **{option: value})


_WITHOUT_AIOHTTP = """
import asyncio, sys
sys.modules["aiohttp"] = None  # as after pip install ragloom-retriever-azure-ai-search alone
from azure.core.credentials import AzureKeyCredential
from ragloom.core.embedding import Embedding
from ragloom.core.stores.base import EmbeddingSearchRequest
from ragloom.retrievers.azure_ai_search import AzureAiSearchEmbeddingStore

store = AzureAiSearchEmbeddingStore(sys.argv[1], "vectors", AzureKeyCredential(sys.argv[2]))

async def main() -> None:
    async with store:
        await store.aadd_all([Embedding([1.0, 0.0]), Embedding([0.0, 1.0])], ids=["a", "b"])
        found = await store.asearch(EmbeddingSearchRequest(Embedding([0.0, 1.0]), max_results=1))
        print(type(store._async_client).__name__, found.matches[0].embedding_id)

asyncio.run(main())
"""


def test_async_methods_need_no_aiohttp(service: Service) -> None:
    server, endpoint = service
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_AIOHTTP, endpoint, server.api_key],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["_AsyncService", "b"]  # the native client, not a thread
