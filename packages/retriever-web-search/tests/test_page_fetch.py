"""Full pages fetched through UrlDocumentLoader + the HTML-to-text transformer, from a local
HTTP server, for the results of each engine's wire-format server."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ragloom.core.document import Document
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.core.query import Query
from ragloom.core.web_search import WebSearchEngine
from ragloom.retrievers.web_search import (
    GoogleCustomSearchEngine,
    SearxngWebSearchEngine,
    TavilyWebSearchEngine,
    WebSearchContentRetriever,
)
from ragloom.retrievers.web_search.testing import (
    GoogleCustomSearchTestServer,
    SearxngTestServer,
    TavilyTestServer,
)
from ragloom.transformers.html import HtmlToTextDocumentTransformer

PAGES = {
    "/rust.html": (
        "<html><head><title>Rust</title><script>track()</script></head><body>"
        "<nav>Home | About</nav><h1>Ownership</h1><p>The borrow checker proves "
        "references valid.</p></body></html>"
    ),
    "/slow.html": "<p>late</p>",
    "/empty.html": "<html><body><script>only()</script></body></html>",
}


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            page = PAGES.get(self.path)
            if page is None:
                self.send_error(404)
                return
            if self.path == "/slow.html":
                threading.Event().wait(1.0)
            data = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # gave up
                self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _documents(site: str) -> list[Document]:
    return [
        Document("borrow checker snippet one", {"url": f"{site}/rust.html", "title": "Rust"}),
        Document("borrow checker snippet two", {"url": f"{site}/missing.html", "title": "Gone"}),
        Document("borrow checker snippet three", {"url": f"{site}/slow.html", "title": "Slow"}),
        Document("borrow checker snippet four", {"url": f"{site}/empty.html", "title": "Empty"}),
    ]


Engines = Callable[[list[Document]], tuple[Any, Callable[[Any], WebSearchEngine]]]
ENGINES: dict[str, Engines] = {
    "tavily": lambda docs: (
        TavilyTestServer(docs, api_key="t"),
        lambda server: TavilyWebSearchEngine("t", base_url=server.url),
    ),
    "google": lambda docs: (
        GoogleCustomSearchTestServer(docs, api_key="g", cx="c"),
        lambda server: GoogleCustomSearchEngine("g", "c", base_url=server.url),
    ),
    "searxng": lambda docs: (
        SearxngTestServer(docs),
        lambda server: SearxngWebSearchEngine(server.url),
    ),
}


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_pages_replace_snippets_and_failures_keep_them(site: str, name: str) -> None:
    server, connect = ENGINES[name](_documents(site))
    with server:
        retriever = WebSearchContentRetriever(
            connect(server),
            max_results=4,
            fetch_pages=True,
            page_parser=TextDocumentParser(),
            page_transformer=HtmlToTextDocumentTransformer(),
            page_timeout_seconds=0.3,
            allow_private_addresses=True,  # the pages are served from 127.0.0.1
        )
        contents = {
            c.text_segment.metadata["title"]: c for c in retriever.retrieve(Query("borrow checker"))
        }
    rust = contents["Rust"]
    assert (
        rust.text
        == "Rust\nHome | About\n\nOwnership\n\nThe borrow checker proves references valid."
    )
    assert "page_error" not in rust.text_segment.metadata
    assert "track()" not in rust.text
    for title, reason in [("Gone", "HTTP 404"), ("Slow", "timed out"), ("Empty", "no text")]:
        content = contents[title]
        assert content.text.startswith(f"{title}\nborrow checker snippet")  # the snippet kept
        assert reason in str(content.text_segment.metadata["page_error"])


def test_pages_are_not_fetched_unless_asked(site: str) -> None:
    with TavilyTestServer(_documents(site), api_key="t") as server:
        retriever = WebSearchContentRetriever(TavilyWebSearchEngine("t", base_url=server.url))
        texts = [c.text for c in retriever.retrieve(Query("borrow checker"))]
    assert all("snippet" in text for text in texts)
