"""Extract the schemas the GitHub test server answers with from GitHub's OpenAPI description.

    npm pack @octokit/openapi@23.0.2   # github/rest-api-description + x-octokit, MIT
    tar xzf octokit-openapi-23.0.2.tgz package/generated/api.github.com.json
    python extract_subset.py package/generated/api.github.com.json > github_rest_subset.json

Keeps the responses of the operations the loader calls and every component schema they
reference, converted from OpenAPI 3.0 to JSON Schema (``nullable: true`` becomes a
``"null"`` alternative), so ``jsonschema`` validates the server's answers against them.
"""

from __future__ import annotations

import json
import sys
from typing import Any

OPERATIONS = {
    "GET /repos/{owner}/{repo}": ("/repos/{owner}/{repo}", "get"),
    "GET /repos/{owner}/{repo}/git/trees/{tree_sha}": (
        "/repos/{owner}/{repo}/git/trees/{tree_sha}",
        "get",
    ),
    "GET /repos/{owner}/{repo}/git/blobs/{file_sha}": (
        "/repos/{owner}/{repo}/git/blobs/{file_sha}",
        "get",
    ),
    "GET /repos/{owner}/{repo}/contents/{path}": ("/repos/{owner}/{repo}/contents/{path}", "get"),
}
DROP = {"discriminator", "example", "examples", "readOnly", "writeOnly", "deprecated", "xml"}


def convert(node: Any) -> Any:
    """OpenAPI 3.0 schema -> JSON Schema (draft 2020-12), refs to ``#/$defs/``."""
    if isinstance(node, list):
        return [convert(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: convert(v) for k, v in node.items() if k not in DROP and not k.startswith("x-")}
    if "$ref" in out:
        out["$ref"] = out["$ref"].replace("#/components/schemas/", "#/$defs/")
    if out.pop("nullable", False):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        if "$ref" in out or "allOf" in out or "oneOf" in out or "anyOf" in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def refs(node: Any) -> set[str]:
    if isinstance(node, list):
        return set().union(*(refs(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = {node["$ref"].rsplit("/", 1)[-1]} if "$ref" in node else set()
    return found.union(*(refs(v) for v in node.values()))


def main(path: str) -> None:
    with open(path) as file:
        spec = json.load(file)
    components = spec["components"]
    responses: dict[str, dict[str, Any]] = {}
    for name, (route, method) in OPERATIONS.items():
        for status, response in spec["paths"][route][method]["responses"].items():
            if "$ref" in response:
                response = components["responses"][response["$ref"].rsplit("/", 1)[-1]]
            schema = response.get("content", {}).get("application/json", {}).get("schema")
            if schema is not None:
                responses.setdefault(name, {})[status] = convert(schema)
    wanted = refs(responses)
    seen: set[str] = set()
    while wanted - seen:
        name = (wanted - seen).pop()
        seen.add(name)
        wanted |= refs(components["schemas"][name])
    document = {
        "source": f"@octokit/openapi {spec['info']['version']} api.github.com.json "
        "(github/rest-api-description), converted by extract_subset.py",
        "responses": responses,
        "$defs": {name: convert(components["schemas"][name]) for name in sorted(seen)},
    }
    json.dump(document, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
