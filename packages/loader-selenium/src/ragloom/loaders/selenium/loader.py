"""SeleniumDocumentLoader: web pages rendered by a real browser (JavaScript executed).

The page is loaded in a WebDriver session (by default a headless Chromium started on
first use), the loader waits until the page is ready (the document's ``load`` event,
then optionally a CSS selector or a condition), and the rendered DOM's HTML becomes the
document, as the spec's loader does; an HTML transformer (ragloom-transformer-html)
extracts its text, or pass a ``parser`` (e.g. core's default parser, which hands HTML to
the installed HTML parser). HTTP errors, unreachable hosts and timeouts raise
:class:`DocumentLoadError` naming the URL. The loader is a context manager and always
quits the browser.
"""

from __future__ import annotations

import logging
import math
import re
import shutil
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from ragloom.core.document import URL, Document
from ragloom.core.errors import (
    DocumentLoadError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    PluginError,
    RagloomError,
)
from ragloom.core.loaders.result import LoadedDocuments, LoadFailure
from ragloom.core.parsers.base import DocumentParser
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

WaitCondition = str | Callable[[WebDriver], Any]

_STATUS_SCRIPT = """
const entry = performance.getEntriesByType('navigation')[0];
return entry && typeof entry.responseStatus === 'number' ? entry.responseStatus : null;
"""
_NET_ERROR = re.compile(r"\bERR_[A-Z_]+\b")


def headless_chromium(*, chromium: str | None = None, chromedriver: str | None = None) -> WebDriver:
    """A headless Chromium session (``chromium``/``chromedriver`` found on ``PATH``)."""
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
    for argument in CHROMIUM_ARGUMENTS:
        options.add_argument(argument)
    try:
        return webdriver.Chrome(options=options, service=Service(driver_path))
    except WebDriverException as exc:
        raise DocumentLoadError(
            f"cannot start Chromium ({browser} with {driver_path}): {_first_line(exc)}"
        ) from exc


class SeleniumDocumentLoader:
    """Loads web pages through a browser so that JavaScript-built content is captured.

    ``driver``: a WebDriver session to use (the loader quits it when closed); by default
    a headless Chromium is started on the first load. ``wait_for``: after the page's
    ``load`` event, wait until this CSS selector matches an element, or this callable
    (given the driver) returns a truthy value. ``timeout``: seconds for the page load
    and for that wait. ``parser``: when given, the rendered HTML is parsed with it
    (source: the final URL); by default the document's text is the rendered HTML.
    """

    def __init__(
        self,
        driver: WebDriver | None = None,
        *,
        wait_for: WaitCondition | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        parser: DocumentParser | None = None,
    ) -> None:
        _check_wait(wait_for)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise InvalidArgumentTypeError(f"timeout must be a number of seconds, got {timeout!r}")
        if not math.isfinite(timeout) or timeout <= 0:
            raise InvalidArgumentError(
                f"timeout must be a positive number of seconds, got {timeout!r}"
            )
        self.wait_for = wait_for
        self.timeout = float(timeout)
        self.parser = parser
        self._driver = driver
        self._configured = False
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
        """Quit the browser (idempotent); the loader cannot load afterwards."""
        self._closed = True
        driver, self._driver = self._driver, None
        if driver is not None:
            try:
                driver.quit()
            except WebDriverException as exc:  # already gone: nothing left to clean up
                logger.debug("quitting the WebDriver failed: %s", exc)

    @property
    def driver(self) -> WebDriver:
        """The WebDriver session (started on first use)."""
        if self._closed:
            raise DocumentLoadError("this SeleniumDocumentLoader is closed; create a new one")
        if self._driver is None:
            self._driver = headless_chromium()
        if not self._configured:
            self._driver.set_page_load_timeout(self.timeout)
            self._configured = True
        return self._driver

    def load(self, url: str, *, wait_for: WaitCondition | None = None) -> Document:
        """Render ``url`` (http or https) and return the page; ``wait_for`` overrides
        the loader's condition for this page."""
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
            raise DocumentLoadError(f"{url!r}: only http and https URLs are supported")
        _check_wait(wait_for)
        driver = self.driver
        try:
            driver.get(url)
        except TimeoutException as exc:
            self._stop_loading()
            raise DocumentLoadError(
                f"{url}: the page did not load within {self.timeout:g} s"
            ) from exc
        except WebDriverException as exc:
            raise DocumentLoadError(f"{url}: cannot load: {_first_line(exc)}") from exc
        try:
            self._check_status(url)
            self._wait(url, wait_for if wait_for is not None else self.wait_for)
            html = driver.page_source
            final_url = driver.current_url
            title = driver.title
        except WebDriverException as exc:
            raise DocumentLoadError(f"{url}: the browser failed: {_first_line(exc)}") from exc
        if self.parser is not None:
            document = self.parser.parse(html.encode("utf-8"), source=final_url)
        else:
            document = Document(html)
        document.metadata.update({URL: url, FINAL_URL: final_url, TITLE: title})
        return document

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

    def _check_status(self, url: str) -> None:
        """HTTP errors and browser error pages (no response at all) raise, naming the URL."""
        status = self.driver.execute_script(_STATUS_SCRIPT)
        if isinstance(status, int) and status >= 400:
            raise DocumentLoadError(f"{url}: HTTP {status}")
        if status == 0:
            text = str(self.driver.execute_script("return document.documentElement.innerText"))
            error = _NET_ERROR.search(text)
            raise DocumentLoadError(
                f"{url}: cannot load: {error.group(0) if error else 'no response from the server'}"
            )

    def _wait(self, url: str, condition: WaitCondition | None) -> None:
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
            WebDriverWait(self.driver, self.timeout, poll_frequency=0.1).until(check)
        except TimeoutException as exc:
            raise DocumentLoadError(f"{url}: {what} within {self.timeout:g} s") from exc

    def _stop_loading(self) -> None:
        """After a load timeout, stop the page so the next load starts clean."""
        try:
            self.driver.execute_script("window.stop();")
        except WebDriverException as exc:
            logger.debug("stopping the page failed: %s", exc)


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
