"""ragloom.loaders.github: __all__ is pinned and importable; its error is a DocumentLoadError."""

import ragloom.loaders.github as package
from ragloom.core.errors import DocumentLoadError
from ragloom.loaders.github import GitHubRateLimitError

EXPECTED_ALL = [
    "GITHUB_URL",
    "GitHubDocumentLoader",
    "GitHubLoadedDocuments",
    "GitHubRateLimitError",
    "OWNER",
    "PATH",
    "REF",
    "REPO",
    "RateLimit",
    "SHA",
    "SIZE",
]


def test_all_is_pinned_and_importable() -> None:
    assert sorted(package.__all__) == EXPECTED_ALL
    namespace: dict[str, object] = {}
    exec(f"from {package.__name__} import *", namespace)
    assert set(EXPECTED_ALL) <= set(namespace)


def test_rate_limit_error_is_a_load_error() -> None:
    assert issubclass(GitHubRateLimitError, DocumentLoadError)
    assert GitHubRateLimitError("x", None).retry_at is None
