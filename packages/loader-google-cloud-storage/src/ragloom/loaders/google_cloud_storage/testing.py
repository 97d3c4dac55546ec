"""Test helpers: GCS's permission answers in front of an emulator that has none.

:class:`DenyingProxy` is a real local HTTP server that answers the requests a test
denies with Google Cloud Storage's documented JSON API errors (403 ``forbidden``, 401
``authError``) and forwards every other request to an emulator (gcp-storage-emulator,
fake-gcs-server), whose answers it relays: the emulators grant everything.

    with DenyingProxy("http://127.0.0.1:34326") as proxy:
        proxy.denied.add(("my-bucket", "secret.txt"))  # storage.objects.get
        proxy.denied.add(("other-bucket", None))       # storage.objects.list
        loader = GoogleCloudStorageDocumentLoader(endpoint_url=proxy.url)
"""

from __future__ import annotations

import json
import re
import threading
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from ragloom.core.errors import InvalidArgumentError

__all__ = ["DenyingProxy"]


class DenyingProxy:
    """The emulator behind a permission check: a real HTTP server in front of it.

    gcp-storage-emulator (like fake-gcs-server) grants everything, so this proxy stands
    for GCS's IAM: it answers what ``denied`` refuses, ``(bucket, None)`` for listing the
    bucket (``storage.objects.list``) and ``(bucket, name)`` for one object
    (``storage.objects.get``), with GCS's documented JSON API 403 error, and every request
    with the documented 401 when ``refuse_credentials`` is set; everything else is
    forwarded to the emulator and its answer relayed. It serves GETs, all a loader sends.
    """

    def __init__(self, upstream: str) -> None:
        address = urlsplit(upstream)
        if not address.hostname:
            raise InvalidArgumentError(f"upstream must be scheme://host:port, got {upstream!r}")
        self.upstream: tuple[str, int | None] = (address.hostname, address.port)
        self.denied: set[tuple[str, str | None]] = set()
        self.refuse_credentials = False
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ProxyHandler)
        self._httpd.daemon_threads = True
        self._httpd.proxy = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the endpoint to give the client."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def refusal(self, path: str) -> tuple[int, dict[str, Any]] | None:
        """The error GCS would answer instead of the emulator, if any."""
        if self.refuse_credentials:
            return 401, _gcs_error(401, "Invalid Credentials", "authError")
        route = re.fullmatch(r"(?:/download)?/storage/v1/b/([^/]+)/o(?:/(.+))?", path)
        if route is None:
            return None
        bucket = unquote(route[1])
        name = unquote(route[2]) if route[2] is not None else None
        if (bucket, name) not in self.denied:
            return None
        what, permission = ("object", "get") if name else ("bucket", "list")
        message = (
            f"anonymous caller does not have storage.objects.{permission} access to the "
            f"Google Cloud Storage {what}. Permission 'storage.objects.{permission}' denied "
            "on resource (or it may not exist)."
        )
        return 403, _gcs_error(403, message, "forbidden")

    def __enter__(self) -> DenyingProxy:
        """Start serving in a daemon thread."""
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Stop serving."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)


def _gcs_error(code: int, message: str, reason: str) -> dict[str, Any]:
    """GCS's JSON API error body (cloud.google.com/storage/docs/json_api/v1/status-codes)."""
    detail = {"message": message, "domain": "global", "reason": reason}
    return {"error": {"code": code, "message": message, "errors": [detail]}}


_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        proxy: DenyingProxy = self.server.proxy  # type: ignore[attr-defined]
        refusal = proxy.refusal(urlsplit(self.path).path)
        if refusal is not None:
            status, error = refusal
            headers = {"Content-Type": "application/json; charset=UTF-8"}
            self._send(status, headers, json.dumps(error).encode())
            return
        upstream = HTTPConnection(*proxy.upstream, timeout=30)
        try:
            forwarded = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            upstream.request("GET", self.path, headers=forwarded)
            answer = upstream.getresponse()
            body = answer.read()
            headers = {k: v for k, v in answer.getheaders() if k.lower() not in _HOP_BY_HOP}
            self._send(answer.status, headers, body)
        finally:
            upstream.close()

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
