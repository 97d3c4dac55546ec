import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragloom.core import DocumentLoadError, TextDocumentParser, UrlDocumentLoader


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/latin":
            body = "café".encode("latin-1")
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=iso-8859-1")
        elif self.path == "/plain":
            body = b"hello from the server"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
        elif self.path == "/slow":
            time.sleep(2)
            body = b"late"
            self.send_response(200)
        else:
            body = b"not here"
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """The /slow client hangs up on purpose; its broken pipe is expected."""


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_loads_with_url_metadata(server: str) -> None:
    doc = UrlDocumentLoader.load(f"{server}/plain", allow_private_addresses=True)
    assert doc.text == "hello from the server"
    assert doc.metadata["url"] == f"{server}/plain"


def test_uses_declared_charset(server: str) -> None:
    assert UrlDocumentLoader.load(f"{server}/latin", allow_private_addresses=True).text == "café"


def test_explicit_parser(server: str) -> None:
    assert UrlDocumentLoader.load(
        f"{server}/plain", TextDocumentParser("ascii"), allow_private_addresses=True
    ).text.startswith("hello")


def test_http_error_names_url_and_status(server: str) -> None:
    with pytest.raises(DocumentLoadError, match=r"/missing: HTTP 404"):
        UrlDocumentLoader.load(f"{server}/missing", allow_private_addresses=True)


def test_timeout(server: str) -> None:
    with pytest.raises(DocumentLoadError, match="timed out|cannot fetch"):
        UrlDocumentLoader.load(f"{server}/slow", timeout=0.3, allow_private_addresses=True)


def test_refuses_other_schemes() -> None:
    with pytest.raises(DocumentLoadError, match="file:///etc/passwd"):
        UrlDocumentLoader.load("file:///etc/passwd")


def test_unreachable_host() -> None:
    with pytest.raises(DocumentLoadError, match="127.0.0.1:9"):
        UrlDocumentLoader.load("http://127.0.0.1:9/", timeout=2, allow_private_addresses=True)
