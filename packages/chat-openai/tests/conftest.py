"""Fixtures: the local wire-format server, recorded retry waits, and the models a test
made closed after it.

pytest runs with ``--import-mode=importlib``, which does not put this directory on
``sys.path``; the tests import the helper modules by their (unique) names, so add it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from openai_helpers import API_KEY, OPEN_MODELS, Sleeps

from ragloom.chat_models.openai.testing import WireServer


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own keys and settings never reach the tests (or a real server)."""
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "RAGLOOM_CHAT_API_KEY",
        "RAGLOOM_CHAT_BASE_URL",
        "RAGLOOM_CHAT_MODEL",
        "RAGLOOM_CHAT_MODEL_NAME",
        "RAGLOOM_EMBEDDING_API_KEY",
        "RAGLOOM_EMBEDDING_BASE_URL",
        "RAGLOOM_EMBEDDING_MODEL_NAME",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _close_models() -> Iterator[None]:
    """The models a test made (``closed_after_test``) are closed when it ends."""
    yield
    while OPEN_MODELS:
        OPEN_MODELS.pop().close()


@pytest.fixture(scope="session")
def shared_server() -> Iterator[WireServer]:
    """One server for the conformance suites (no scripted failures there)."""
    with WireServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def server() -> Iterator[WireServer]:
    """A fresh server per test, for scripted failures and request inspection."""
    with WireServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()
