"""The ragloom DocumentLoader on selenium."""

from ragloom.loaders.selenium.loader import (
    SeleniumDocumentLoader,
)

__all__ = ["SeleniumDocumentLoader"]
