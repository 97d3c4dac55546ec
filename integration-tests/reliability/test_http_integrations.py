"""Every HTTP integration against the hostile server (``conftest.py``): each misbehaviour
is a ``RagloomError`` within a bounded time, never a hang or a raw exception.

chat-openai has its own file (``test_http_clients.py``, streaming included); here are the
scoring models (Cohere, TEI/Jina-style HTTP), the Tavily web search engine, the GitHub
loader and the URL loader.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from ragloom.core import RagloomError, UrlDocumentLoader
from ragloom.core.scoring_batches import RetryPolicy
from ragloom.core.web_search import WebSearchRequest

MODES = ["drip", "stall", "huge", "nested", "short", "redirect"]
BOUND = 12.0  # seconds: timeout 1 s, plus connection setup and one read at most


def cohere(url: str) -> object:
    from ragloom.scoring_models.cohere import CohereScoringModel

    model = CohereScoringModel(
        api_key="k", base_url=url, timeout=1, retry=RetryPolicy(max_retries=0)
    )
    return model.score_all(["a", "b"], "q")


def http_scoring(url: str) -> object:
    from ragloom.scoring_models.http import HttpScoringModel

    return HttpScoringModel(url, timeout=1, retry=RetryPolicy(max_retries=0)).score_all(
        ["a", "b"], "q"
    )


def tavily(url: str) -> object:
    from ragloom.retrievers.web_search import TavilyWebSearchEngine

    return TavilyWebSearchEngine(api_key="k", base_url=url, timeout_seconds=1).search(
        WebSearchRequest("q")
    )


def github(url: str) -> object:
    from ragloom.loaders.github import GitHubDocumentLoader

    return GitHubDocumentLoader(base_url=url, timeout=1).load_document("o", "r", "README.md")


def url_loader(url: str) -> object:
    # The hostile server runs on 127.0.0.1: the private-address opt-out reaches it.
    return UrlDocumentLoader.load(f"{url}/page.txt", timeout=1, allow_private_addresses=True)


CLIENTS: dict[str, Callable[[str], object]] = {
    "scoring-cohere": cohere,
    "scoring-http": http_scoring,
    "retriever-web-search": tavily,
    "loader-github": github,
    "url-loader": url_loader,
}


# A loaded page may be any text: deeply nested brackets are content, not an attack.
SKIPPED = {("url-loader", "nested")}
CASES = [(c, m) for c in CLIENTS for m in MODES if (c, m) not in SKIPPED]


@pytest.mark.parametrize(("client", "mode"), CASES)
def test_a_hostile_server_is_a_bounded_clear_error(hostile: str, client: str, mode: str) -> None:
    started = time.monotonic()
    with pytest.raises(RagloomError) as info:
        CLIENTS[client](f"{hostile}/{mode}")
    elapsed = time.monotonic() - started
    assert elapsed < BOUND, f"{client} on {mode}: {elapsed:.1f} s"
    assert "127.0.0.1" in str(info.value), str(info.value)
