"""ragloom.loaders.selenium: __all__ pinned; settings and URLs checked before any browser starts."""

from typing import cast

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

import ragloom.loaders.selenium as package
from ragloom.core.errors import DocumentLoadError, InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.kit.egress import ALLOW_ALL, DEFAULT_EGRESS_POLICY, EgressPolicy
from ragloom.loaders.selenium import SeleniumDocumentLoader

EXPECTED_ALL = [
    "CHROMIUM_ARGUMENTS",
    "FINAL_URL",
    "SeleniumDocumentLoader",
    "TITLE",
    "WaitCondition",
    "headless_chromium",
]


def test_all_is_pinned_and_importable() -> None:
    assert sorted(package.__all__) == EXPECTED_ALL
    namespace: dict[str, object] = {}
    exec(f"from {package.__name__} import *", namespace)
    assert set(EXPECTED_ALL) <= set(namespace)


def test_bad_settings() -> None:
    with pytest.raises(InvalidArgumentError, match="timeout"):
        SeleniumDocumentLoader(timeout=0)
    with pytest.raises(InvalidArgumentTypeError, match="timeout"):
        SeleniumDocumentLoader(timeout="5")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="wait_for"):
        SeleniumDocumentLoader(wait_for="  ")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "javascript:alert(1)", "ftp://x/y", ""])
def test_only_http_urls_and_no_browser_for_them(url: str) -> None:
    loader = SeleniumDocumentLoader()
    with pytest.raises(DocumentLoadError, match="only http and https"):
        loader.load(url)
    assert loader._driver is None  # refused before a browser was started
    loader.close()


def test_closed_loader_refuses_to_load() -> None:
    loader = SeleniumDocumentLoader()
    loader.close()
    with pytest.raises(DocumentLoadError, match="closed"):
        loader.load("http://127.0.0.1:1/")


def test_egress_settings() -> None:
    """Public addresses only by default; one opt-out; a passed driver is not filtered,
    so it needs that opt-out."""
    assert SeleniumDocumentLoader().egress is DEFAULT_EGRESS_POLICY
    assert SeleniumDocumentLoader(allow_private_addresses=True).egress is ALLOW_ALL
    with pytest.raises(InvalidArgumentError, match="not both"):
        SeleniumDocumentLoader(egress=ALLOW_ALL, allow_private_addresses=True)
    with pytest.raises(InvalidArgumentTypeError, match="EgressPolicy"):
        SeleniumDocumentLoader(egress="public")  # type: ignore[arg-type]
    driver = cast(WebDriver, object())  # refused before the driver is used
    with pytest.raises(InvalidArgumentError, match="does not go through the egress policy"):
        SeleniumDocumentLoader(driver)
    SeleniumDocumentLoader(driver, egress=EgressPolicy(allow_private_addresses=True))
