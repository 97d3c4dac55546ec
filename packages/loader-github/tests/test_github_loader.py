"""GitHubDocumentLoader against the wire server: listing, content, metadata,
incremental loads, errors naming what is missing, rate limits, credentials."""

from __future__ import annotations

import email.utils
import time

import pytest

from ragloom.core.errors import DocumentLoadError, InvalidArgumentError, UnsupportedDocumentError
from ragloom.core.parsers.dispatch import DispatchingDocumentParser
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.github import GitHubDocumentLoader, GitHubRateLimitError
from ragloom.loaders.github.testing import GitHubWireServer, ScriptedAnswer, blob_sha

TEXT = TextDocumentParser()
FILES = {
    "README.md": b"# Demo",
    "docs/guide.md": b"the guide",
    "docs/deep/note.txt": "ünïcode note".encode(),
    "docs/deep/more.md": b"more",
    "src/app.py": b"print('hi')",
    "image.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
}


@pytest.fixture
def demo(server: GitHubWireServer) -> GitHubWireServer:
    server.add_repository("octo", "demo", FILES)
    return server


def paths(documents: list) -> list[str]:  # type: ignore[type-arg]
    return sorted(d.metadata["path"] for d in documents)


def test_load_document_metadata(demo: GitHubWireServer, loader: GitHubDocumentLoader) -> None:
    document = loader.load_document("octo", "demo", "docs/deep/note.txt")
    assert document.text == "ünïcode note"
    assert document.metadata == {
        "github_url": f"{demo.url}/octo/demo/blob/main/docs/deep/note.txt",
        "url": f"{demo.url}/octo/demo/blob/main/docs/deep/note.txt",
        "owner": "octo",
        "repo": "demo",
        "ref": "main",
        "path": "docs/deep/note.txt",
        "sha": blob_sha(FILES["docs/deep/note.txt"]),
        "size": len(FILES["docs/deep/note.txt"]),
    }


def test_whole_repository_is_one_tree_call_and_one_blob_call_per_file(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    loaded = loader.load_documents("octo", "demo", parser=DispatchingDocumentParser())
    assert paths(loaded) == sorted(p for p in FILES if p != "image.png")
    called = [r.path.split("/repos/octo/demo")[1] for r in demo.requests]
    assert called.count("/git/trees/main") == 1
    assert sum(c.startswith("/git/blobs/") for c in called) == len(FILES)
    assert not any(c.startswith("/contents") for c in called)
    # the binary file no installed parser handles is skipped and reported
    [failure] = loaded.failures
    assert failure.source.endswith("/blob/main/image.png")
    assert isinstance(failure.error, UnsupportedDocumentError)


def test_folder_recursive_and_glob(demo: GitHubWireServer, loader: GitHubDocumentLoader) -> None:
    assert paths(loader.load_documents("octo", "demo", "docs", parser=TEXT)) == [
        "docs/deep/more.md",
        "docs/deep/note.txt",
        "docs/guide.md",
    ]
    flat = loader.load_documents("octo", "demo", "docs/", recursive=False, parser=TEXT)
    assert paths(flat) == ["docs/guide.md"]
    assert paths(loader.load_documents("octo", "demo", glob="*.md", parser=TEXT)) == [
        "README.md",
        "docs/deep/more.md",
        "docs/guide.md",
    ]
    assert paths(loader.load_documents("octo", "demo", "docs", glob="deep/*", parser=TEXT)) == [
        "docs/deep/more.md",
        "docs/deep/note.txt",
    ]


def test_other_ref(demo: GitHubWireServer, loader: GitHubDocumentLoader) -> None:
    demo.put("octo", "demo", "docs/guide.md", b"the new guide", branch="feature/x")
    document = loader.load_document("octo", "demo", "docs/guide.md", ref="feature/x")
    assert (document.text, document.metadata["ref"]) == ("the new guide", "feature/x")
    assert document.metadata["github_url"].endswith("/blob/feature/x/docs/guide.md")
    [only] = loader.load_documents("octo", "demo", ref="feature/x", parser=TEXT)
    assert only.text == "the new guide"


def test_known_shas_skip_unchanged_files_without_fetching(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    first = loader.load_documents("octo", "demo", "docs", parser=TEXT)
    known = {d.metadata["path"]: d.metadata["sha"] for d in first}
    demo.put("octo", "demo", "docs/guide.md", b"the guide, edited")
    demo.requests.clear()
    second = loader.load_documents("octo", "demo", "docs", parser=TEXT, known_shas=known)
    assert [d.text for d in second] == ["the guide, edited"]
    assert second.unchanged == ["docs/deep/more.md", "docs/deep/note.txt"]
    fetched = [r.path for r in demo.requests if "/git/blobs/" in r.path]
    assert fetched == [f"/api/v3/repos/octo/demo/git/blobs/{blob_sha(b'the guide, edited')}"]


def test_truncated_tree_is_listed_folder_by_folder(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    demo.tree_limit = 3
    assert paths(loader.load_documents("octo", "demo", "docs", parser=TEXT)) == [
        "docs/deep/more.md",
        "docs/deep/note.txt",
        "docs/guide.md",
    ]
    flat = loader.load_documents("octo", "demo", "docs", recursive=False, parser=TEXT)
    assert paths(flat) == ["docs/guide.md"]


def test_large_file_content_comes_from_the_blob(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    demo.contents_max_size = 4
    assert loader.load_document("octo", "demo", "docs/guide.md").text == "the guide"
    assert any("/git/blobs/" in r.path for r in demo.requests)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda g: g.load_document("octo", "nope", "a.md"), "repository 'octo/nope' not found"),
        (lambda g: g.load_documents("octo", "nope"), "repository 'octo/nope' not found"),
        (
            lambda g: g.load_document("octo", "demo", "README.md", ref="v9"),
            "'README.md' at ref 'v9' not found",
        ),
        (lambda g: g.load_documents("octo", "demo", ref="v9"), "ref 'v9' not found"),
        (
            lambda g: g.load_document("octo", "demo", "docs/absent.md"),
            "'docs/absent.md' at ref 'main' not found",
        ),
        (
            lambda g: g.load_documents("octo", "demo", "nowhere"),
            "path 'nowhere' not found at ref 'main'",
        ),
        (lambda g: g.load_document("octo", "demo", "docs"), "'docs' at ref 'main' is a directory"),
    ],
)
def test_missing_things_are_named(
    demo: GitHubWireServer, loader: GitHubDocumentLoader, call, message
) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DocumentLoadError, match=message):
        call(loader)


def test_bad_arguments(loader: GitHubDocumentLoader) -> None:
    with pytest.raises(InvalidArgumentError, match="owner"):
        loader.load_documents("octo/evil", "demo")
    with pytest.raises(InvalidArgumentError, match="path"):
        loader.load_document("octo", "demo", "../etc/passwd")
    with pytest.raises(InvalidArgumentError, match="base_url"):
        GitHubDocumentLoader(base_url="ftp://example.com")
    with pytest.raises(InvalidArgumentError, match="max_rate_limit_wait"):
        GitHubDocumentLoader(max_rate_limit_wait=-1)


def test_token_from_environment(demo: GitHubWireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    with GitHubDocumentLoader(base_url=demo.api_url, seconds_between_requests=0) as loader:
        loader.load_document("octo", "demo", "README.md")
    assert demo.requests[-1].headers["authorization"] == "token test-token"
    monkeypatch.setenv("GITHUB_TOKEN", "wrong")
    with (
        GitHubDocumentLoader(base_url=demo.api_url, seconds_between_requests=0) as loader,
        pytest.raises(DocumentLoadError, match="rejected the credentials.*Bad credentials"),
    ):
        loader.load_document("octo", "demo", "README.md")


def test_private_repository_needs_a_token(demo: GitHubWireServer) -> None:
    demo.add_repository("octo", "secret", {"a.md": b"a"}, private=True)
    with (
        GitHubDocumentLoader("", base_url=demo.api_url, seconds_between_requests=0) as anonymous,
        pytest.raises(DocumentLoadError, match="'octo/secret' not found .*not visible"),
    ):
        anonymous.load_documents("octo", "secret")


def test_rate_limit_reset_within_the_bound_is_waited_for(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    demo.exhaust_rate_limit(reset_in=1)
    started = time.monotonic()
    assert loader.load_document("octo", "demo", "README.md").text == "# Demo"
    assert time.monotonic() - started >= 0.5
    assert loader.rate_limit is not None
    assert loader.rate_limit.remaining > 0


def test_rate_limit_beyond_the_bound_says_when_to_retry(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    demo.exhaust_rate_limit(reset_in=3600)
    started = time.monotonic()
    with pytest.raises(GitHubRateLimitError, match="API rate limit exceeded.*retry after") as info:
        loader.load_documents("octo", "demo")
    assert time.monotonic() - started < 3
    assert info.value.retry_at is not None
    assert abs(info.value.retry_at.timestamp() - demo.reset_at) <= 2
    # the headers of that answer are remembered: the next call fails before asking
    count = len(demo.requests)
    with pytest.raises(GitHubRateLimitError, match="resets at"):
        loader.load_document("octo", "demo", "README.md")
    assert len(demo.requests) == count


def test_secondary_limits_honour_retry_after_within_the_bound(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    demo.script(ScriptedAnswer(429, "too many requests", {"retry-after": "1"}))
    assert loader.load_document("octo", "demo", "README.md").text == "# Demo"
    demo.script(ScriptedAnswer(403, "You have exceeded a secondary rate limit. Please wait."))
    with pytest.raises(GitHubRateLimitError, match="secondary rate limit.*retry after"):
        loader.load_document("octo", "demo", "README.md")


def test_retry_after_as_an_http_date_is_waited_for_within_the_bound(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    # HTTP dates have whole seconds: 3 s ahead is a wait of 2-3 s, under max_rate_limit_wait=5
    # (read as whole seconds only, this 429 fell back to the 60 s secondary-limit wait)
    when = email.utils.formatdate(time.time() + 3, usegmt=True)
    demo.script(ScriptedAnswer(429, "too many requests", {"retry-after": when}))
    started = time.monotonic()
    assert loader.load_document("octo", "demo", "README.md").text == "# Demo"
    assert 1.5 <= time.monotonic() - started < 5


def test_retry_after_as_an_http_date_beyond_the_bound_names_that_date(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    at = time.time() + 3600
    demo.script(
        ScriptedAnswer(
            429, "too many requests", {"retry-after": email.utils.formatdate(at, usegmt=True)}
        )
    )
    with pytest.raises(GitHubRateLimitError, match="retry after") as info:
        loader.load_document("octo", "demo", "README.md")
    assert info.value.retry_at is not None
    assert abs(info.value.retry_at.timestamp() - at) <= 2


def test_rate_limit_waits_are_bounded_in_number(demo: GitHubWireServer) -> None:
    demo.script(*[ScriptedAnswer(429, "busy", {"retry-after": "0"})] * 20)
    with (
        GitHubDocumentLoader(base_url=demo.api_url, seconds_between_requests=0) as loader,
        pytest.raises(GitHubRateLimitError, match="still rate limited"),
    ):
        loader.load_document("octo", "demo", "README.md")
    assert len(demo.requests) <= 6


def test_forbidden_is_not_a_rate_limit(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    demo.script(ScriptedAnswer(403, "Resource not accessible by integration"))
    with pytest.raises(DocumentLoadError, match="forbidden.*not accessible") as info:
        loader.load_document("octo", "demo", "README.md")
    assert not isinstance(info.value, GitHubRateLimitError)


def test_unreachable_server_is_named() -> None:
    with (
        GitHubDocumentLoader(base_url="http://127.0.0.1:9", timeout=2) as loader,
        pytest.raises(DocumentLoadError, match="cannot reach GitHub at http://127.0.0.1:9"),
    ):
        loader.load_document("octo", "demo", "README.md")


def test_strict_raises_the_first_bad_file(
    demo: GitHubWireServer, loader: GitHubDocumentLoader
) -> None:
    with pytest.raises(UnsupportedDocumentError, match="image.png"):
        loader.load_documents("octo", "demo", parser=DispatchingDocumentParser(), strict=True)
