"""SeleniumDocumentLoader: web pages rendered by a real browser (JavaScript executed).

The page is loaded in a WebDriver session (by default a headless Chromium started on
first use), the loader waits until the page is ready (the document's ``load`` event,
then optionally a CSS selector or a condition), and the rendered DOM's HTML becomes the
document, as the spec's loader does; an HTML transformer (ragloom-transformer-html)
extracts its text, or pass a ``parser`` (e.g. core's default parser, which hands HTML to
the installed HTML parser). HTTP errors, unreachable hosts and timeouts raise
:class:`DocumentLoadError` naming the URL. The loader is a context manager and always
quits the browser.

Untrusted URLs: by default the loader's Chromium reaches public addresses only. Every
request the browser makes (the page, its redirects and subresources) goes through an
:class:`~ragloom.loaders.selenium.proxy.EgressProxy` that applies the core
:class:`EgressPolicy`; the URL is checked before navigating and the final URL after.

Deadlines: the whole ``load()`` ends within ``timeout`` plus a small grace. A watchdog
kills the browser's process group (chromedriver and every Chromium process) when a
WebDriver command hangs past it (a script loop freezes the renderer, and with it
ChromeDriver), and the next load starts a fresh browser. A reaper process kills the
group when this process dies, so a killed caller leaves no Chromium behind.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ragloom.core.document import URL, Document
from ragloom.core.errors import (
    DocumentLoadError,
    EgressRefusedError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    PluginError,
    RagloomError,
)
from ragloom.core.kit.egress import ALLOW_ALL, DEFAULT_EGRESS_POLICY, EgressPolicy
from ragloom.core.loaders.result import LoadedDocuments, LoadFailure
from ragloom.core.parsers.base import DocumentParser
from ragloom.loaders.selenium.proxy import EgressProxy
from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

__all__ = [
    "CHROMIUM_ARGUMENTS",
    "FINAL_URL",
    "TITLE",
    "SeleniumDocumentLoader",
    "WaitCondition",
    "headless_chromium",
]

logger = logging.getLogger(__name__)

#: Metadata keys besides ``url`` (the URL asked for).
FINAL_URL = "final_url"
TITLE = "title"

DEFAULT_TIMEOUT = 30.0
#: Seconds past ``timeout`` before the watchdog kills a browser that does not answer
#: (room for stopping a slow page and resetting the tab).
GRACE = 2.0
#: Headless Chromium flags: no GPU, no background traffic, no first-run UI; --no-sandbox
#: because containers (and root) cannot use Chromium's sandbox.
CHROMIUM_ARGUMENTS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
#: With the egress proxy: loopback goes through it too, and WebRTC may not send UDP
#: around it.
_PROXY_ARGUMENTS = (
    "--proxy-bypass-list=<-loopback>",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)
#: Kills its own process group (chromedriver and Chromium) when its stdin closes: at
#: close(), and when the loader's process dies for any reason, SIGKILL included.
_REAPER = ("/bin/sh", "-c", "cat >/dev/null; kill -KILL 0")

WaitCondition = str | Callable[[WebDriver], Any]
T = TypeVar("T")

_STATUS_SCRIPT = """
const entry = performance.getEntriesByType('navigation')[0];
return entry && typeof entry.responseStatus === 'number' ? entry.responseStatus : null;
"""
_NET_ERROR = re.compile(r"\bERR_[A-Z_]+\b")


def headless_chromium(*, chromium: str | None = None, chromedriver: str | None = None) -> WebDriver:
    """A headless Chromium session (``chromium``/``chromedriver`` found on ``PATH``);
    no egress filtering: the loader's own browser adds it."""
    return _launch_chromium((), {}, chromium=chromium, chromedriver=chromedriver)


def _launch_chromium(
    arguments: Sequence[str],
    popen_kw: Mapping[str, Any],
    *,
    chromium: str | None = None,
    chromedriver: str | None = None,
) -> WebDriver:
    browser = chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = chromedriver or shutil.which("chromedriver")
    if browser is None or driver_path is None:
        missing = "chromium" if browser is None else "chromedriver"
        raise DocumentLoadError(
            f"{missing} not found on PATH; install Chromium and its driver "
            "(Debian: apt-get install -y chromium chromium-driver) or pass a WebDriver"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    options.unhandled_prompt_behavior = "dismiss"
    for argument in (*CHROMIUM_ARGUMENTS, *arguments):
        options.add_argument(argument)
    try:
        return webdriver.Chrome(
            options=options, service=Service(driver_path, popen_kw=dict(popen_kw))
        )
    except WebDriverException as exc:
        raise DocumentLoadError(
            f"cannot start Chromium ({browser} with {driver_path}): {_first_line(exc)}"
        ) from exc


class _Browser:
    """A WebDriver session and, for the loader's own Chromium, what it takes to end it
    for sure: the process group, the reaper and the egress proxy."""

    def __init__(
        self,
        driver: WebDriver,
        *,
        group: int | None = None,
        reaper: subprocess.Popen[bytes] | None = None,
        proxy: EgressProxy | None = None,
    ) -> None:
        self.driver = driver
        self.group = group
        self.reaper = reaper
        self.proxy = proxy
        self.main_window: str | None = None  # the tab pages load in; known at the first reset

    @classmethod
    def start(cls, policy: EgressPolicy, timeout: float) -> _Browser:
        """Chromium in a process group of its own, watched by a reaper, its traffic
        through an egress proxy unless ``policy`` allows every address."""
        proxy = None if policy.allow_private_addresses else EgressProxy(policy, timeout=timeout)
        arguments = (
            () if proxy is None else (f"--proxy-server=http://{proxy.address}", *_PROXY_ARGUMENTS)
        )
        reaper = None
        popen_kw: dict[str, Any] = {}
        if os.name == "posix":
            reaper = subprocess.Popen(_REAPER, stdin=subprocess.PIPE, process_group=0)
            popen_kw = {"process_group": reaper.pid}
        try:
            driver = _launch_chromium(arguments, popen_kw)
        except BaseException:
            _end_reaper(reaper)
            if proxy is not None:
                proxy.close()
            raise
        return cls(driver, group=None if reaper is None else reaper.pid, reaper=reaper, proxy=proxy)

    def kill(self) -> None:
        """Kill chromedriver and every Chromium process at once (the browser hangs)."""
        if self.group is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.group, signal.SIGKILL)
        self.close()

    def close(self) -> None:
        """Quit the session (bounded by the watchdog), then kill whatever is left."""
        try:
            _within(self.driver.quit, 10.0)
        except (WebDriverException, TimeoutError, OSError) as exc:
            logger.debug("quitting the WebDriver failed: %s", exc)
        _end_reaper(self.reaper)
        if self.proxy is not None:
            self.proxy.close()


def _end_reaper(reaper: subprocess.Popen[bytes] | None) -> None:
    """Close the reaper's stdin: it kills the browser's process group and exits."""
    if reaper is None:
        return
    assert reaper.stdin is not None
    reaper.stdin.close()
    try:
        reaper.wait(10)
    except subprocess.TimeoutExpired:
        reaper.kill()
        reaper.wait()


def _within(call: Callable[[], T], seconds: float) -> T:
    """``call()`` in a daemon thread; :class:`TimeoutError` when it takes longer than
    ``seconds`` (the thread is abandoned: the caller then kills what it waits on)."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append((False, exc))

    worker = threading.Thread(target=run, name="ragloom-selenium-call", daemon=True)
    worker.start()
    worker.join(max(0.0, seconds))
    if not outcome:
        raise TimeoutError(f"no answer within {seconds:.3g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    result: T = value
    return result


class SeleniumDocumentLoader:
    """Loads web pages through a browser so that JavaScript-built content is captured.

    ``driver``: a WebDriver session to use (the loader quits it when closed); by default
    a headless Chromium is started on the first load. ``wait_for``: after the page's
    ``load`` event, wait until this CSS selector matches an element, or this callable
    (given the driver) returns a truthy value. ``timeout``: seconds for the whole
    ``load()`` (navigation, wait, reading the page), enforced by a watchdog.
    ``parser``: when given, the rendered HTML is parsed with it (source: the final URL);
    by default the document's text is the rendered HTML. ``egress``: which addresses
    the browser may reach (default: public ones only, :data:`DEFAULT_EGRESS_POLICY`);
    ``allow_private_addresses=True`` is the opt-out for intranet pages. A ``driver``
    you pass cannot be filtered, so it needs that opt-out.
    """

    def __init__(
        self,
        driver: WebDriver | None = None,
        *,
        wait_for: WaitCondition | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        parser: DocumentParser | None = None,
        egress: EgressPolicy | None = None,
        allow_private_addresses: bool = False,
    ) -> None:
        _check_wait(wait_for)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise InvalidArgumentTypeError(f"timeout must be a number of seconds, got {timeout!r}")
        if not math.isfinite(timeout) or timeout <= 0:
            raise InvalidArgumentError(
                f"timeout must be a positive number of seconds, got {timeout!r}"
            )
        if egress is not None and not isinstance(egress, EgressPolicy):
            raise InvalidArgumentTypeError(f"egress must be an EgressPolicy, got {egress!r}")
        if egress is not None and allow_private_addresses:
            raise InvalidArgumentError(
                "pass either egress or allow_private_addresses=True, not both"
            )
        if egress is None:
            egress = ALLOW_ALL if allow_private_addresses else DEFAULT_EGRESS_POLICY
        if driver is not None and not egress.allow_private_addresses:
            raise InvalidArgumentError(
                "a WebDriver you pass does not go through the egress policy; leave driver "
                "unset (the loader's own Chromium is filtered) or pass "
                "allow_private_addresses=True if every address it can reach is fine"
            )
        self.wait_for = wait_for
        self.timeout = float(timeout)
        self.parser = parser
        self.egress = egress
        self._browser = None if driver is None else _Browser(driver)
        self._own = driver is None
        self._lock = threading.Lock()
        self._broken = False
        self._closed = False

    def __enter__(self) -> SeleniumDocumentLoader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Quit the browser and end every process it started (idempotent); the loader
        cannot load afterwards."""
        self._closed = True
        browser, self._browser = self._browser, None
        if browser is not None:
            browser.close()

    @property
    def _driver(self) -> WebDriver | None:
        return None if self._browser is None else self._browser.driver

    @property
    def driver(self) -> WebDriver:
        """The WebDriver session (started on first use)."""
        return self._session().driver

    def _session(self) -> _Browser:
        self._check_open()
        if self._browser is None:
            self._browser = _Browser.start(self.egress, self.timeout)
        return self._browser

    def _check_open(self) -> None:
        if self._closed:
            raise DocumentLoadError("this SeleniumDocumentLoader is closed; create a new one")
        if self._broken:
            raise DocumentLoadError(
                "the WebDriver passed to this loader stopped answering during an earlier "
                "load and was quit; create a new loader"
            )

    def load(self, url: str, *, wait_for: WaitCondition | None = None) -> Document:
        """Render ``url`` (http or https) and return the page, all within ``timeout``
        (+ :data:`GRACE`); ``wait_for`` overrides the loader's condition for this page.
        After a failure the tab is reset (or the browser replaced) for the next load."""
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
            raise DocumentLoadError(f"{url!r}: only http and https URLs are supported")
        _check_wait(wait_for)
        deadline = time.monotonic() + self.timeout
        self._check_open()  # closed or broken: say so before any network work
        self._check_egress(url, url, deadline)
        condition = wait_for if wait_for is not None else self.wait_for
        browser = self._session()
        try:
            return _within(
                lambda: self._load(browser, url, condition, deadline),
                self._left(deadline) + GRACE,
            )
        except TimeoutError as exc:
            self._abandon(browser)
            raise DocumentLoadError(
                f"{url}: the page did not finish within {self.timeout:g} s and the browser "
                "stopped answering; it was shut down (the next load starts a new one)"
            ) from exc

    def load_all(self, urls: Iterable[str], *, strict: bool = False) -> LoadedDocuments:
        """Load every URL in the one browser; failures go to ``.failures`` unless ``strict``."""
        documents: list[Document] = []
        failures: list[LoadFailure] = []
        for url in urls:
            try:
                documents.append(self.load(url))
            except PluginError:
                raise
            except RagloomError as exc:
                if strict:
                    raise
                logger.warning("skipped %s: %s", url, exc)
                failures.append(LoadFailure(str(url), exc))
        return LoadedDocuments(documents, failures)

    def _left(self, deadline: float) -> float:
        return max(0.1, deadline - time.monotonic())

    def _check_egress(self, url: str, target: str, deadline: float) -> None:
        """Refuse ``target`` (the URL asked for, or where the page ended up) unless the
        policy allows its scheme and every address its host resolves to."""
        if self.egress.allow_private_addresses:
            return
        try:
            parts = self.egress.check_url(target)
            port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
            self.egress.resolve(parts.hostname or "", port, timeout=self._left(deadline))
        except EgressRefusedError as exc:
            where = url if target == url else f"{url}: the page went to {target}"
            raise EgressRefusedError(f"{where}: {exc}") from exc
        except OSError as exc:  # TimeoutError included
            raise DocumentLoadError(f"{target}: cannot load: {exc}") from exc

    def _load(
        self, browser: _Browser, url: str, condition: WaitCondition | None, deadline: float
    ) -> Document:
        """The page, or its error after resetting the tab (runs under the watchdog)."""
        try:
            document = self._read_page(browser.driver, url, condition, deadline)
        except BaseException:
            self._reset(browser, failed=True)
            raise
        self._reset(browser, failed=False)
        return document

    def _read_page(
        self, driver: WebDriver, url: str, condition: WaitCondition | None, deadline: float
    ) -> Document:
        try:
            driver.set_page_load_timeout(self._left(deadline))
            driver.set_script_timeout(self._left(deadline))
            driver.get(url)
        except TimeoutException as exc:
            raise DocumentLoadError(
                f"{url}: the page did not load within {self.timeout:g} s"
            ) from exc
        except WebDriverException as exc:
            raise DocumentLoadError(f"{url}: cannot load: {_first_line(exc)}") from exc
        try:
            final_url = driver.current_url
            self._check_egress(url, final_url, deadline)
            self._check_status(driver, url)
            self._wait(driver, url, condition, deadline)
            html = driver.page_source
            final_url = driver.current_url
            self._check_egress(url, final_url, deadline)
            title = driver.title
        except TimeoutException as exc:
            raise DocumentLoadError(
                f"{url}: the page did not answer within {self.timeout:g} s"
            ) from exc
        except WebDriverException as exc:
            raise DocumentLoadError(f"{url}: the browser failed: {_first_line(exc)}") from exc
        if self.parser is not None:
            document = self.parser.parse(html.encode("utf-8"), source=final_url)
        else:
            document = Document(html)
        document.metadata.update({URL: url, FINAL_URL: final_url, TITLE: title})
        return document

    def _reset(self, browser: _Browser, *, failed: bool) -> None:
        """Close windows the page opened; after a failure also leave the page (stop its
        scripts, timers and pending requests) so the next URL starts clean."""
        driver = browser.driver
        try:
            if browser.main_window is None:
                browser.main_window = driver.current_window_handle
            main = browser.main_window
            for handle in driver.window_handles:
                if handle != main:
                    driver.switch_to.window(handle)
                    driver.close()
            driver.switch_to.window(main)
            if failed:
                driver.set_page_load_timeout(GRACE)
                driver.get("about:blank")
        except WebDriverException as exc:
            logger.warning("resetting the browser failed (%s); starting a new one", exc)
            self._abandon(browser)

    def _abandon(self, browser: _Browser) -> None:
        """Drop a browser that does not answer: kill the loader's own one (the next
        load starts another), quit a passed one in the background and refuse to go on.
        Only while it is still the current one: a late watchdog worker must not end
        the browser that the next load started."""
        with self._lock:
            if self._browser is not browser:
                return
            self._browser = None
        if self._own:
            browser.kill()
        else:
            self._broken = True
            threading.Thread(target=browser.close, daemon=True).start()

    def _check_status(self, driver: WebDriver, url: str) -> None:
        """HTTP errors and browser error pages (no response at all) raise, naming the URL."""
        status = driver.execute_script(_STATUS_SCRIPT)
        if isinstance(status, int) and status >= 400:
            raise DocumentLoadError(f"{url}: HTTP {status}")
        if status == 0:
            text = str(driver.execute_script("return document.documentElement.innerText"))
            error = _NET_ERROR.search(text)
            raise DocumentLoadError(
                f"{url}: cannot load: {error.group(0) if error else 'no response from the server'}"
            )

    def _wait(
        self, driver: WebDriver, url: str, condition: WaitCondition | None, deadline: float
    ) -> None:
        if condition is None:
            return
        if isinstance(condition, str):
            check: Callable[[WebDriver], Any] = expected_conditions.presence_of_element_located(
                (By.CSS_SELECTOR, condition)
            )
            what = f"no element matched {condition!r}"
        else:
            check = condition
            what = f"{getattr(condition, '__name__', 'the wait condition')} stayed false"
        try:
            WebDriverWait(driver, self._left(deadline), poll_frequency=0.1).until(check)
        except TimeoutException as exc:
            raise DocumentLoadError(f"{url}: {what} within {self.timeout:g} s") from exc


def _check_wait(condition: object) -> None:
    if condition is None or callable(condition):
        return
    if not isinstance(condition, str) or not condition.strip():
        raise InvalidArgumentError(
            f"wait_for must be a CSS selector or a callable taking the driver, got {condition!r}"
        )


def _first_line(exc: WebDriverException) -> str:
    message = (exc.msg or str(exc)).strip()
    return message.splitlines()[0] if message else type(exc).__name__
