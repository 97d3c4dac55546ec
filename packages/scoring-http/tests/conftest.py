"""Fixtures: the local TEI and Jina-style wire-format servers, recorded retry waits."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragloom.core.scoring_batches import RetryPolicy
from ragloom.scoring_models.http.testing import jina_server, tei_server
from ragloom.testkit.wire import WireServer


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("URL", "API", "MODEL", "API_KEY", "BATCH_SIZE"):
        monkeypatch.delenv(f"RAGLOOM_RERANK_{name}", raising=False)


@pytest.fixture
def tei() -> Iterator[WireServer]:
    with tei_server() as running:
        yield running


@pytest.fixture
def jina() -> Iterator[WireServer]:
    with jina_server() as running:
        yield running


@pytest.fixture
def sleeps() -> list[float]:
    """The waits the retry policy asked for (nothing really sleeps)."""
    return []


@pytest.fixture
def retry(sleeps: list[float]) -> RetryPolicy:
    return RetryPolicy(max_retries=2, initial_delay=0.5, jitter=0.0, sleep=sleeps.append)
