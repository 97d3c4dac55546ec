"""``timeout`` bounds each request as a whole and ``max_bytes`` caps each answer: a
server dripping its answers (each read well within the socket timeout) is cut off after
about ``timeout`` seconds, and an answer over ``max_bytes`` is refused, naming the file."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from ragloom.core.bounded_read import DEFAULT_MAX_RESPONSE_BYTES
from ragloom.core.errors import DocumentLoadError, InvalidArgumentError
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.github import GitHubDocumentLoader
from ragloom.loaders.github.testing import GitHubWireServer, blob_sha

TEXT = TextDocumentParser()
SLOW = b"slow " * 800  # its JSON answer (~6 KB) drips for ~20 s at 64 bytes per 0.2 s
DRIP = {"chunk_size": 64, "interval": 0.2}
# far below the ~20 s the dripped answer takes, far above timeout=1 plus one read
UPPER_BOUND = 8.0


@pytest.fixture
def demo(server: GitHubWireServer) -> GitHubWireServer:
    server.add_repository(
        "octo",
        "demo",
        {"a.md": b"alpha", "slow.md": SLOW, "z.md": b"zeta", "big.md": b"b" * 60_000},
    )
    return server


def bounded_loader(server: GitHubWireServer, **options: object) -> GitHubDocumentLoader:
    return GitHubDocumentLoader(
        "test-token",
        base_url=server.api_url,
        seconds_between_requests=0,
        timeout=1,
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture
def loader(demo: GitHubWireServer) -> Iterator[GitHubDocumentLoader]:
    with bounded_loader(demo) as loader:
        yield loader


def test_a_dripping_file_fails_after_about_the_timeout(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    demo.drip("/contents/slow.md", **DRIP)  # type: ignore[arg-type]
    started = time.monotonic()
    with pytest.raises(DocumentLoadError) as caught:
        loader.load_document("octo", "demo", "slow.md")
    assert time.monotonic() - started < UPPER_BOUND
    message = str(caught.value)
    assert "octo/demo: 'slow.md'" in message
    assert "did not complete the request within timeout=1 s" in message
    # the loader stays usable: the next call is answered normally
    assert loader.load_document("octo", "demo", "a.md").text == "alpha"


def test_load_documents_keeps_the_good_files_and_reports_the_dripping_one(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    demo.drip(f"/git/blobs/{blob_sha(SLOW)}", **DRIP)  # type: ignore[arg-type]
    started = time.monotonic()
    loaded = loader.load_documents("octo", "demo", parser=TEXT)
    assert time.monotonic() - started < UPPER_BOUND
    assert [d.metadata["path"] for d in loaded] == ["a.md", "big.md", "z.md"]
    [failure] = loaded.failures
    assert failure.source.endswith("/blob/main/slow.md")
    assert isinstance(failure.error, DocumentLoadError)
    assert "'slow.md'" in str(failure.error)
    assert "within timeout=1 s" in str(failure.error)


def test_a_dripping_listing_or_repository_fails_naming_it(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    demo.drip("/git/trees/", **DRIP)  # type: ignore[arg-type]
    started = time.monotonic()
    with pytest.raises(DocumentLoadError, match=r"octo/demo: ref 'main'.*within timeout=1 s"):
        loader.load_documents("octo", "demo", parser=TEXT)
    assert time.monotonic() - started < UPPER_BOUND

    demo.add_repository("octo", "slow-repo", {"a.md": b"alpha"})
    demo.drip("/repos/octo/slow-repo", **DRIP)  # type: ignore[arg-type]
    started = time.monotonic()
    with pytest.raises(DocumentLoadError, match=r"'octo/slow-repo'.*within timeout=1 s"):
        loader.load_document("octo", "slow-repo", "a.md")
    assert time.monotonic() - started < UPPER_BOUND


def test_an_answer_over_max_bytes_is_refused_naming_it(demo: GitHubWireServer) -> None:
    with bounded_loader(demo, max_bytes=30_000) as loader:
        assert loader.load_document("octo", "demo", "a.md").text == "alpha"
        with pytest.raises(DocumentLoadError) as caught:
            loader.load_document("octo", "demo", "big.md")
        assert "octo/demo: 'big.md'" in str(caught.value)
        assert "larger than max_bytes=30,000" in str(caught.value)

        loaded = loader.load_documents("octo", "demo", parser=TEXT)
        assert [d.metadata["path"] for d in loaded] == ["a.md", "slow.md", "z.md"]
        [failure] = loaded.failures
        assert failure.source.endswith("/blob/main/big.md")
        assert "max_bytes=30,000" in str(failure.error)


def test_max_bytes_defaults_to_core_cap_and_is_validated(demo: GitHubWireServer) -> None:
    with bounded_loader(demo) as loader:
        assert loader.max_bytes == DEFAULT_MAX_RESPONSE_BYTES
    for bad in (0, -1, True, 1.5, "100"):
        with pytest.raises(InvalidArgumentError, match="max_bytes"):
            bounded_loader(demo, max_bytes=bad)
