"""The test server is faithful: answers validate against GitHub's OpenAPI description,
object ids are git's own, errors and rate-limit headers have GitHub's shapes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import requests
from jsonschema import Draft202012Validator

from ragloom.loaders.github.testing import GitHubWireServer, ScriptedAnswer, blob_sha

SUBSET = json.loads((Path(__file__).parent / "openapi" / "github_rest_subset.json").read_text())
FILES = {
    "README.md": b"# Demo\n",
    "docs/guide.md": b"guide " * 50,
    "docs/deep/note.txt": "ünïcode".encode(),
    "docs-x.txt": b"sorts after docs/ in git order",
    "image.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
}


def check(operation: str, status: int, body: Any) -> None:
    schema = {"$defs": SUBSET["$defs"], **SUBSET["responses"][operation][str(status)]}
    errors = sorted(Draft202012Validator(schema).iter_errors(body), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]


@pytest.fixture
def served(server: GitHubWireServer) -> GitHubWireServer:
    server.add_repository("octo", "demo", FILES)
    return server


def get(server: GitHubWireServer, path: str, **params: str) -> requests.Response:
    return requests.get(
        f"{server.api_url}{path}", params=params, headers={"Authorization": "token test-token"}
    )


def test_answers_validate_against_githubs_openapi_description(served: GitHubWireServer) -> None:
    repository = get(served, "/repos/octo/demo").json()
    check("GET /repos/{owner}/{repo}", 200, repository)
    del repository["html_url"]
    with pytest.raises(AssertionError, match="html_url"):  # the check can fail
        check("GET /repos/{owner}/{repo}", 200, repository)
    tree = get(served, "/repos/octo/demo/git/trees/main", recursive="1").json()
    check("GET /repos/{owner}/{repo}/git/trees/{tree_sha}", 200, tree)
    check(
        "GET /repos/{owner}/{repo}/git/blobs/{file_sha}",
        200,
        get(served, f"/repos/octo/demo/git/blobs/{blob_sha(FILES['README.md'])}").json(),
    )
    contents = "GET /repos/{owner}/{repo}/contents/{path}"
    check(contents, 200, get(served, "/repos/octo/demo/contents/docs/guide.md").json())
    directory = get(served, "/repos/octo/demo/contents/docs", ref="main").json()
    assert isinstance(directory, list)
    assert {d["type"] for d in directory} == {"file", "dir"}
    check(contents, 200, directory)
    for path in ("/repos/octo/absent", "/repos/octo/demo/contents/absent.md"):
        missing = get(served, path)
        assert missing.status_code == 404
        check("GET /repos/{owner}/{repo}", 404, missing.json())
    check(
        "GET /repos/{owner}/{repo}/git/trees/{tree_sha}",
        404,
        get(served, "/repos/octo/demo/git/trees/no-such-branch").json(),
    )


def test_object_ids_are_gits_own(served: GitHubWireServer, tmp_path: Path) -> None:
    for path, data in FILES.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    written = subprocess.run([*git, "write-tree"], check=True, capture_output=True, text=True)
    tree = get(served, "/repos/octo/demo/git/trees/main", recursive="1").json()
    assert tree["sha"] == written.stdout.strip()
    listed = subprocess.run([*git, "ls-files", "-s"], check=True, capture_output=True, text=True)
    git_blobs = {line.split("\t")[1]: line.split()[1] for line in listed.stdout.splitlines()}
    served_blobs = {e["path"]: e["sha"] for e in tree["tree"] if e["type"] == "blob"}
    assert served_blobs == git_blobs


def test_rate_limit_headers_and_exhaustion(served: GitHubWireServer) -> None:
    first = get(served, "/repos/octo/demo")
    remaining = int(first.headers["x-ratelimit-remaining"])
    assert first.headers["x-ratelimit-limit"] == "5000"
    assert int(get(served, "/repos/octo/demo").headers["x-ratelimit-remaining"]) == remaining - 1
    served.exhaust_rate_limit(reset_in=600)
    limited = get(served, "/repos/octo/demo")
    assert limited.status_code == 403
    assert limited.headers["x-ratelimit-remaining"] == "0"
    assert limited.json()["message"].startswith("API rate limit exceeded")
    check("GET /repos/{owner}/{repo}", 403, limited.json())


def test_scripted_answers_and_bad_credentials(served: GitHubWireServer) -> None:
    served.script(ScriptedAnswer(429, "slow down", {"retry-after": "3"}))
    scripted = get(served, "/repos/octo/demo")
    assert (scripted.status_code, scripted.headers["retry-after"]) == (429, "3")
    assert get(served, "/repos/octo/demo").status_code == 200
    wrong = requests.get(f"{served.api_url}/repos/octo/demo", headers={"Authorization": "token x"})
    assert (wrong.status_code, wrong.json()["message"]) == (401, "Bad credentials")


def test_large_files_come_without_content_as_on_github(server: GitHubWireServer) -> None:
    server.contents_max_size = 10
    server.add_repository("octo", "big", {"big.txt": b"x" * 11})
    body = get(server, "/repos/octo/big/contents/big.txt").json()
    assert (body["content"], body["encoding"], body["size"]) == ("", "none", 11)
    check("GET /repos/{owner}/{repo}/contents/{path}", 200, body)
