"""The web page in real headless Chromium (Debian's chromium and chromedriver, the flags of
ragloom-loader-selenium) against a ``ragloom serve`` process: type a question, watch the
sources and then the answer arrive piece by piece, open a source."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from ragloom.loaders.selenium import headless_chromium

Served = tuple[subprocess.Popen[bytes], str]  # what conftest's ``serve`` returns
pytestmark = pytest.mark.slow

# Records, in order (one observer, so one ordered list of mutations), what the page adds:
# "sources" for each source item, "text" for each piece of answer text.
RECORDER = """
window.ragloomEvents = [];
new MutationObserver((records) => {
  for (const record of records) {
    for (const node of record.addedNodes) {
      if (record.target.id === "answer" && node.nodeType === Node.TEXT_NODE) {
        window.ragloomEvents.push("text");
      } else if (record.target.id === "sources" && node.nodeName === "LI") {
        window.ragloomEvents.push("sources");
      }
    }
  }
}).observe(document.body, { childList: true, subtree: true });
"""


@pytest.fixture(scope="module")
def page_url(
    copy_index: Callable[[Path], Path],
    serve: Callable[..., Served],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("page")
    process, url = serve(copy_index(folder), folder / "server.log")
    try:
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) in {0, -signal.SIGTERM}


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    driver = headless_chromium()
    driver.set_window_size(1100, 1000)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_streams_an_answer_with_its_sources(
    page_url: str, browser: WebDriver, keys: dict[str, str], tmp_path: Path
) -> None:
    browser.get(f"{page_url}/")
    assert browser.title == "ragloom"
    browser.execute_script(RECORDER)
    browser.find_element(By.ID, "key").send_keys(keys["admin"])
    browser.find_element(By.ID, "question").send_keys("How do I filter by metadata?")
    browser.find_element(By.ID, "send").click()

    wait = WebDriverWait(browser, 30)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#sources li"))
    wait.until(lambda d: d.find_element(By.ID, "send").is_enabled())  # the answer ended
    answer = browser.find_element(By.ID, "answer").text
    assert answer.startswith("No chat model is configured")
    assert not browser.find_elements(By.CSS_SELECTOR, "#answer .error")

    events: list[str] = browser.execute_script("return window.ragloomEvents")
    assert events[0] == "sources"  # the sources arrive before the first token
    assert events.count("text") > 5  # the answer is appended piece by piece
    summaries = browser.find_elements(By.CSS_SELECTOR, "#sources summary")
    assert "filters.md" in summaries[0].text
    assert "chars " in summaries[0].text
    assert "score " in summaries[0].text

    passage = browser.find_element(By.CSS_SELECTOR, "#sources li pre")
    assert not passage.is_displayed()
    summaries[0].click()  # open the cited passage
    assert passage.is_displayed()
    assert passage.text.strip()
    browser.execute_script("window.scrollTo(0, 0)")
    assert browser.save_screenshot(str(tmp_path / "page.png"))


def test_a_wrong_key_shows_the_servers_message(page_url: str, browser: WebDriver) -> None:
    browser.get(f"{page_url}/")
    browser.find_element(By.ID, "key").send_keys("not-the-key")
    browser.find_element(By.ID, "question").send_keys("anything")
    browser.find_element(By.ID, "send").click()
    error = WebDriverWait(browser, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#answer .error")
    )
    assert "API key" in error[0].text
