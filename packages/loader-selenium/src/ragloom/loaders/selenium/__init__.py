"""Selenium document loader for ragloom: web pages rendered by a real browser."""

from ragloom.loaders.selenium.loader import (
    CHROMIUM_ARGUMENTS,
    FINAL_URL,
    TITLE,
    SeleniumDocumentLoader,
    WaitCondition,
    headless_chromium,
)

__all__ = [
    "CHROMIUM_ARGUMENTS",
    "FINAL_URL",
    "TITLE",
    "SeleniumDocumentLoader",
    "WaitCondition",
    "headless_chromium",
]
