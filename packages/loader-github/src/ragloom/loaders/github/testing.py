"""A local HTTP server speaking GitHub's REST wire format, for tests of any package.

    from ragloom.loaders.github.testing import GitHubWireServer

    with GitHubWireServer() as server:
        server.put("octo", "docs", "guide/intro.md", b"# Intro")
        loader = GitHubDocumentLoader(base_url=server.api_url, seconds_between_requests=0)

No GitHub is reachable from the test machines, so this server stands in for it. It
listens on 127.0.0.1 (a free port) under the GitHub Enterprise prefix ``/api/v3`` and
serves, from fixture repositories held in memory, the endpoints the loader uses:

- ``GET /repos/{owner}/{repo}``: a ``full-repository``;
- ``GET /repos/{owner}/{repo}/git/trees/{tree_sha}`` (a tree sha or a branch name,
  ``?recursive=1``): a ``git-tree``, ``truncated`` when it has more entries than
  ``tree_limit``;
- ``GET /repos/{owner}/{repo}/git/blobs/{file_sha}``: a ``blob``, base64;
- ``GET /repos/{owner}/{repo}/contents/{path}?ref=``: a ``content-file`` (base64 in
  60-column lines; over ``contents_max_size`` bytes the content is empty with encoding
  ``none``, as GitHub does above 1 MB) or a ``content-directory``.

Shapes follow GitHub's OpenAPI description (github/rest-api-description; the package's
tests validate every answer against it). Object ids are real git ids: a blob's sha is
``git hash-object``'s, a tree's sha is git's tree hash. Errors are GitHub's
``basic-error`` bodies: 404 ``Not Found`` (or ``No commit found for the ref ...``), 401
``Bad credentials`` for a wrong token. Every answer carries the ``x-ratelimit-*``
headers; when ``remaining`` reaches 0, requests get GitHub's 403 ``API rate limit
exceeded`` until the reset time, then the window starts again. ``loop_tree(...)``
makes a folder list itself as a subfolder (a cycle no git repository can hold: a
broken or hostile server). ``script(...)`` queues
answers (status, headers, message) that the next requests get instead. ``drip(...)``
makes the answers to some paths arrive slowly, a few bytes at a time (a server or proxy
dribbling a body). Every request is recorded in ``requests``. The HTTP side is the
testkit's :class:`~ragloom.testkit.wire.WireServer` (one route for every path).
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from ragloom.testkit.wire import (
    Answer,
    Behaviour,
    Recorded,
    WireFake,
    WireHandler,
    WireServer,
    slowly,
)

__all__ = [
    "API_PREFIX",
    "Drip",
    "FixtureRepository",
    "GitHubWireServer",
    "Recorded",
    "ScriptedAnswer",
]

API_PREFIX = "/api/v3"
DOCS = "https://docs.github.com/rest"
CREATED_AT = "2024-01-02T03:04:05Z"
_HEADERS = {
    "Content-Type": "application/json; charset=utf-8",
    "X-GitHub-Api-Version-Selected": "2022-11-28",
}


@dataclass(frozen=True)
class ScriptedAnswer:
    """An answer played once instead of the normal one."""

    status: int
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Drip:
    """How a dripped answer's body is sent: ``chunk_size`` bytes every ``interval`` s."""

    chunk_size: int = 16
    interval: float = 0.2


@dataclass
class FixtureRepository:
    """A repository: branches mapping to files (path -> bytes)."""

    owner: str
    name: str
    id: int
    default_branch: str = "main"
    private: bool = False
    branches: dict[str, dict[str, bytes]] = field(default_factory=dict)


def blob_sha(data: bytes) -> str:
    """Git's object id of a blob holding ``data`` (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class _TreeEntry:
    name: str
    mode: str
    type: str
    sha: str
    size: int | None


class _Objects:
    """The git objects (blobs, trees) of every branch, with real git ids."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.trees: dict[str, list[_TreeEntry]] = {}

    def tree_of(self, files: Mapping[str, bytes]) -> str:
        """Store the tree of ``files`` (and its subtrees, blobs); return its sha."""
        here: dict[str, bytes] = {}
        folders: dict[str, dict[str, bytes]] = {}
        for path, data in files.items():
            head, _, rest = path.partition("/")
            if rest:
                folders.setdefault(head, {})[rest] = data
            else:
                here[head] = data
        entries = []
        for name, data in here.items():
            sha = blob_sha(data)
            self.blobs[sha] = data
            entries.append(_TreeEntry(name, "100644", "blob", sha, len(data)))
        for name, content in folders.items():
            entries.append(_TreeEntry(name, "040000", "tree", self.tree_of(content), None))
        # git sorts tree entries by name, a folder's name as if it ended in "/"
        entries.sort(key=lambda e: e.name.encode() + (b"/" if e.type == "tree" else b""))
        raw = b"".join(
            f"{e.mode.lstrip('0')} {e.name}".encode() + b"\0" + bytes.fromhex(e.sha)
            for e in entries
        )
        sha = hashlib.sha1(b"tree %d\0" % len(raw) + raw).hexdigest()
        self.trees[sha] = entries
        return sha


class GitHubWireServer(WireFake):
    """The server; a context manager that starts and stops it.

    ``token``: when set, a request with another token gets 401 (requests without a
    token are served, as GitHub serves public repositories anonymously; private
    repositories answer 404 to them). ``rate_limit``: requests per window.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        rate_limit: int = 5000,
        tree_limit: int = 100_000,
        contents_max_size: int = 1024 * 1024,
    ) -> None:
        self.token = token
        self.rate_limit = rate_limit
        self.remaining = rate_limit
        self.reset_at = int(time.time()) + 3600
        self.tree_limit = tree_limit
        self.contents_max_size = contents_max_size
        self.repositories: dict[tuple[str, str], FixtureRepository] = {}
        self._drips: dict[str, Drip] = {}
        self._loops: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._lock = threading.RLock()
        self.wire = WireServer({"^/.*": self.respond})

    @property
    def requests(self) -> list[Recorded]:
        """The requests received, in order (clear it to start counting again)."""
        return self.wire.requests

    @property
    def api_url(self) -> str:
        """The REST API root, the loader's ``base_url`` (GitHub Enterprise style)."""
        return self.url + API_PREFIX

    # -- fixture --------------------------------------------------------------------

    def add_repository(
        self,
        owner: str,
        name: str,
        files: Mapping[str, bytes] | None = None,
        *,
        default_branch: str = "main",
        private: bool = False,
    ) -> FixtureRepository:
        """Create (or replace) a repository whose default branch holds ``files``."""
        with self._lock:
            repository = FixtureRepository(
                owner, name, 1000 + len(self.repositories), default_branch, private
            )
            repository.branches[default_branch] = dict(files or {})
            self.repositories[(owner.lower(), name.lower())] = repository
            return repository

    def put(
        self, owner: str, name: str, path: str, data: bytes, *, branch: str | None = None
    ) -> None:
        """Write one file (creating the repository or the branch when needed)."""
        with self._lock:
            repository = self.repositories.get((owner.lower(), name.lower()))
            if repository is None:
                repository = self.add_repository(owner, name)
            branch = branch or repository.default_branch
            repository.branches.setdefault(branch, {})[path.strip("/")] = data

    def exhaust_rate_limit(self, reset_in: float) -> None:
        """Set ``remaining`` to 0 with the window resetting ``reset_in`` seconds from now."""
        with self._lock:
            self.remaining = 0
            self.reset_at = int(time.time() + reset_in)

    def loop_tree(self, owner: str, name: str, path: str, *, entry: str = "loop") -> None:
        """Make the folder ``path`` of the default branch list itself as its subfolder
        ``entry`` (the same tree sha): walking it folder by folder never ends."""
        with self._lock:
            key = (owner.lower(), name.lower())
            self._loops.setdefault(key, []).append((path.strip("/"), entry))

    def script(self, *answers: ScriptedAnswer) -> None:
        """Queue answers that the next requests get instead of the normal ones."""
        self.wire.script(*(self._scripted(answer) for answer in answers))

    def _scripted(self, answer: ScriptedAnswer) -> Behaviour:
        """A scripted answer as GitHub words errors, with the rate headers of its time."""

        def play(handler: WireHandler, request: Recorded) -> None:
            with self._lock:
                self._new_window()
                headers = {**_HEADERS, **self._rate_headers(), **answer.headers}
            body = _error(answer.message, answer.status)
            handler.send_answer((answer.status, body, headers), request)

        return play

    def drip(self, path_part: str, *, chunk_size: int = 16, interval: float = 0.2) -> None:
        """Answer the requests whose path contains ``path_part`` (say ``"/git/blobs/"``
        or ``"/contents/big.md"``) slowly: the headers at once, then the body
        ``chunk_size`` bytes every ``interval`` seconds, each read well within any
        socket timeout."""
        with self._lock:
            self._drips[path_part] = Drip(chunk_size, interval)

    # -- answers --------------------------------------------------------------------

    def respond(self, request: Recorded) -> Answer:
        """The answer to one request (the wire server's route for every path)."""
        with self._lock:
            self._new_window()
            if self.remaining <= 0:
                return (
                    403,
                    {
                        "message": "API rate limit exceeded for 127.0.0.1. (But here's the good "
                        "news: Authenticated requests get a higher rate limit. Check out the "
                        "documentation for more details.)",
                        "documentation_url": f"{DOCS}/overview/rate-limits-for-the-rest-api",
                    },
                    {**_HEADERS, **self._rate_headers()},
                )
            self.remaining -= 1
            headers = {**_HEADERS, **self._rate_headers()}
            status, body = self._route(request.path, request.query, request.headers)
            drip = next((d for part, d in self._drips.items() if part in request.path), None)
        if drip is None:
            return status, body, headers
        return slowly((status, body, headers), drip.chunk_size, drip.interval)

    def _new_window(self) -> None:
        """Start a new rate-limit window when the last one has reset."""
        now = time.time()
        if now >= self.reset_at:
            self.remaining, self.reset_at = self.rate_limit, int(now) + 3600

    def _rate_headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": str(self.rate_limit),
            "x-ratelimit-remaining": str(self.remaining),
            "x-ratelimit-reset": str(self.reset_at),
            "x-ratelimit-used": str(self.rate_limit - self.remaining),
            "x-ratelimit-resource": "core",
        }

    def _route(
        self, path: str, query: dict[str, list[str]], headers: Mapping[str, str]
    ) -> tuple[int, Any]:
        authorization = headers.get("authorization", "")
        given = authorization.split(" ", 1)[1] if " " in authorization else None
        if self.token is not None and given is not None and given != self.token:
            return 401, _error("Bad credentials", 401, f"{DOCS}")
        if not path.startswith(API_PREFIX + "/repos/"):
            return 404, _error("Not Found", 404, DOCS)
        segments = path[len(API_PREFIX) + len("/repos/") :].split("/")
        if len(segments) < 2:
            return 404, _error("Not Found", 404, DOCS)
        owner, name, rest = unquote(segments[0]), unquote(segments[1]), segments[2:]
        repository = self.repositories.get((owner.lower(), name.lower()))
        if repository is None or (repository.private and given is None):
            return 404, _error("Not Found", 404, f"{DOCS}/repos/repos#get-a-repository")
        if not rest:
            return 200, self._repository_json(repository)
        if rest[:2] == ["git", "trees"] and len(rest) == 3:
            return self._tree(repository, unquote(rest[2]), query.get("recursive", ["0"])[0])
        if rest[:2] == ["git", "blobs"] and len(rest) == 3:
            return self._blob(repository, unquote(rest[2]))
        if rest[:1] == ["contents"]:
            target = unquote("/".join(rest[1:])).strip("/")
            ref = query.get("ref", [repository.default_branch])[0]
            return self._contents(repository, target, ref)
        return 404, _error("Not Found", 404, DOCS)

    def _objects(self, repository: FixtureRepository) -> tuple[_Objects, dict[str, str]]:
        objects = _Objects()
        roots = {branch: objects.tree_of(files) for branch, files in repository.branches.items()}
        key = (repository.owner.lower(), repository.name.lower())
        for path, entry in self._loops.get(key, []):
            sha = roots[repository.default_branch]
            for part in path.split("/") if path else []:
                sha = next(e.sha for e in objects.trees[sha] if e.name == part)
            objects.trees[sha].append(_TreeEntry(entry, "040000", "tree", sha, None))
        return objects, roots

    def _tree(self, repository: FixtureRepository, ref: str, recursive: str) -> tuple[int, Any]:
        objects, roots = self._objects(repository)
        sha = roots.get(ref, ref)
        if sha not in objects.trees:
            return 404, _error("Not Found", 404, f"{DOCS}/git/trees#get-a-tree")
        listed: list[dict[str, Any]] = []
        pending = [(sha, "")]
        while pending and len(listed) <= self.tree_limit:  # a looped tree never ends
            tree_sha, base = pending.pop(0)
            for entry in objects.trees[tree_sha]:
                full = f"{base}{entry.name}"
                item: dict[str, Any] = {
                    "path": full,
                    "mode": entry.mode,
                    "type": entry.type,
                    "sha": entry.sha,
                    "url": f"{self._repo_api(repository)}/git/{entry.type}s/{entry.sha}",
                }
                if entry.size is not None:
                    item["size"] = entry.size
                listed.append(item)
                if entry.type == "tree" and recursive not in ("", "0", "false"):
                    pending.append((entry.sha, full + "/"))
        truncated = len(listed) > self.tree_limit
        return 200, {
            "sha": sha,
            "url": f"{self._repo_api(repository)}/git/trees/{sha}",
            "tree": listed[: self.tree_limit],
            "truncated": truncated,
        }

    def _blob(self, repository: FixtureRepository, sha: str) -> tuple[int, Any]:
        objects, _ = self._objects(repository)
        data = objects.blobs.get(sha)
        if data is None:
            return 404, _error("Not Found", 404, f"{DOCS}/git/blobs#get-a-blob")
        return 200, {
            "sha": sha,
            "node_id": _node_id("B", sha),
            "size": len(data),
            "url": f"{self._repo_api(repository)}/git/blobs/{sha}",
            "content": _base64_lines(data),
            "encoding": "base64",
        }

    def _contents(self, repository: FixtureRepository, path: str, ref: str) -> tuple[int, Any]:
        files = repository.branches.get(ref)
        if files is None:
            return 404, _error(
                f"No commit found for the ref {ref}",
                404,
                f"{DOCS}/repos/contents#get-repository-content",
            )
        if path in files:
            data = files[path]
            item = self._content_item(repository, path, ref, "file", blob_sha(data), len(data))
            small = len(data) <= self.contents_max_size
            item["content"] = _base64_lines(data) if small else ""
            item["encoding"] = "base64" if small else "none"
            return 200, item
        inside = {
            p[len(path) + 1 :] if path else p: d
            for p, d in files.items()
            if not path or p.startswith(path + "/")
        }
        if not inside:
            return 404, _error("Not Found", 404, f"{DOCS}/repos/contents#get-repository-content")
        objects = _Objects()
        listing = []
        for entry in objects.trees[objects.tree_of(inside)]:
            full = f"{path}/{entry.name}" if path else entry.name
            kind = "file" if entry.type == "blob" else "dir"
            listing.append(
                self._content_item(repository, full, ref, kind, entry.sha, entry.size or 0)
            )
        return 200, listing

    def _content_item(
        self, repository: FixtureRepository, path: str, ref: str, kind: str, sha: str, size: int
    ) -> dict[str, Any]:
        api = self._repo_api(repository)
        quoted = quote(path)
        url = f"{api}/contents/{quoted}?ref={quote(ref)}"
        git_url = f"{api}/git/{'blobs' if kind == 'file' else 'trees'}/{sha}"
        view = "blob" if kind == "file" else "tree"
        html_url = f"{self._repo_html(repository)}/{view}/{quote(ref)}/{quoted}"
        return {
            "type": kind,
            "size": size,
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "sha": sha,
            "url": url,
            "git_url": git_url,
            "html_url": html_url,
            "download_url": (
                f"{self.url}/raw/{repository.owner}/{repository.name}/{quote(ref)}/{quoted}"
                if kind == "file"
                else None
            ),
            "_links": {"self": url, "git": git_url, "html": html_url},
        }

    def _repo_api(self, repository: FixtureRepository) -> str:
        return f"{self.api_url}/repos/{repository.owner}/{repository.name}"

    def _repo_html(self, repository: FixtureRepository) -> str:
        return f"{self.url}/{repository.owner}/{repository.name}"

    def _repository_json(self, repository: FixtureRepository) -> dict[str, Any]:
        api = self._repo_api(repository)
        full = f"{repository.owner}/{repository.name}"
        owner_api = f"{self.api_url}/users/{repository.owner}"
        owner = {
            "login": repository.owner,
            "id": repository.id + 100_000,
            "node_id": _node_id("U", repository.owner),
            "avatar_url": f"{self.url}/avatars/u/{repository.id + 100_000}",
            "gravatar_id": "",
            "url": owner_api,
            "html_url": f"{self.url}/{repository.owner}",
            "followers_url": f"{owner_api}/followers",
            "following_url": f"{owner_api}/following{{/other_user}}",
            "gists_url": f"{owner_api}/gists{{/gist_id}}",
            "starred_url": f"{owner_api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{owner_api}/subscriptions",
            "organizations_url": f"{owner_api}/orgs",
            "repos_url": f"{owner_api}/repos",
            "events_url": f"{owner_api}/events{{/privacy}}",
            "received_events_url": f"{owner_api}/received_events",
            "type": "User",
            "site_admin": False,
        }
        templated = {
            "archive_url": "/{archive_format}{/ref}",
            "assignees_url": "/assignees{/user}",
            "blobs_url": "/git/blobs{/sha}",
            "branches_url": "/branches{/branch}",
            "collaborators_url": "/collaborators{/collaborator}",
            "comments_url": "/comments{/number}",
            "commits_url": "/commits{/sha}",
            "compare_url": "/compare/{base}...{head}",
            "contents_url": "/contents/{+path}",
            "contributors_url": "/contributors",
            "deployments_url": "/deployments",
            "downloads_url": "/downloads",
            "events_url": "/events",
            "forks_url": "/forks",
            "git_commits_url": "/git/commits{/sha}",
            "git_refs_url": "/git/refs{/sha}",
            "git_tags_url": "/git/tags{/sha}",
            "hooks_url": "/hooks",
            "issue_comment_url": "/issues/comments{/number}",
            "issue_events_url": "/issues/events{/number}",
            "issues_url": "/issues{/number}",
            "keys_url": "/keys{/key_id}",
            "labels_url": "/labels{/name}",
            "languages_url": "/languages",
            "merges_url": "/merges",
            "milestones_url": "/milestones{/number}",
            "notifications_url": "/notifications{?since,all,participating}",
            "pulls_url": "/pulls{/number}",
            "releases_url": "/releases{/id}",
            "stargazers_url": "/stargazers",
            "statuses_url": "/statuses/{sha}",
            "subscribers_url": "/subscribers",
            "subscription_url": "/subscription",
            "tags_url": "/tags",
            "teams_url": "/teams",
            "trees_url": "/git/trees{/sha}",
        }
        host = urlsplit(self.url).netloc
        return {
            "id": repository.id,
            "node_id": _node_id("R", full),
            "name": repository.name,
            "full_name": full,
            "owner": owner,
            "private": repository.private,
            "visibility": "private" if repository.private else "public",
            "html_url": self._repo_html(repository),
            "description": None,
            "fork": False,
            "url": api,
            **{key: api + suffix for key, suffix in templated.items()},
            "git_url": f"git://{host}/{full}.git",
            "ssh_url": f"git@{host}:{full}.git",
            "clone_url": f"{self._repo_html(repository)}.git",
            "svn_url": self._repo_html(repository),
            "mirror_url": None,
            "homepage": None,
            "language": None,
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers": 0,
            "watchers_count": 0,
            "size": sum(len(d) for d in repository.branches[repository.default_branch].values())
            // 1024,
            "default_branch": repository.default_branch,
            "open_issues": 0,
            "open_issues_count": 0,
            "is_template": False,
            "topics": [],
            "has_issues": True,
            "has_projects": False,
            "has_wiki": False,
            "has_pages": False,
            "has_downloads": True,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "pushed_at": CREATED_AT,
            "created_at": CREATED_AT,
            "updated_at": CREATED_AT,
            "allow_forking": True,
            "web_commit_signoff_required": False,
            "license": None,
            "network_count": 0,
            "subscribers_count": 0,
        }


def _error(message: str, status: int, documentation_url: str = DOCS) -> dict[str, str]:
    return {"message": message, "documentation_url": documentation_url, "status": str(status)}


def _base64_lines(data: bytes) -> str:
    """Base64 in 60-column lines, each ending in a newline, as GitHub sends content."""
    encoded = base64.b64encode(data).decode("ascii")
    return "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))


def _node_id(kind: str, key: str) -> str:
    return base64.b64encode(f"0:{kind}:{key}".encode()).decode("ascii").rstrip("=")
