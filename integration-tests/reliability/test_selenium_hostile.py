"""SeleniumDocumentLoader against hostile pages (issue 32 items 2, 4 and 13), with the
loader's own headless Chromium; every server is on loopback.

A resolver hook stands in for DNS: ``public.test`` is 127.0.0.2 (let through by
``allowed_networks``, as a public site would be), ``internal.test`` is 127.0.0.1, and
``rebind.test`` answers 127.0.0.2 once, then 127.0.0.1 (DNS rebinding). The "secret"
server on 127.0.0.1 records every request: it must never be contacted.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psutil
import pytest

from ragloom.core.errors import DocumentLoadError, EgressRefusedError
from ragloom.core.kit.egress import EgressPolicy
from ragloom.loaders.selenium import SeleniumDocumentLoader
from ragloom.loaders.selenium.loader import GRACE

TIMEOUT = 3.0
#: The watchdog fires at TIMEOUT + GRACE; killing the browser takes well under a second.
BOUND = TIMEOUT + GRACE + 1.5
DOM_NODES = 1_000_000


@dataclass
class Site:
    """A loopback HTTP server and the paths it was asked for."""

    server: ThreadingHTTPServer
    hits: list[str] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)


def _pages(secret: str) -> dict[str, str]:
    """The public site's pages; ``secret`` is the base URL of the server nobody may reach."""
    internal = secret.replace("127.0.0.1", "internal.test")
    return {
        "/good": "<title>Good</title><p>Good page.</p>",
        "/embed": "<title>Embed</title>"
        f"<img src='{secret}/img'><script src='{secret}/script.js'></script>"
        f"<iframe src='{secret}/frame'></iframe><link rel='stylesheet' href='{secret}/css'>"
        f"<img src='/to?{secret}/redirected-img'><img src='/pixel'>"
        f"<img src='{secret.replace('http', 'https')}/tls-img'>"
        "<script>addEventListener('load', () => {"
        f" const xhr = new Promise(done => {{ const r = new XMLHttpRequest();"
        f" r.onloadend = done; r.open('GET', '{secret}/xhr'); r.send(); }});"
        f" try {{ new WebSocket('{secret.replace('http', 'ws')}/ws'); }} catch (e) {{}}"
        f" Promise.allSettled([fetch('{secret}/fetch'), fetch('{internal}/fetch'), xhr])"
        " .then(() => { const p = document.createElement('p'); p.id = 'settled';"
        " document.body.append(p); }); });</script>",
        "/loop-after-load": "<title>Loop</title><script>addEventListener('load',"
        " () => setTimeout(() => { while (true) {} }, 0));</script>",
        "/loop-inline": "<title>Inline loop</title><script>while (true) {}</script>",
        "/dom": "<title>DOM</title><script>const f = document.createDocumentFragment();"
        f" for (let i = 0; i < {DOM_NODES}; i++) f.appendChild(document.createElement('b'));"
        " document.body.appendChild(f);</script>",
        "/alerts": "<title>Alerts</title><script>addEventListener('load',"
        " () => setTimeout(() => { while (true) alert('again'); }, 0));</script>",
        "/pending": "<title>Pending</title>" + "".join(f"<img src='/hang?{i}'>" for i in range(10)),
        "/popups": "<title>Popups</title><script>"
        "for (let i = 0; i < 20; i++) window.open('/good?' + i);</script>",
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def do_GET(self) -> None:
        site: Site = self.server.site
        site.hits.append(self.path)
        path, _, query = self.path.partition("?")
        pages: dict[str, str] = self.server.pages
        if path == "/to":  # a redirect to the URL in the query
            self._send(302, b"", location=query)
        elif path == "/hang":  # headers, then nothing until the test ends
            self._send(200, b"", length=1000)
            site.stopping.wait(30)
        elif path in pages:
            self._send(200, f"<!doctype html><html><body>{pages[path]}</body></html>".encode())
        elif not pages or path == "/pixel":  # the secret server answers everything
            self._send(200, b"SECRET")
        else:
            self._send(404, b"")

    def _send(
        self, status: int, body: bytes, *, location: str = "", length: int | None = None
    ) -> None:
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _RecordingServer(ThreadingHTTPServer):
    """Records every connection, also those that never become an HTTP request (TLS)."""

    site: Site

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.site.hits.append(f"connection from {client_address[0]}")
        return True


def _serve(host: str, port: int, pages: dict[str, str]) -> Site:
    server = _RecordingServer((host, port), _Handler)
    server.daemon_threads = True
    site = Site(server)
    server.site = site
    server.pages = pages  # type: ignore[attr-defined]
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return site


@dataclass
class Sites:
    secret: Site
    public: Site
    port: int

    @property
    def secret_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def public_url(self) -> str:
        return f"http://public.test:{self.port}"


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    """The secret server on 127.0.0.1:P and the public site on 127.0.0.2:P (same port,
    so that a rebound name reaches the secret server if anything connects to it)."""
    secret = _serve("127.0.0.1", 0, {})
    port = secret.server.server_address[1]
    public = _serve("127.0.0.2", port, _pages(f"http://127.0.0.1:{port}"))
    yield Sites(secret, public, port)
    for site in (secret, public):
        site.stopping.set()
        site.server.shutdown()
        site.server.server_close()


class Resolver:
    """The test's DNS: fixed names, a rebinding name, and the system for the rest
    (address literals and ``localhost`` only: nothing leaves loopback)."""

    def __init__(self) -> None:
        self.rebind_answers = 0

    def __call__(self, host: str, port: int) -> Sequence[tuple[Any, ...]]:
        fixed = {
            "public.test": "127.0.0.2",
            "internal.test": "127.0.0.1",
            "metadata.google.internal": "169.254.169.254",
        }
        if host == "rebind.test":
            self.rebind_answers += 1
            fixed[host] = "127.0.0.2" if self.rebind_answers == 1 else "127.0.0.1"
        if host in fixed:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (fixed[host], port))]
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def _policy(resolver: Resolver | None = None) -> EgressPolicy:
    """Public addresses only, plus 127.0.0.2 standing in for the public internet."""
    return EgressPolicy(allowed_networks=("127.0.0.2/32",), resolver=resolver or Resolver())


def _browser_processes() -> list[psutil.Process]:
    """This test process's Chromium and ChromeDriver processes (zombies excluded)."""
    return [
        child
        for child in psutil.Process().children(recursive=True)
        if "chrom" in child.name() and child.status() != psutil.STATUS_ZOMBIE
    ]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/secret",
        "http://localhost:{port}/secret",
        "http://127.1:{port}/secret",
        "http://2130706433:{port}/secret",
        "http://0.0.0.0:{port}/secret",
        "http://[::1]:{port}/secret",
        "http://internal.test:{port}/secret",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
    ],
)
def test_internal_urls_are_refused_before_a_browser_starts(sites: Sites, url: str) -> None:
    url = url.format(port=sites.port)
    hits = len(sites.secret.hits)
    loader = SeleniumDocumentLoader(egress=EgressPolicy(resolver=Resolver()))
    with pytest.raises(EgressRefusedError, match="refused by the egress policy") as error:
        loader.load(url)
    assert url in str(error.value)
    assert loader._driver is None  # refused before a browser was started
    loader.close()
    assert len(sites.secret.hits) == hits


def test_the_default_loader_refuses_loopback(sites: Sites) -> None:
    with SeleniumDocumentLoader() as loader, pytest.raises(EgressRefusedError, match="loopback"):
        loader.load(f"{sites.secret_url}/secret")
    assert sites.secret.hits == []


def test_redirects_and_subresources_to_internal_addresses_are_blocked(sites: Sites) -> None:
    """The page loads through the filtering proxy; its image, script, iframe, stylesheet,
    fetch, XHR, WebSocket and redirected image aimed at 127.0.0.1 never arrive; redirects
    and a rebinding name fail naming the URL; a good page still loads."""
    public, secret = sites.public_url, sites.secret_url
    with SeleniumDocumentLoader(egress=_policy(), timeout=15) as loader:
        page = loader.load(f"{public}/embed", wait_for="#settled")
        assert page.metadata["title"] == "Embed"
        assert "/pixel" in sites.public.hits  # allowed subresources do go through
        for target in (
            f"{secret}/secret",
            f"http://localhost:{sites.port}/secret",
            f"http://2130706433:{sites.port}/secret",
            f"http://internal.test:{sites.port}/secret",
        ):
            url = f"{public}/to?{target}"
            with pytest.raises(EgressRefusedError, match="refused by the egress policy") as error:
                loader.load(url)
            assert url in str(error.value)
        with pytest.raises(EgressRefusedError, match="rebind.test.*loopback"):
            loader.load(f"http://rebind.test:{sites.port}/good")
        assert loader.load(f"{public}/good").metadata["title"] == "Good"
    assert sites.secret.hits == []


def test_hanging_pages_end_by_the_deadline_and_leave_no_process(sites: Sites) -> None:
    """A script loop after load, a script loop while parsing and a 1M-node DOM each end
    within TIMEOUT + GRACE with an error naming the URL. A script loop never lets the
    browser answer: its processes are killed and the next page loads in a new browser.
    The 1M-node page is slow, not endless: when the tab's reset to about:blank answers
    within GRACE the browser is kept (as documented: the tab is reset, or the browser
    replaced), otherwise it is killed; either way close() leaves nothing behind."""
    public = sites.public_url
    seen: list[psutil.Process] = []
    with SeleniumDocumentLoader(egress=_policy(), timeout=TIMEOUT) as loader:
        for path in ("/loop-after-load", "/loop-inline", "/dom"):
            assert loader.load(f"{public}/good").metadata["title"] == "Good"
            session = loader.driver.session_id
            browser = _browser_processes()
            seen += browser
            assert len(browser) >= 2  # chromedriver and Chromium
            started = time.monotonic()
            with pytest.raises(DocumentLoadError, match=f"{public}{path}: .*within 3 s") as error:
                loader.load(f"{public}{path}")
            elapsed = time.monotonic() - started
            print(f"{path}: failed after {elapsed:.1f} s: {error.value}")
            assert elapsed < BOUND
            if path == "/dom" and "was shut down" not in str(error.value):
                # The page-load timeout, then a reset that answered in time: same session,
                # a blank tab (Chromium may swap its renderer process; nothing is killed).
                assert "did not load within 3 s" in str(error.value)
                assert loader.driver.session_id == session
                assert loader.driver.current_url == "about:blank"
                assert len(loader.driver.window_handles) == 1
                continue
            _, alive = psutil.wait_procs(browser, timeout=5)
            assert alive == []
            assert loader.driver.session_id != session
        assert loader.load(f"{public}/good").metadata["title"] == "Good"
        seen += _browser_processes()
    _, alive = psutil.wait_procs(seen, timeout=10)
    assert alive == []


def test_load_all_recovers_after_each_bad_page(sites: Sites) -> None:
    """Bad, good, bad, good...: the good pages load, the bad ones fail with their URL,
    and the 20 windows a page opened are closed."""
    public = sites.public_url
    bad = ["/alerts", "/pending", "/loop-after-load"]
    urls = [f"{public}{path}" for path in (bad[0], "/good", bad[1], "/popups", bad[2], "/good")]
    with SeleniumDocumentLoader(egress=_policy(), timeout=TIMEOUT) as loader:
        started = time.monotonic()
        loaded = loader.load_all(urls)
        print(f"load_all of {len(urls)} pages: {time.monotonic() - started:.1f} s")
        assert [document.metadata["title"] for document in loaded] == ["Good", "Popups", "Good"]
        assert [failure.source for failure in loaded.failures] == [
            f"{public}{path}" for path in bad
        ]
        for failure in loaded.failures:
            assert isinstance(failure.error, DocumentLoadError)
            assert failure.source in str(failure.error)
        assert len(loader.driver.window_handles) == 1


_CALLER = """
import sys
from ragloom.loaders.selenium import SeleniumDocumentLoader
loader = SeleniumDocumentLoader(timeout=120, allow_private_addresses=True)
loader.driver
print("started", flush=True)
loader.load(sys.argv[1])
"""


def test_a_killed_caller_leaves_no_browser_process(sites: Sites) -> None:
    """The probe's caller was killed while load() hung: Chromium stayed. Now the
    reaper ends the browser's process group when the caller dies."""
    url = f"http://127.0.0.2:{sites.port}/loop-after-load"
    caller = subprocess.Popen(
        [sys.executable, "-c", _CALLER, url], stdout=subprocess.PIPE, text=True
    )
    try:
        assert caller.stdout is not None
        assert caller.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 10
        while "/loop-after-load" not in sites.public.hits and time.monotonic() < deadline:
            time.sleep(0.1)
        browser = [
            child
            for child in psutil.Process(caller.pid).children(recursive=True)
            if "chrom" in child.name()
        ]
        assert len(browser) >= 2
    finally:
        caller.kill()
        caller.wait()
    _, alive = psutil.wait_procs(browser, timeout=10)
    assert alive == []
