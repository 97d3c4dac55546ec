"""The docs site builds with ``mkdocs build --strict`` (broken links, missing pages and
docstring errors fail it), with the API reference of ragloom.core and the package pages,
and reads right in a real browser: headless Chromium through the ChromeDriver of
scripts/services/selenium.sh, on the built site served locally (one build for the
module): the docstrings' Sphinx roles are links, not raw ``:class:`` text, and a wide
benchmarks table scrolls to its last column. A screenshot of each page is kept under the
test's tmp dir."""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from ragloom.loaders.selenium import CHROMIUM_ARGUMENTS
from ragloom.testkit.servers import require_server, service_setting

ROOT = Path(__file__).resolve().parent.parent
ROLES = (":class:", ":meth:", ":func:", ":data:", ":attr:", ":mod:", ":exc:")
WIDTH = 1280  # the width at which the issue saw tables cut


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("docs") / "site"
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return site


@pytest.fixture(scope="module")
def site_url(site: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    url = require_server(
        service_setting("RAGLOOM_SELENIUM_URL"),
        "bash scripts/services/selenium.sh start",
        variable="RAGLOOM_SELENIUM_URL",
    )
    options = webdriver.ChromeOptions()
    for argument in CHROMIUM_ARGUMENTS:
        options.add_argument(argument)
    driver = webdriver.Remote(command_executor=url, options=options)
    driver.set_window_size(WIDTH, 900)
    try:
        yield driver
    finally:
        driver.quit()


def test_mkdocs_build_strict(site: Path) -> None:
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    for name in ("EmbeddingStoreIngestor", "InMemoryEmbeddingStore", "RagAssistant"):
        assert f'id="ragloom.core.{name}"' in reference, name
    assert (site / "splitting" / "index.html").is_file()
    assert (site / "packages" / "store-pgvector" / "index.html").is_file()


def test_api_reference_links_the_sphinx_roles(
    site_url: str, browser: WebDriver, tmp_path: Path
) -> None:
    browser.get(f"{site_url}/reference/")
    browser.save_screenshot(str(tmp_path / "reference.png"))
    text = browser.find_element(By.TAG_NAME, "body").text
    raw = [role for role in ROLES if role in text]
    assert not raw, f"raw Sphinx roles shown as text in the API reference: {raw}"
    # e.g. RagAssistant's docstring names :class:`Metadata`-like roles: they are links now
    links = browser.find_elements(By.CSS_SELECTOR, ".doc-contents a.autorefs-internal code")
    assert len(links) >= 100, f"only {len(links)} cross-reference links in the API reference"


def test_wide_benchmark_tables_scroll_to_their_last_column(
    site_url: str, browser: WebDriver, tmp_path: Path
) -> None:
    browser.get(f"{site_url}/benchmarks/")
    browser.save_screenshot(str(tmp_path / "benchmarks.png"))
    tables = browser.find_elements(By.CSS_SELECTOR, ".rst-content table")
    content = browser.find_element(By.CSS_SELECTOR, ".rst-content")
    content_right = content.rect["x"] + content.rect["width"]
    wide = 0
    for table in tables:
        state = browser.execute_script(
            "const t = arguments[0]; const cell = t.querySelector('tr > :last-child');"
            " const style = getComputedStyle(t);"
            " return {scroll: t.scrollWidth, client: t.clientWidth, overflow: style.overflowX,"
            " right: t.getBoundingClientRect().right,"
            " cellRight: cell.getBoundingClientRect().right};",
            table,
        )
        if state["scroll"] > state["client"]:  # wider than the page: it must scroll
            wide += 1
            assert state["overflow"] in ("auto", "scroll"), state
            browser.execute_script("arguments[0].scrollLeft = arguments[0].scrollWidth", table)
            last = browser.execute_script(
                "const t = arguments[0]; return t.querySelector('tr > :last-child')"
                ".getBoundingClientRect().right;",
                table,
            )
            assert last <= state["right"] + 1, (state, last)  # scrolled into view
        else:  # fits: its last column is inside the content area
            assert state["cellRight"] <= content_right + 1, state
    assert tables, "no tables on the benchmarks page"
    assert wide, "no table wider than the page at 1280 px (the scrolling is not exercised)"
