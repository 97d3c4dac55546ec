"""Fixtures: the local Cohere wire-format server, a model on it, recorded retry waits."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragloom.core.scoring_batches import RetryPolicy
from ragloom.scoring_models.cohere import CohereScoringModel
from ragloom.scoring_models.cohere.testing import API_KEY, MODEL, cohere_server
from ragloom.testkit.wire import WireServer


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own keys never reach the tests (or Cohere)."""
    for name in ("CO_API_KEY", "COHERE_API_KEY", "RAGLOOM_COHERE_MODEL", "RAGLOOM_COHERE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[WireServer]:
    with cohere_server() as running:
        yield running


@pytest.fixture
def sleeps() -> list[float]:
    """The waits the retry policy asked for (nothing really sleeps)."""
    return []


@pytest.fixture
def retry(sleeps: list[float]) -> RetryPolicy:
    return RetryPolicy(max_retries=2, initial_delay=0.5, jitter=0.0, sleep=sleeps.append)


@pytest.fixture
def model(server: WireServer, retry: RetryPolicy) -> Iterator[CohereScoringModel]:
    with CohereScoringModel(MODEL, api_key=API_KEY, base_url=server.url, retry=retry) as model:
        yield model
