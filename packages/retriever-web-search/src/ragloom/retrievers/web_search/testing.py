"""TavilyTestServer: a local HTTP server speaking the Tavily Search API wire format.

Tavily is a paid API that cannot run here; this server answers ``POST /search`` as the
documented API does (Bearer or ``api_key`` authentication, the JSON request body, the
``{"query", "answer", "images", "results": [{title, url, content, score, raw_content}],
"response_time", "request_id"}`` answer, and ``{"detail": {"error": ...}}`` errors with
the documented status codes: 400, 401, 429, 432, 433). It searches a fixed set of
documents by word overlap. Extra scalar metadata of a document is added to its result
objects (Tavily adds fields such as ``favicon`` the same way), so tests can follow it.

    with TavilyTestServer(documents, api_key="tvly-test") as server:
        engine = TavilyWebSearchEngine("tvly-test", base_url=server.url)
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from ragloom.core.document import Document

__all__ = ["TavilyTestServer"]

_WORDS = re.compile(r"\w+")
UNAUTHORIZED = "Unauthorized: missing or invalid API key."


class TavilyTestServer:
    """Serves the Tavily ``/search`` endpoint over ``documents`` on 127.0.0.1.

    ``fail_with = (status, message)`` makes every request fail that way (e.g. ``(432,
    "...usage limit...")``); ``delay_seconds`` delays every answer (timeouts);
    ``answer_override`` replaces every successful answer (malformed-answer tests);
    ``requests`` holds every JSON body received.
    """

    def __init__(self, documents: Sequence[Document], *, api_key: str = "tvly-test") -> None:
        self.documents = list(documents)
        self.api_key = api_key
        self.fail_with: tuple[int, str] | None = None
        self.delay_seconds = 0.0
        self.answer_override: dict[str, Any] | None = None
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL to give the engine (``http://127.0.0.1:<port>``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> TavilyTestServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> TavilyTestServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def search(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and JSON answer for one request body (authentication already checked)."""
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            return 400, {"detail": {"error": "Query is missing or empty."}}
        max_results = body.get("max_results", 5)
        if isinstance(max_results, bool) or not isinstance(max_results, int):
            return 400, {"detail": {"error": "max_results must be an integer."}}
        if not 0 <= max_results <= 20:
            return 400, {"detail": {"error": "max_results must be between 0 and 20."}}
        words = {w.lower() for w in _WORDS.findall(query)}
        scored = []
        for index, document in enumerate(self.documents):
            text_words = {w.lower() for w in _WORDS.findall(document.text)}
            score = len(words & text_words) / len(words) if words else 0.0
            if score > 0:
                scored.append((-score, index, document))
        results = []
        for negative, index, document in sorted(scored)[:max_results]:
            metadata = document.metadata.to_dict()
            result: dict[str, Any] = {
                "url": str(metadata.pop("url", f"https://pages.example/{index}")),
                "title": str(metadata.pop("title", " ".join(document.text.split()[:6]))),
                "content": document.text[:300],
                "score": round(-negative, 6),
                "raw_content": document.text if body.get("include_raw_content") else None,
            }
            result.update({k: v for k, v in metadata.items() if isinstance(v, str | int | float)})
            results.append(result)
        return 200, {
            "query": query,
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": results,
            "response_time": 0.01,
            "request_id": str(uuid.uuid4()),
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                if self.path.split("?")[0] != "/search":
                    self._send(404, {"detail": "Not Found"})
                    return
                try:
                    length = int(self.headers.get("Content-Length", "0"))
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"detail": {"error": "Invalid JSON body."}})
                    return
                if not isinstance(body, dict):
                    self._send(400, {"detail": {"error": "Invalid JSON body."}})
                    return
                outer.requests.append(body)
                if outer.delay_seconds:
                    time.sleep(outer.delay_seconds)
                bearer = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
                if outer.api_key not in (bearer, body.get("api_key")):
                    self._send(401, {"detail": {"error": UNAUTHORIZED}})
                    return
                if outer.fail_with is not None:
                    status, message = outer.fail_with
                    self._send(status, {"detail": {"error": message}})
                    return
                if outer.answer_override is not None:
                    self._send(200, outer.answer_override)
                    return
                self._send(*outer.search(body))

        return Handler
