"""Fixtures: pages served by a local http.server, and browser sessions through the
ChromeDriver of scripts/services/selenium.sh (headless Debian Chromium)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from selenium import webdriver
from selenium.webdriver.remote.webdriver import WebDriver

from ragloom.loaders.selenium import CHROMIUM_ARGUMENTS, SeleniumDocumentLoader
from ragloom.testkit.servers import service_setting

CHROMEDRIVER_URL = service_setting("RAGLOOM_SELENIUM_URL")
START_HINT = "bash scripts/services/selenium.sh start"

PAGES = {
    "/static.html": "<!doctype html><html><head><title>Static page</title></head><body>"
    "<main><h1>Static</h1><p>Plain server-rendered text.</p></main></body></html>",
    # the text arrives 1.5 s after the load event: only a loader that waits captures it
    # (built from pieces, so the phrase is not in the script's own source)
    "/delayed.html": "<!doctype html><html><head><title>Delayed</title></head><body>"
    "<div id='app'>loading</div><script>setTimeout(function () {"
    " var p = document.createElement('p'); p.id = 'late';"
    " p.textContent = ['Quokkas', 'are', 'rendered', 'by', 'JavaScript'].join(' ') + '.';"
    " document.getElementById('app').replaceChildren(p); }, 1500);</script></body></html>",
    "/missing": "<!doctype html><html><head><title>Gone</title></head><body>404</body></html>",
}


class _Pages(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/static.html")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/hang":  # headers and half a body, then nothing: never finishes
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"<html><head><title>Hanging</title></head><body>half")
            self.wfile.flush()
            self.server.stopping.wait(60)  # type: ignore[attr-defined]
        elif path in PAGES:
            body = PAGES[path].encode()
            self.send_response(404 if path == "/missing" else 200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """The base URL of the test pages."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    httpd.daemon_threads = True
    httpd.stopping = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.stopping.set()  # type: ignore[attr-defined]
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture(scope="session")
def chromedriver_url() -> str:
    """The ChromeDriver service; fails (never skips) with the command that starts it."""
    address = urlsplit(CHROMEDRIVER_URL)
    try:
        socket.create_connection((address.hostname, address.port), timeout=3).close()
    except OSError as exc:
        pytest.fail(
            f"ChromeDriver is not reachable at {CHROMEDRIVER_URL}: {exc}\n"
            f"Start it with `{START_HINT}` (from the repository root; it installs Debian's "
            "chromium and chromium-driver if missing), or set RAGLOOM_SELENIUM_URL.",
            pytrace=False,
        )
    return CHROMEDRIVER_URL


def new_session(chromedriver_url: str) -> WebDriver:
    """A headless Chromium session through the ChromeDriver service."""
    options = webdriver.ChromeOptions()
    for argument in CHROMIUM_ARGUMENTS:
        options.add_argument(argument)
    return webdriver.Remote(command_executor=chromedriver_url, options=options)


@pytest.fixture(scope="session")
def session(chromedriver_url: str) -> Callable[[], WebDriver]:
    """Makes new browser sessions through the ChromeDriver service."""
    return lambda: new_session(chromedriver_url)


@pytest.fixture(scope="module")
def loader(chromedriver_url: str) -> Iterator[SeleniumDocumentLoader]:
    """One browser for a test module (load_all-style reuse); quit at the end."""
    with SeleniumDocumentLoader(
        new_session(chromedriver_url), timeout=10, allow_private_addresses=True
    ) as loader:
        yield loader


@pytest.fixture
def free_port() -> int:
    """A port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
