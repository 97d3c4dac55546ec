"""A local server speaking the Azure AI Search documents-search REST wire format, for tests.

``POST /indexes/{index}/docs/search?api-version=...`` with ``api-key`` header; body fields
``search``, ``vectorQueries`` ([{kind: vector, vector, k, fields}]), ``filter``, ``top``,
``select``, ``queryType`` (``semantic``) and ``semanticConfiguration``; answer
``{"value": [{"@search.score", "@search.rerankerScore", ...fields}]}``, as documented
for api-version 2024-07-01. Scoring is simple but shaped like Azure's: full text counts
matching query words, vector scores are ``1 / (1 + (1 - cos))``, hybrid fuses both by
RRF (k = 60), the semantic reranker scores 0-4 by word overlap. ``filter`` is recorded
(``requests``), not evaluated: an OData evaluator is not part of this server.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["SearchWireServer"]

_WORDS = re.compile(r"[a-z0-9]+")
_PATH = re.compile(
    r"^/indexes\('?([A-Za-z0-9_-]+)'?\)/docs/search\.post\.search$|"
    r"^/indexes/([A-Za-z0-9_-]+)/docs/search$"
)


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower()))


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class SearchWireServer:
    """Serves ``documents`` (dicts with the index's fields) of one index on 127.0.0.1."""

    def __init__(
        self,
        index: str,
        documents: Sequence[Mapping[str, Any]],
        *,
        api_key: str = "test-key",
        content_field: str = "content",
        key_field: str = "id",
    ) -> None:
        self.index = index
        self.documents = [dict(d) for d in documents]
        self.api_key = api_key
        self.content_field = content_field
        self.key_field = key_field
        self.requests: list[dict[str, Any]] = []

    def search(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The documented response's ``value`` for a request ``body``."""
        top = int(body.get("top") or 50)
        text = body.get("search")
        ranked: list[dict[str, float]] = []
        if text and text != "*":
            query = _words(text)
            scores = {
                i: float(len(query & _words(d[self.content_field])))
                for i, d in enumerate(self.documents)
            }
            ranked.append({i: s for i, s in scores.items() if s > 0})
        for vq in body.get("vectorQueries") or []:
            field = vq["fields"]
            scores = {
                i: 1.0 / (1.0 + (1.0 - _cosine(vq["vector"], d[field])))
                for i, d in enumerate(self.documents)
            }
            best = sorted(scores, key=lambda i: (-scores[i], i))[: int(vq.get("k") or top)]
            ranked.append({i: scores[i] for i in best})
        if len(ranked) == 1:
            final = ranked[0]
        else:  # hybrid: reciprocal rank fusion
            final = {}
            for scores in ranked:
                for rank, i in enumerate(sorted(scores, key=lambda i: (-scores[i], i))):
                    final[i] = final.get(i, 0.0) + 1.0 / (60 + rank + 1)
        order = sorted(final, key=lambda i: (-final[i], i))[:top]
        select = body.get("select")
        fields = [f.strip() for f in select.split(",")] if select else None
        hits = []
        for i in order:
            doc = self.documents[i]
            hit = {k: v for k, v in doc.items() if fields is None or k in fields}
            hit["@search.score"] = final[i]
            if body.get("queryType") == "semantic":
                overlap = len(_words(text or "") & _words(doc[self.content_field]))
                hit["@search.rerankerScore"] = min(
                    4.0, overlap * 4.0 / max(1, len(_words(text or "")))
                )
            hits.append(hit)
        if body.get("queryType") == "semantic":
            hits.sort(key=lambda h: -h["@search.rerankerScore"])
        return hits

    @contextmanager
    def running(self) -> Iterator[str]:
        """Serve on 127.0.0.1 (a free port) and yield the endpoint URL."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _reply(self, status: int, payload: Mapping[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; odata.metadata=none")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                path, _, _query = self.path.partition("?")
                match = _PATH.match(path)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                server.requests.append({"path": self.path, "body": body})
                if self.headers.get("api-key") != server.api_key:
                    self._reply(403, {"error": {"code": "Forbidden", "message": "bad api-key"}})
                elif not match or (match.group(1) or match.group(2)) != server.index:
                    self._reply(404, {"error": {"code": "", "message": f"no index: {path}"}})
                else:
                    self._reply(200, {"value": server.search(body)})

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}"
        finally:
            httpd.shutdown()
            httpd.server_close()
