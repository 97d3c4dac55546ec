"""GitHubDocumentLoader: files of a GitHub (or GitHub Enterprise) repository, via PyGithub.

A directory is listed with one call of the git trees API (``recursive=1``); each file's
content comes from the git blobs API (base64). Every document carries the blob sha, so a
re-ingestion passes the shas it already holds (``known_shas``) and unchanged files are
not fetched again. Rate limits are read from the response headers: an exhausted limit
is waited for when the reset comes within ``max_rate_limit_wait`` seconds, otherwise
:class:`GitHubRateLimitError` says when to retry. Nothing loops unbounded: a tree too
large for one answer (``truncated``) is listed folder by folder within
``max_tree_requests`` and ``max_tree_depth``, and a folder that contains itself (a
cycle, which only a broken or hostile server can send) is refused.

``timeout`` bounds each HTTP request as a whole, body included, and ``max_bytes`` caps
each answer: PyGithub's own timeout is per socket read (a dripping server would hold a
call for ever), so its requests go through :mod:`.bounded_transport` (why there).
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import requests

from github import Auth, Github, GithubException
from github.Consts import DEFAULT_BASE_URL
from github.ContentFile import ContentFile
from github.Repository import Repository
from ragloom.core.bounded_read import DEFAULT_MAX_RESPONSE_BYTES, ResponseTooLargeError
from ragloom.core.document import URL, Document
from ragloom.core.errors import (
    DocumentLoadError,
    InvalidArgumentError,
    PluginError,
    RagloomError,
)
from ragloom.core.loaders.default_parser import default_document_parser
from ragloom.core.loaders.result import LoadedDocuments, LoadFailure
from ragloom.core.parsers.base import DocumentParser
from ragloom.core.retry import retry_after
from ragloom.loaders.github.bounded_transport import bound_requests

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

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Metadata keys of every document.
GITHUB_URL = "github_url"
OWNER = "owner"
REPO = "repo"
REF = "ref"
PATH = "path"
SHA = "sha"
SIZE = "size"

DEFAULT_TIMEOUT = 30
DEFAULT_MAX_RATE_LIMIT_WAIT = 60.0
# GitHub's advice for a secondary rate limit without retry-after: wait at least a minute.
SECONDARY_LIMIT_WAIT = 60.0
MAX_RATE_LIMIT_RETRIES = 5
SYMLINK_MODE = "120000"
DEFAULT_MAX_TREE_REQUESTS = 5000  # an hour of GitHub's rate limit for a token
DEFAULT_MAX_TREE_DEPTH = 256


class GitHubRateLimitError(DocumentLoadError):
    """GitHub's rate limit is exhausted and its reset is further away than allowed.

    ``retry_at`` is when GitHub said the limit resets (``None`` when it did not say).
    """

    def __init__(self, message: str, retry_at: datetime | None) -> None:
        super().__init__(message)
        self.retry_at = retry_at


@dataclass(frozen=True, slots=True)
class RateLimit:
    """The rate limit GitHub reported on the last response."""

    limit: int
    remaining: int
    reset_at: datetime | None


@dataclass(frozen=True, slots=True)
class _Entry:
    """One entry of a git tree, named by its path from the repository root."""

    path: str
    sha: str
    type: str
    mode: str


def _entries(tree: Any, base: str = "") -> list[_Entry]:
    return [
        _Entry(f"{base}/{e.path}" if base else e.path, e.sha, e.type, e.mode) for e in tree.tree
    ]


class GitHubLoadedDocuments(LoadedDocuments):
    """The documents of a bulk load, its failures, and ``unchanged``: the paths skipped
    because their blob sha matched ``known_shas`` (their content was not fetched)."""

    def __init__(
        self, documents: list[Document], failures: list[LoadFailure], unchanged: list[str]
    ) -> None:
        super().__init__(documents, failures)
        self.unchanged = unchanged


class GitHubDocumentLoader:
    """Loads files of GitHub repositories and parses them with a :class:`DocumentParser`.

    ``token`` defaults to the ``GITHUB_TOKEN`` environment variable (anonymous access
    when neither is set); ``base_url`` is the REST API root, ``https://api.github.com``
    or a GitHub Enterprise Server's ``https://HOST/api/v3``. ``max_rate_limit_wait`` is
    the most seconds one call may wait for a rate limit to reset (0: never wait).
    ``timeout`` bounds each HTTP request as a whole (connecting, waiting for the answer,
    reading its body as it arrives: a dripping server is cut off) and ``max_bytes`` caps
    each answer's body (a blob's JSON is its file in base64, 4/3 of its size).
    ``seconds_between_requests`` is PyGithub's politeness delay. When GitHub truncates
    a recursive tree, the folders are listed one request each: at most
    ``max_tree_requests`` requests and ``max_tree_depth`` nested folders per load
    (:class:`DocumentLoadError` beyond, naming the repository and the folder). Use it
    as a context manager (or call :meth:`close`) to release the HTTP connections.
    """

    def __init__(
        self,
        token: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_rate_limit_wait: float = DEFAULT_MAX_RATE_LIMIT_WAIT,
        seconds_between_requests: float | None = 0.25,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_tree_requests: int = DEFAULT_MAX_TREE_REQUESTS,
        max_tree_depth: int = DEFAULT_MAX_TREE_DEPTH,
    ) -> None:
        if token is None:
            token = os.environ.get("GITHUB_TOKEN") or None
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        if urlsplit(self.base_url).scheme not in ("http", "https"):
            raise InvalidArgumentError(
                f"base_url must be an http(s) URL such as https://github.example.com/api/v3, "
                f"got {base_url!r}"
            )
        for name, value in (("timeout", timeout), ("max_rate_limit_wait", max_rate_limit_wait)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidArgumentError(f"{name} must be a number of seconds, got {value!r}")
            if not math.isfinite(value) or value < 0 or (name == "timeout" and value == 0):
                raise InvalidArgumentError(f"{name} must be a positive number, got {value!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise InvalidArgumentError(
                f"max_bytes must be a positive number of bytes, got {max_bytes!r}"
            )
        for name, count in (
            ("max_tree_requests", max_tree_requests),
            ("max_tree_depth", max_tree_depth),
        ):
            if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
                raise InvalidArgumentError(f"{name} must be a positive int, got {count!r}")
        self.max_tree_requests = max_tree_requests
        self.max_tree_depth = max_tree_depth
        self.timeout = float(timeout)
        self.max_bytes = max_bytes
        self.max_rate_limit_wait = float(max_rate_limit_wait)
        self._github = Github(
            auth=Auth.Token(token) if token else None,
            base_url=self.base_url,
            timeout=max(1, math.ceil(timeout)),
            retry=None,  # rate limits and retries are handled here, within a bound
            seconds_between_requests=seconds_between_requests,
        )
        bound_requests(self._github, timeout=self.timeout, max_bytes=max_bytes)

    def __enter__(self) -> GitHubDocumentLoader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connections."""
        self._github.close()

    @property
    def rate_limit(self) -> RateLimit | None:
        """The limit reported by the last response's headers (``None`` before any call)."""
        remaining, limit = self._github.requester.rate_limiting
        if limit < 0:
            return None
        reset = self._github.requester.rate_limiting_resettime
        reset_at = datetime.fromtimestamp(reset, UTC) if reset else None
        return RateLimit(limit=limit, remaining=remaining, reset_at=reset_at)

    # -- public API -------------------------------------------------------------------

    def load_document(
        self,
        owner: str,
        repo: str,
        path: str,
        *,
        ref: str | None = None,
        parser: DocumentParser | None = None,
    ) -> Document:
        """Load and parse the file ``path`` of ``owner/repo`` at ``ref`` (default branch).

        Missing repositories, refs and paths raise :class:`DocumentLoadError` naming them.
        """
        path = _clean_path(path, "path")
        if not path:
            raise InvalidArgumentError("path must name a file, got an empty path")
        repository = self._repository(owner, repo)
        ref = ref or repository.default_branch
        where = f"{repository.full_name}: {path!r} at ref {ref!r}"
        content = self._call(
            lambda: repository.get_contents(path, ref=ref), where, _contents_not_found(where, ref)
        )
        if isinstance(content, list):
            raise DocumentLoadError(f"{where} is a directory; use load_documents for it")
        if content.type != "file":
            raise DocumentLoadError(f"{where} is a {content.type}, not a file")
        data = self._content_bytes(repository, content, where)
        return self._parse(repository, ref, path, content.sha, data, parser)

    def load_documents(
        self,
        owner: str,
        repo: str,
        path: str = "",
        *,
        ref: str | None = None,
        glob: str | None = None,
        recursive: bool = True,
        parser: DocumentParser | None = None,
        known_shas: Mapping[str, str] | None = None,
        strict: bool = False,
    ) -> GitHubLoadedDocuments:
        """Load the files under ``path`` (the whole repository by default) at ``ref``.

        The listing is one git-trees call. ``recursive=False`` keeps only the files
        directly in ``path``; ``glob`` filters by the path relative to ``path``, matched
        from the right (``"*.md"`` at any depth, ``"guides/*.md"`` only in ``guides``).
        Files whose blob sha equals ``known_shas[path]`` are not fetched; they are listed
        in ``.unchanged``. Files that cannot be parsed (binary files no installed parser
        handles, blank files, bad encodings) go to ``.failures`` unless ``strict``.
        Submodules and symbolic links are not files and are left out.
        """
        prefix = _clean_path(path, "path")
        known = dict(known_shas or {})
        repository = self._repository(owner, repo)
        ref = ref or repository.default_branch
        files = self._files(repository, ref, prefix, recursive)
        if glob is not None:
            files = [f for f in files if PurePosixPath(_relative(f.path, prefix)).match(glob)]
        chosen = parser or default_document_parser()
        documents: list[Document] = []
        failures: list[LoadFailure] = []
        unchanged: list[str] = []
        for entry in files:
            if known.get(entry.path) == entry.sha:
                unchanged.append(entry.path)
                continue
            try:
                data = self._blob_bytes(
                    repository, entry.sha, f"{repository.full_name}: {entry.path!r}"
                )
                documents.append(self._parse(repository, ref, entry.path, entry.sha, data, chosen))
            except (PluginError, GitHubRateLimitError):
                raise  # the installation or the account is at fault, not this file
            except RagloomError as exc:
                if strict:
                    raise
                source = _html_url(repository, ref, entry.path)
                logger.warning("skipped %s: %s", source, exc)
                failures.append(LoadFailure(source, exc))
        return GitHubLoadedDocuments(documents, failures, unchanged)

    # -- listing and content ----------------------------------------------------------

    def _repository(self, owner: str, repo: str) -> Repository:
        for name, value in (("owner", owner), ("repo", repo)):
            if not isinstance(value, str) or not value or "/" in value or value.strip() != value:
                raise InvalidArgumentError(f"{name} must be a GitHub {name} name, got {value!r}")
        full = f"{owner}/{repo}"
        return self._call(
            lambda: self._github.get_repo(full),
            f"GitHub repository {full!r}",
            f"GitHub repository {full!r} not found at {self.base_url} "
            "(or not visible with this token)",
        )

    def _files(
        self, repository: Repository, ref: str, prefix: str, recursive: bool
    ) -> list[_Entry]:
        """The file entries under ``prefix``, from one recursive git-trees call."""
        where = f"{repository.full_name}: ref {ref!r}"
        tree = self._call(
            lambda: repository.get_git_tree(ref, recursive=True),
            where,
            f"{repository.full_name}: ref {ref!r} not found (no such branch, tag or commit)",
        )
        entries = _entries(tree)
        if tree.raw_data.get("truncated"):
            logger.info("%s: the recursive tree is truncated; listing folder by folder", where)
            entries = self._walk(repository, tree.sha, prefix, recursive, where)
        if prefix and not any(e.path == prefix or e.path.startswith(prefix + "/") for e in entries):
            raise DocumentLoadError(
                f"{repository.full_name}: path {prefix!r} not found at ref {ref!r}"
            )
        files = []
        for entry in entries:
            if entry.type != "blob" or entry.mode == SYMLINK_MODE:
                continue
            if prefix and entry.path != prefix and not entry.path.startswith(prefix + "/"):
                continue
            if not recursive and "/" in _relative(entry.path, prefix):
                continue
            files.append(entry)
        return sorted(files, key=lambda e: e.path)

    def _walk(
        self, repository: Repository, root_sha: str, prefix: str, recursive: bool, where: str
    ) -> list[_Entry]:
        """The entries under ``prefix`` listed one folder per call (truncated trees only).

        Bounded whatever the server sends: at most ``max_tree_requests`` listings and
        ``max_tree_depth`` nested folders, and a folder whose tree sha is one of the
        folders above it (a cycle) is refused. Equal shas elsewhere are not cycles: git
        shares one tree between folders of equal content, each is listed.
        """
        full = repository.full_name
        requests_made = 0

        def listing(sha: str, folder: str) -> list[_Entry]:
            nonlocal requests_made
            requests_made += 1
            if requests_made > self.max_tree_requests:
                raise DocumentLoadError(
                    f"{full}: the truncated tree needs more than max_tree_requests="
                    f"{self.max_tree_requests} folder listings (stopped at {folder or '/'!r}); "
                    "raise max_tree_requests or load a sub-path"
                )
            tree = self._call(lambda: repository.get_git_tree(sha), where, where)
            return _entries(tree, folder)

        sha, base = root_sha, ""
        for part in prefix.split("/") if prefix else []:
            wanted = f"{base}/{part}" if base else part
            match = next((e for e in listing(sha, base) if e.path == wanted), None)
            if match is None:
                return []
            if match.type != "tree":
                return [match]
            sha, base = match.sha, match.path
        found: list[_Entry] = []
        pending = [(sha, base, frozenset({sha}))]  # a folder, and its tree and those above
        while pending:
            sha, base, above = pending.pop()
            for entry in listing(sha, base):
                found.append(entry)
                if entry.type != "tree" or not recursive:
                    continue
                if entry.sha in above:
                    raise DocumentLoadError(
                        f"{full}: folder {entry.path!r} is tree {entry.sha}, a folder that "
                        "contains it: a cycle no git repository can hold (a broken or "
                        f"hostile server at {self.base_url})"
                    )
                if entry.path.count("/") + 1 > self.max_tree_depth:
                    raise DocumentLoadError(
                        f"{full}: folder {entry.path!r} is nested deeper than "
                        f"max_tree_depth={self.max_tree_depth}; raise max_tree_depth to load it"
                    )
                pending.append((entry.sha, entry.path, above | {entry.sha}))
        return found

    def _content_bytes(self, repository: Repository, content: ContentFile, where: str) -> bytes:
        """A contents-API file's bytes; files over 1 MB come without content: use the blob."""
        if content.encoding == "base64" and (content.content or content.size == 0):
            return _b64decode(content.content or "", where)
        return self._blob_bytes(repository, content.sha, where)

    def _blob_bytes(self, repository: Repository, sha: str, where: str) -> bytes:
        blob = self._call(
            lambda: repository.get_git_blob(sha), where, f"{where}: blob {sha} not found"
        )
        if blob.encoding == "base64":
            return _b64decode(blob.content, where)
        if blob.encoding == "utf-8":
            return blob.content.encode("utf-8")
        raise DocumentLoadError(f"{where}: blob {sha} has an unknown encoding {blob.encoding!r}")

    def _parse(
        self,
        repository: Repository,
        ref: str,
        path: str,
        sha: str,
        data: bytes,
        parser: DocumentParser | None,
    ) -> Document:
        url = _html_url(repository, ref, path)
        document = (parser or default_document_parser()).parse(data, source=url)
        owner, _, name = repository.full_name.partition("/")
        document.metadata.update(
            {
                GITHUB_URL: url,
                URL: url,
                OWNER: owner,
                REPO: name,
                REF: ref,
                PATH: path,
                SHA: sha,
                SIZE: len(data),
            }
        )
        return document

    # -- calls, rate limits and errors -------------------------------------------------

    def _call(self, call: Callable[[], T], where: str, not_found: str) -> T:
        """Run one API call; wait out rate limits within the bound; translate errors."""
        waited = 0.0
        for _ in range(MAX_RATE_LIMIT_RETRIES + 1):
            waited += self._wait_if_exhausted(where, self.max_rate_limit_wait - waited)
            try:
                return call()
            except GithubException as exc:
                delay, retry_at = _rate_limit_delay(exc)
                if delay is None:
                    raise _translate(exc, where, not_found) from exc
                if waited + delay > self.max_rate_limit_wait:
                    raise _rate_limit_error(where, exc, retry_at, delay) from exc
                logger.info("%s: GitHub rate limit; waiting %.1f s", where, delay)
                time.sleep(delay)
                waited += delay
            except (TimeoutError, requests.Timeout) as exc:
                raise DocumentLoadError(
                    f"{where}: GitHub at {self.base_url} did not complete the request within "
                    f"timeout={self.timeout:g} s ({type(exc).__name__}: {exc})"
                ) from exc
            except ResponseTooLargeError as exc:
                raise DocumentLoadError(
                    f"{where}: GitHub at {self.base_url} sent an answer larger than "
                    f"max_bytes={self.max_bytes:,}; raise max_bytes to load it"
                ) from exc
            except requests.RequestException as exc:
                raise DocumentLoadError(
                    f"{where}: cannot reach GitHub at {self.base_url}: {exc}"
                ) from exc
            # PyGithub asserts, indexes and decodes what the server sent: a malformed or
            # deeply nested answer (a proxy, a broken mirror) surfaces as these.
            except (AssertionError, TypeError, ValueError, KeyError, RecursionError) as exc:
                raise DocumentLoadError(
                    f"{where}: GitHub at {self.base_url} sent a malformed answer "
                    f"({type(exc).__name__}: {str(exc)[:200]})"
                ) from exc
        raise GitHubRateLimitError(
            f"{where}: still rate limited after {MAX_RATE_LIMIT_RETRIES} waits; "
            "retry later or pass a token with a higher limit",
            None,
        )

    def _wait_if_exhausted(self, where: str, budget: float) -> float:
        """Before a call: when the last headers said 0 remaining, wait for the reset."""
        limit = self.rate_limit
        if limit is None or limit.remaining > 0 or limit.reset_at is None:
            return 0.0
        delay = limit.reset_at.timestamp() - time.time() + 1.0
        if delay <= 0:
            return 0.0
        if delay > budget:
            raise GitHubRateLimitError(
                f"{where}: GitHub rate limit exhausted ({limit.limit} requests); it resets at "
                f"{limit.reset_at.isoformat()} (in {math.ceil(delay)} s), more than the "
                f"{self.max_rate_limit_wait:g} s allowed (max_rate_limit_wait); retry then",
                limit.reset_at,
            )
        logger.info("%s: GitHub rate limit exhausted; waiting %.1f s for the reset", where, delay)
        time.sleep(delay)
        return delay


def _header(exc: GithubException, name: str) -> str | None:
    headers: dict[str, Any] = {k.lower(): v for k, v in (exc.headers or {}).items()}
    value = headers.get(name)
    return None if value is None else str(value)


def _rate_limit_delay(exc: GithubException) -> tuple[float | None, datetime | None]:
    """(seconds to wait, reset time) for a rate-limit answer; (None, None) for others."""
    if exc.status not in (403, 429):
        return None, None
    # seconds or an HTTP date (RFC 9110 10.2.3); core's reader handles both
    seconds = retry_after({str(k): str(v) for k, v in (exc.headers or {}).items()})
    if seconds is not None:
        try:
            return seconds, datetime.fromtimestamp(time.time() + seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return seconds, None
    reset = _header(exc, "x-ratelimit-reset")
    if _header(exc, "x-ratelimit-remaining") == "0" and reset is not None:
        try:
            reset_at = datetime.fromtimestamp(float(reset), UTC)
        except (ValueError, OverflowError, OSError):
            reset_at = None
        if reset_at is not None:
            return max(0.0, reset_at.timestamp() - time.time() + 1.0), reset_at
    if exc.status == 429 or "rate limit" in _message(exc).lower():
        return SECONDARY_LIMIT_WAIT, datetime.fromtimestamp(time.time() + SECONDARY_LIMIT_WAIT, UTC)
    return None, None


def _rate_limit_error(
    where: str, exc: GithubException, retry_at: datetime | None, delay: float
) -> GitHubRateLimitError:
    when = (
        f"retry after {retry_at.isoformat()} (in {math.ceil(delay)} s)"
        if retry_at is not None
        else "retry later"
    )
    return GitHubRateLimitError(
        f"{where}: GitHub rate limit hit (HTTP {exc.status}: {_message(exc)}); {when}; "
        "waiting that long exceeds max_rate_limit_wait; a token (GITHUB_TOKEN) raises the limit",
        retry_at,
    )


def _message(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])
    return exc.message or str(data)


def _translate(exc: GithubException, where: str, not_found: str) -> DocumentLoadError:
    message = _message(exc)
    if exc.status == 404:
        return DocumentLoadError(f"{not_found} (GitHub: {message})")
    if exc.status == 401:
        return DocumentLoadError(
            f"{where}: GitHub rejected the credentials (HTTP 401: {message}); "
            "check the token or GITHUB_TOKEN"
        )
    if exc.status == 403:
        return DocumentLoadError(f"{where}: access forbidden (HTTP 403: {message})")
    return DocumentLoadError(f"{where}: GitHub answered HTTP {exc.status}: {message}")


def _contents_not_found(where: str, ref: str) -> str:
    return f"{where} not found (no such path, or no branch, tag or commit named {ref!r})"


def _b64decode(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError) as exc:
        raise DocumentLoadError(f"{where}: GitHub sent invalid base64 content: {exc}") from exc


def _clean_path(path: str, name: str) -> str:
    if not isinstance(path, str):
        raise InvalidArgumentError(f"{name} must be a str, got {type(path).__name__}")
    cleaned = path.strip("/")
    if any(part in ("", ".", "..") for part in cleaned.split("/")) and cleaned:
        raise InvalidArgumentError(
            f"{name} must be a repository path like 'docs/guide.md', got {path!r}"
        )
    return cleaned


def _relative(path: str, prefix: str) -> str:
    if not prefix or path == prefix:
        return path.rsplit("/", 1)[-1] if prefix else path
    return path[len(prefix) + 1 :]


def _html_url(repository: Repository, ref: str, path: str) -> str:
    return f"{repository.html_url}/blob/{quote(ref, safe='/')}/{quote(path, safe='/')}"
