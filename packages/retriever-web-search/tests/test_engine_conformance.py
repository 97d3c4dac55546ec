"""Each engine passes the testkit's WebSearchEngineSuite against its wire-format server.

A harness per engine starts the engine's local server (ragloom.retrievers.web_search.testing)
over the suite's pages and scripts the failures the real API answers: a bad key, a quota
or rate limit, a 5xx, malformed JSON, a late answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any

import pytest

from ragloom.core.document import Document
from ragloom.core.web_search import WebSearchEngine
from ragloom.retrievers.web_search import (
    GoogleCustomSearchEngine,
    SearxngWebSearchEngine,
    TavilyWebSearchEngine,
)
from ragloom.retrievers.web_search.testing import (
    QUOTA_EXCEEDED,
    GoogleCustomSearchTestServer,
    SearxngTestServer,
    TavilyTestServer,
    google_error,
)
from ragloom.testkit import WebSearchEngineSuite
from ragloom.testkit.web_search_engine import Failure

Server = TavilyTestServer | GoogleCustomSearchTestServer | SearxngTestServer
# failure -> (status, payload, content type) the real API answers, fragment of the error
Failures = dict[str, tuple[int, Any, str, str]]


class Harness:
    """Starts one server per engine asked for; scripts failures on the last one."""

    def __init__(
        self,
        serve: Callable[[Sequence[Document]], Server],
        connect: Callable[[Server, float], WebSearchEngine],
        failures: Failures,
    ) -> None:
        self._serve, self._connect, self._failures = serve, connect, failures
        self._stack = ExitStack()
        self._server: Server | None = None

    def engine(self, pages: Sequence[Document], *, timeout_seconds: float) -> WebSearchEngine:
        self._server = self._stack.enter_context(self._serve(pages))
        engine = self._connect(self._server, timeout_seconds)
        self._stack.callback(engine.close)  # type: ignore[attr-defined]
        return engine

    def fail_next(self, failure: Failure) -> str:
        assert self._server is not None
        if failure == "slow":
            self._server.delay_next(1.0)
            return "timed out"
        status, payload, content_type, fragment = self._failures[failure]
        self._server.answer_next(status, payload, content_type=content_type)
        return fragment

    def close(self) -> None:
        self._stack.close()


@pytest.fixture
def make_harness() -> Iterator[Callable[..., Harness]]:
    harnesses: list[Harness] = []

    def make(*args: Any) -> Harness:
        harnesses.append(Harness(*args))
        return harnesses[-1]

    yield make
    for harness in harnesses:
        harness.close()


TAVILY_FAILURES: Failures = {
    "refused": (
        401,
        {"detail": {"error": "Unauthorized: missing or invalid API key."}},
        "application/json",
        "401 (invalid or missing API key)",
    ),
    "rate_limited": (
        432,
        {"detail": {"error": "This request exceeds your plan's set usage limit."}},
        "application/json",
        "432",
    ),
    "server_error": (
        500,
        {"detail": {"error": "Internal Server Error"}},
        "application/json",
        "500",
    ),
    "malformed": (200, b'{"results": [{"title": "cut', "application/json", "malformed"),
}
GOOGLE_FAILURES: Failures = {
    "refused": (
        400,
        google_error(
            400,
            "INVALID_ARGUMENT",
            "keyInvalid",
            "API key not valid. Please pass a valid API key.",
            domain="usageLimits",
        ),
        "application/json",
        "400 (keyInvalid): API key not valid",
    ),
    "rate_limited": (429, QUOTA_EXCEEDED, "application/json", "429 (rateLimitExceeded)"),
    "server_error": (
        503,
        google_error(503, "UNAVAILABLE", "backendError", "Backend Error"),
        "application/json",
        "503 (backendError): Backend Error",
    ),
    "malformed": (200, b"<html>captive portal</html>", "text/html", "malformed"),
}
SEARXNG_FAILURES: Failures = {
    "refused": (403, b"<html><h1>Forbidden</h1></html>", "text/html", "403 (forbidden"),
    "rate_limited": (429, b"Too Many Requests", "text/plain", "429 (too many requests"),
    "server_error": (500, b"Internal Server Error", "text/plain", "500"),
    "malformed": (200, b'{"query": "rust", "results": [', "application/json", "malformed"),
}


class TestTavilyEngine(WebSearchEngineSuite):
    @pytest.fixture
    def harness(self, make_harness: Callable[..., Harness]) -> Harness:
        return make_harness(
            lambda pages: TavilyTestServer(pages, api_key="tvly-test"),
            lambda server, timeout: TavilyWebSearchEngine(
                "tvly-test", base_url=server.url, timeout_seconds=timeout
            ),
            TAVILY_FAILURES,
        )


class TestGoogleCustomSearchEngine(WebSearchEngineSuite):
    @pytest.fixture
    def harness(self, make_harness: Callable[..., Harness]) -> Harness:
        return make_harness(
            lambda pages: GoogleCustomSearchTestServer(pages, api_key="g-key", cx="g-cx"),
            lambda server, timeout: GoogleCustomSearchEngine(
                "g-key", "g-cx", base_url=server.url, timeout_seconds=timeout
            ),
            GOOGLE_FAILURES,
        )


class TestSearxngEngine(WebSearchEngineSuite):
    @pytest.fixture
    def harness(self, make_harness: Callable[..., Harness]) -> Harness:
        return make_harness(
            SearxngTestServer,
            lambda server, timeout: SearxngWebSearchEngine(server.url, timeout_seconds=timeout),
            SEARXNG_FAILURES,
        )
