"""Fixtures: a GitHub wire-format server per test module and a loader pointed at it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from ragloom.loaders.github import GitHubDocumentLoader
from ragloom.loaders.github.testing import GitHubWireServer

_names = itertools.count()


@pytest.fixture
def server() -> Iterator[GitHubWireServer]:
    with GitHubWireServer(token="test-token") as server:
        yield server


@pytest.fixture
def loader(server: GitHubWireServer) -> Iterator[GitHubDocumentLoader]:
    with GitHubDocumentLoader(
        "test-token", base_url=server.api_url, seconds_between_requests=0, max_rate_limit_wait=5
    ) as loader:
        yield loader


@pytest.fixture
def repo_name() -> str:
    """A fresh repository name per test."""
    return f"repo-{next(_names)}"
