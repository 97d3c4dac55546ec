"""The WireServer's general parts the fakes build on: pattern routes, every method, the
query parsed, a header-held key, non-JSON and empty bodies, slow and late answers."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

from ragloom.testkit.wire import Recorded, WireServer, late, slowly, status


def _call(
    server: WireServer, method: str, path: str, body: bytes | None = None, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=5)
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def _item(request: Recorded) -> Any:
    if request.method == "DELETE":
        return 204, None
    if request.method == "GET":
        return 200, b"\xffraw", {"Content-Type": "text/csv"}
    return 201, {"method": request.method, "params": request.params, "body": request.body}


def test_pattern_routes_methods_query_and_bodies() -> None:
    with WireServer({"/exact": lambda r: (200, "text"), "^/items/[0-9]+": _item}) as server:
        assert _call(server, "GET", "/exact?x=1")[2] == b"text"
        code, headers, data = _call(server, "GET", "/items/7")
        assert (code, headers["content-type"], data) == (200, "text/csv", b"\xffraw")
        code, _, data = _call(server, "PUT", "/items/7?a=1&a=2", b'{"k": 1}')
        assert (code, json.loads(data)) == (
            201,
            {"method": "PUT", "params": {"a": "2"}, "body": {"k": 1}},
        )
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        data = _call(server, "PATCH", "/items/7?q=x", b"f=1&q=y", **form)[2]
        assert json.loads(data)["params"] == {"q": "y", "f": "1"}
        code, headers, data = _call(server, "DELETE", "/items/7")
        assert (code, data, "content-length" in headers) == (204, b"", False)
        assert _call(server, "GET", "/items/x")[0] == 404  # the pattern must match it all
        assert [r.query for r in server.requests[:3]] == [{"x": ["1"]}, {}, {"a": ["1", "2"]}]
        assert [r.path for r in server.requests[:3]] == ["/exact", "/items/7", "/items/7"]


def test_a_key_in_another_header() -> None:
    routes = {"/": lambda r: (200, {})}
    with WireServer(routes, api_key="k", api_key_header="api-key") as server:
        assert _call(server, "GET", "/", **{"api-key": "k"})[0] == 200
        assert _call(server, "GET", "/", Authorization="Bearer k")[0] == 401
        assert _call(server, "GET", "/", **{"api-key": "no"})[0] == 401


def test_slow_and_late_answers() -> None:
    routes = {"/": lambda r: slowly((200, "0123456789"), chunk_size=4, interval=0.1)}
    with WireServer(routes) as server:
        started = time.monotonic()
        assert _call(server, "GET", "/")[2] == b"0123456789"
        assert time.monotonic() - started >= 0.3  # three chunks, each after a pause
        server.script(late(0.2, status(418, {"late": True})))
        started = time.monotonic()
        code, _, data = _call(server, "GET", "/")
        assert (code, json.loads(data)) == (418, {"late": True})
        assert time.monotonic() - started >= 0.2
