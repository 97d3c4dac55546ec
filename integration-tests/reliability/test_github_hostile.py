"""The GitHub loader's folder-by-folder walk against a broken or hostile server (issue 32,
item 10).

When GitHub truncates a recursive tree, the loader lists it one folder per request.
Before, a subtree that lists itself made that walk loop without bound (4,725 requests
and 171 MB after 300 s). Now a cycle, a nesting deeper than ``max_tree_depth`` and a walk
needing more than ``max_tree_requests`` listings each end in a ``DocumentLoadError``
naming the repository and the folder. The server is the package's wire-format fake on
127.0.0.1; each load runs in a thread given ``GIVE_UP`` seconds, so the old unbounded
walk fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ragloom.core.errors import DocumentLoadError
from ragloom.loaders.github import GitHubDocumentLoader
from ragloom.loaders.github.testing import GitHubWireServer

GIVE_UP = 30.0
FILES = {
    "README.md": b"# Demo",
    "guide/intro.md": b"# Intro",
    "guide/setup/install.md": b"# Install",
    "api/ref.md": b"# Reference",
}


@pytest.fixture
def server() -> Iterator[GitHubWireServer]:
    with GitHubWireServer(tree_limit=4) as server:  # the recursive tree (7) is truncated
        server.add_repository("octo", "docs", FILES)
        yield server


def _loader(server: GitHubWireServer, **options: Any) -> GitHubDocumentLoader:
    return GitHubDocumentLoader(base_url=server.api_url, seconds_between_requests=0, **options)


def _outcome(call: Callable[[], Any]) -> Any:
    """``call()``'s result or exception; the test fails if it has neither in ``GIVE_UP`` s."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(call())
        except Exception as exc:
            box.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(GIVE_UP)
    assert box, f"the load did not end within {GIVE_UP:g} s"
    return box[0]


def test_a_folder_that_lists_itself_ends_in_an_error_naming_it(server: GitHubWireServer) -> None:
    server.loop_tree("octo", "docs", "guide")
    with _loader(server) as loader:
        error = _outcome(lambda: loader.load_documents("octo", "docs"))
    assert isinstance(error, DocumentLoadError)
    assert "octo/docs" in str(error)
    assert "'guide/loop'" in str(error)
    assert "cycle" in str(error)
    assert len(server.requests) < 10  # repository, recursive tree, one listing per folder


def test_a_root_that_lists_itself_ends_in_an_error(server: GitHubWireServer) -> None:
    server.loop_tree("octo", "docs", "", entry="again")
    with _loader(server) as loader:
        error = _outcome(lambda: loader.load_documents("octo", "docs"))
    assert isinstance(error, DocumentLoadError)
    assert "cycle" in str(error)


def test_nesting_deeper_than_max_tree_depth_ends_in_an_error_naming_the_folder(
    server: GitHubWireServer,
) -> None:
    server.put("octo", "docs", "a/b/c/d/e/f/deep.md", b"# Deep")
    with _loader(server, max_tree_depth=4) as loader:
        error = _outcome(lambda: loader.load_documents("octo", "docs"))
    assert isinstance(error, DocumentLoadError)
    assert "octo/docs" in str(error)
    assert "'a/b/c/d/e'" in str(error)
    assert "max_tree_depth=4" in str(error)


def test_a_walk_past_max_tree_requests_ends_in_an_error(server: GitHubWireServer) -> None:
    with _loader(server, max_tree_requests=2) as loader:
        error = _outcome(lambda: loader.load_documents("octo", "docs"))
    assert isinstance(error, DocumentLoadError)
    assert "octo/docs" in str(error)
    assert "max_tree_requests=2" in str(error)


def test_within_the_budgets_a_truncated_tree_loads_whole(server: GitHubWireServer) -> None:
    with _loader(server, max_tree_requests=4, max_tree_depth=2) as loader:
        loaded = _outcome(lambda: loader.load_documents("octo", "docs"))
    assert sorted(d.metadata["path"] for d in loaded) == sorted(FILES)


def test_equal_folders_share_a_tree_sha_and_are_not_taken_for_a_cycle(
    server: GitHubWireServer,
) -> None:
    """Git stores folders of equal content as one tree: not a cycle, each is loaded."""
    server.put("octo", "docs", "guide/setup/more/x.md", b"# X")
    server.put("octo", "docs", "guide/setup/again/more/x.md", b"# X")
    with _loader(server) as loader:
        loaded = _outcome(lambda: loader.load_documents("octo", "docs", "guide/setup"))
    assert sorted(d.metadata["path"] for d in loaded) == [
        "guide/setup/again/more/x.md",
        "guide/setup/install.md",
        "guide/setup/more/x.md",
    ]
