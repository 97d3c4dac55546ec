"""GitHub document loader for ragloom: repository files via PyGithub (trees + blobs)."""

from ragloom.loaders.github.loader import (
    GITHUB_URL,
    OWNER,
    PATH,
    REF,
    REPO,
    SHA,
    SIZE,
    GitHubDocumentLoader,
    GitHubLoadedDocuments,
    GitHubRateLimitError,
    RateLimit,
)

__all__ = [
    "GITHUB_URL",
    "OWNER",
    "PATH",
    "REF",
    "REPO",
    "SHA",
    "SIZE",
    "GitHubDocumentLoader",
    "GitHubLoadedDocuments",
    "GitHubRateLimitError",
    "RateLimit",
]
