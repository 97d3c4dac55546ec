"""SeleniumDocumentLoader against a real headless Chromium on locally served pages."""

from __future__ import annotations

import time
from collections.abc import Callable

import psutil
import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from ragloom.core.errors import DocumentLoadError
from ragloom.loaders.selenium import SeleniumDocumentLoader

pytestmark = pytest.mark.integration
PHRASE = "Quokkas are rendered by JavaScript"


def test_renders_a_page_with_its_metadata(loader: SeleniumDocumentLoader, site: str) -> None:
    document = loader.load(f"{site}/static.html")
    assert "<p>Plain server-rendered text.</p>" in document.text
    assert document.metadata == {
        "url": f"{site}/static.html",
        "final_url": f"{site}/static.html",
        "title": "Static page",
    }


def test_waits_for_javascript_rendered_content(loader: SeleniumDocumentLoader, site: str) -> None:
    url = f"{site}/delayed.html"
    assert PHRASE not in loader.load(url).text  # the load event comes before the text
    assert f'<p id="late">{PHRASE}.</p>' in loader.load(url, wait_for="#late").text

    def rendered(driver: WebDriver) -> bool:
        return PHRASE in driver.page_source

    assert PHRASE in loader.load(url, wait_for=rendered).text


def test_redirect_gives_the_final_url(loader: SeleniumDocumentLoader, site: str) -> None:
    document = loader.load(f"{site}/redirect")
    assert document.metadata["url"] == f"{site}/redirect"
    assert document.metadata["final_url"] == f"{site}/static.html"
    assert document.metadata["title"] == "Static page"


def test_http_error_names_the_url(loader: SeleniumDocumentLoader, site: str) -> None:
    with pytest.raises(DocumentLoadError, match=f"{site}/missing: HTTP 404"):
        loader.load(f"{site}/missing")


def test_unreachable_url_is_named(loader: SeleniumDocumentLoader, free_port: int) -> None:
    url = f"http://127.0.0.1:{free_port}/page"
    with pytest.raises(DocumentLoadError, match=f"{url}: cannot load: .*ERR_CONNECTION_REFUSED"):
        loader.load(url)


def test_wait_that_never_succeeds_names_url_and_selector(
    session: Callable[[], WebDriver], site: str
) -> None:
    with (
        SeleniumDocumentLoader(session(), timeout=1.5, allow_private_addresses=True) as loader,
        pytest.raises(DocumentLoadError, match=r"static.html: no element matched '#never'"),
    ):
        loader.load(f"{site}/static.html", wait_for="#never")


def test_load_all_reuses_one_browser_and_keeps_good_pages(
    loader: SeleniumDocumentLoader, site: str
) -> None:
    session = loader.driver.session_id
    urls = [f"{site}/static.html", f"{site}/missing", f"{site}/redirect"]
    loaded = loader.load_all(urls)
    assert [d.metadata["url"] for d in loaded] == [urls[0], urls[2]]
    [failure] = loaded.failures
    assert failure.source == urls[1]
    assert "HTTP 404" in str(failure.error)
    assert loader.driver.session_id == session
    with pytest.raises(DocumentLoadError, match="missing"):
        loader.load_all(urls, strict=True)


def test_own_chromium_times_out_on_a_hanging_page_and_is_cleaned_up(
    chromedriver_url: str, site: str
) -> None:
    """driver=None: the loader starts its own Chromium; a page that never finishes
    loading fails with the URL, the browser stays usable, and close() quits it."""
    loader = SeleniumDocumentLoader(timeout=3, allow_private_addresses=True)
    with loader:
        started = time.monotonic()
        with pytest.raises(
            DocumentLoadError, match=f"{site}/hang: the page did not load within 3 s"
        ):
            loader.load(f"{site}/hang")
        assert time.monotonic() - started < 30
        assert loader.load(f"{site}/static.html").metadata["title"] == "Static page"
        process = psutil.Process(loader.driver.service.process.pid)  # type: ignore[attr-defined]
        children = process.children(recursive=True)
        assert any("chrom" in child.name() for child in children)
    _, alive = psutil.wait_procs([process, *children], timeout=10)
    assert alive == []
    with pytest.raises(DocumentLoadError, match="closed"):
        loader.load(f"{site}/static.html")
