"""Fixtures shared by the suites: the wire server of a module and a fresh store on it, and
the retriever every mode is built as."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from azure.core.credentials import AzureKeyCredential

from ragloom.core.embedding import EmbeddingModel
from ragloom.retrievers.azure_ai_search import (
    AzureAiSearchContentRetriever,
    AzureAiSearchEmbeddingStore,
    SearchMode,
)
from ragloom.retrievers.azure_ai_search.testing import SearchWireServer


@pytest.fixture(scope="module")
def wire_service() -> Iterator[tuple[SearchWireServer, str]]:
    """One wire server for a module's suite tests (each test has its own index)."""
    server = SearchWireServer()
    with server.running() as endpoint:
        yield server, endpoint


@pytest.fixture
def suite_store(
    wire_service: tuple[SearchWireServer, str], dimension: int, request: pytest.FixtureRequest
) -> Iterator[AzureAiSearchEmbeddingStore]:
    """A store on an index of its own (named after the test), closed and dropped after."""
    server, endpoint = wire_service
    name = f"t{abs(hash(request.node.nodeid)) % 10**12}"
    with AzureAiSearchEmbeddingStore(
        endpoint, name, AzureKeyCredential(server.api_key), dimension=dimension
    ) as store:
        yield store
    server.indexes.pop(name, None)


RetrieverFactory = Callable[..., AzureAiSearchContentRetriever]


def _topic_retriever(
    server: SearchWireServer,
    endpoint: str,
    mode: SearchMode,
    model: EmbeddingModel,
    **options: Any,
) -> AzureAiSearchContentRetriever:
    return AzureAiSearchContentRetriever(
        endpoint,
        "docs",
        AzureKeyCredential(server.api_key),
        mode=mode,
        embedding_model=model,
        semantic_configuration="default",
        metadata_fields=["topic"],
        **options,
    )


@pytest.fixture
def topic_retriever() -> Iterator[RetrieverFactory]:
    """Builds the retriever of a server's ``docs`` index in a mode, returning the ``topic``
    field: ``topic_retriever(server, endpoint, mode, model, **options)``; what it built is
    closed when the test ends."""
    built: list[AzureAiSearchContentRetriever] = []

    def build(*args: Any, **options: Any) -> AzureAiSearchContentRetriever:
        built.append(_topic_retriever(*args, **options))
        return built[-1]

    yield build
    for retriever in built:
        retriever.close()
