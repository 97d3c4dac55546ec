"""Issue 32, items 2 and 7: URLs from untrusted text never reach internal addresses, and
one timeout bounds the whole call (connect, headers, redirects, body).

Nothing leaves the machine: internal addresses are refused before any connection (a
``socket.connect`` audit hook records every attempt, and a loopback listener records
every connection it accepts); names are answered by a resolver hook. The "allowed"
server runs on 127.0.0.2, let through with ``allowed_networks`` while 127.0.0.1 stays
refused.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from ragloom.core.errors import DocumentLoadError, EgressRefusedError
from ragloom.core.kit.egress import EgressPolicy
from ragloom.core.loaders.url import UrlDocumentLoader
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.core.query import Query
from ragloom.core.web_search import (
    WebSearchError,
    WebSearchOrganicResult,
    WebSearchRequest,
    WebSearchResults,
)
from ragloom.retrievers.web_search import SearxngWebSearchEngine, WebSearchContentRetriever

_CONNECTS: list[Any] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "socket.connect" and _CONNECTS is not None:
        _CONNECTS.append(args[1])


sys.addaudithook(_audit)


@contextmanager
def connection_attempts() -> Iterator[list[Any]]:
    """Every ``socket.connect`` address attempted (any thread) inside the block."""
    global _CONNECTS
    _CONNECTS = attempts = []
    try:
        yield attempts
    finally:
        _CONNECTS = None


class Listener:
    """A loopback listener standing in for an internal service: records what connects."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.accepted: list[Any] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            self.accepted.append(peer)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret")
            conn.close()


@pytest.fixture(scope="module")
def internal() -> Iterator[Listener]:
    listener = Listener()
    yield listener
    listener.sock.close()


NAMES = {
    "metadata.google.internal": "169.254.169.254",
    "public-looking.example": "127.0.0.1",
}


def hook(host: str, port: int) -> Sequence[tuple[Any, ...]]:
    """The system resolver, except for the names above (answered without DNS)."""
    if host in NAMES:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (NAMES[host], port))]
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


POLICY = EgressPolicy(resolver=hook)  # the default rules, names answered by the hook


def internal_urls(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/secret",
        f"http://localhost:{port}/secret",
        f"http://127.1:{port}/secret",
        f"http://2130706433:{port}/secret",
        f"http://[::ffff:127.0.0.1]:{port}/secret",
        f"http://0.0.0.0:{port}/secret",
        f"http://public-looking.example:{port}/secret",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
    ]


def test_the_url_loader_refuses_internal_urls_before_connecting(internal: Listener) -> None:
    for url in internal_urls(internal.port):
        with connection_attempts() as attempts, pytest.raises(DocumentLoadError) as info:
            UrlDocumentLoader.load(url, egress=POLICY, timeout=5)
        assert isinstance(info.value.__cause__, EgressRefusedError), (url, info.value)
        assert "refused by the egress policy" in str(info.value), url
        assert attempts == [], (url, attempts)
    assert internal.accepted == []


def test_the_url_loader_refuses_loopback_by_default(internal: Listener) -> None:
    with connection_attempts() as attempts, pytest.raises(DocumentLoadError, match="loopback"):
        UrlDocumentLoader.load(f"http://127.0.0.1:{internal.port}/secret")
    assert attempts == []
    assert internal.accepted == []


class FixedResults:
    """A web search engine whose results are fixed URLs (as a poisoned index would give)."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls

    def search(self, request: WebSearchRequest) -> WebSearchResults:
        return WebSearchResults(
            tuple(
                WebSearchOrganicResult(title=f"r{i}", url=url, snippet="the snippet")
                for i, url in enumerate(self.urls)
            )
        )


def test_web_search_pages_refuse_internal_urls_before_connecting(internal: Listener) -> None:
    urls = internal_urls(internal.port)
    retriever = WebSearchContentRetriever(
        FixedResults(urls), max_results=len(urls), fetch_pages=True, egress=POLICY
    )
    with connection_attempts() as attempts:
        contents = retriever.retrieve(Query("q"))
    assert len(contents) == len(urls)
    for content in contents:
        metadata = content.text_segment.metadata
        assert "refused by the egress policy" in str(metadata["page_error"]), metadata
        assert content.text.endswith("the snippet")
    assert attempts == []
    assert internal.accepted == []


def test_web_search_pages_refuse_loopback_by_default(internal: Listener) -> None:
    url = f"http://127.0.0.1:{internal.port}/secret"
    retriever = WebSearchContentRetriever(FixedResults([url]), fetch_pages=True)
    with connection_attempts() as attempts:
        [content] = retriever.retrieve(Query("q"))
    assert "loopback" in str(content.text_segment.metadata["page_error"])
    assert attempts == []
    assert internal.accepted == []


ELSEWHERE = EgressPolicy(allowed_networks=("127.0.0.2/32",))  # the "public" server


def test_a_redirect_to_an_internal_address_is_refused(
    hostile_elsewhere: str, internal: Listener
) -> None:
    page = UrlDocumentLoader.load(
        f"{hostile_elsewhere}/slowredirect/9", TextDocumentParser(), egress=ELSEWHERE
    )
    assert page.text == "ok"  # the allowed server is reachable
    target = f"http://127.0.0.1:{internal.port}/secret"
    with pytest.raises(
        DocumentLoadError, match="redirect 1 to http://127.0.0.1:.* refused.*loopback"
    ) as info:
        UrlDocumentLoader.load(f"{hostile_elsewhere}/redirectto/?to={target}", egress=ELSEWHERE)
    assert isinstance(info.value.__cause__, EgressRefusedError)
    assert internal.accepted == []


def test_a_redirect_to_ftp_is_refused(hostile_elsewhere: str) -> None:
    with pytest.raises(
        DocumentLoadError, match="redirect 1 to ftp://127.0.0.1/etc/passwd refused.*scheme 'ftp'"
    ) as info:
        UrlDocumentLoader.load(
            f"{hostile_elsewhere}/redirectto/?to=ftp://127.0.0.1/etc/passwd", egress=ELSEWHERE
        )
    assert isinstance(info.value.__cause__, EgressRefusedError)


def test_dripped_headers_end_at_the_timeout(hostile: str) -> None:
    """The hostile probe: headers one byte every 0.3 s held the loader 90 s (timeout=5)."""
    started = time.monotonic()
    with pytest.raises(DocumentLoadError, match="timed out"):
        UrlDocumentLoader.load(
            f"{hostile}/headerdrip/page", timeout=2, allow_private_addresses=True
        )
    assert time.monotonic() - started < 3.0


def test_dripped_headers_end_at_the_timeout_for_searxng(hostile: str) -> None:
    """The hostile probe: SearXNG with timeout_seconds=3 took 47 s on dripped headers."""
    engine = SearxngWebSearchEngine(f"{hostile}/headerdrip", timeout_seconds=2)
    started = time.monotonic()
    with pytest.raises(WebSearchError, match="timed out"):
        engine.search(WebSearchRequest("q"))
    assert time.monotonic() - started < 3.0
    engine.close()


def test_a_chain_of_slow_redirects_ends_at_the_timeout(hostile: str) -> None:
    """The hostile probe: 9 redirects of 1.5 s each took 15.2 s with timeout=5."""
    started = time.monotonic()
    with pytest.raises(DocumentLoadError) as info:
        UrlDocumentLoader.load(f"{hostile}/slowredirect/0", timeout=5, allow_private_addresses=True)
    elapsed = time.monotonic() - started
    assert 4.9 < elapsed < 6.0, elapsed
    message = str(info.value)
    assert "within 5 s" in message, message
    assert "3 redirect(s) followed" in message, message
