"""A local server speaking the Azure AI Search REST wire format, for tests.

No Azure service runs here (a paid API), so this server answers the documented
requests of the official ``azure-search-documents`` client (``api-key`` header; paths
as the client sends them, ``/indexes('name')/...``, and the plain ``/indexes/name/...``):

- indexes: ``GET/PUT/DELETE /indexes('name')``, ``POST /indexes``, ``GET /indexes``
  (the definition is kept as sent: ``fields`` with sub-fields, ``vectorSearch``);
- documents: ``POST .../docs/search.index`` (``upload``, ``merge``, ``mergeOrUpload``,
  ``delete``; per-document ``{key, status, errorMessage, statusCode}``, 207 when one
  failed; invalid keys and unknown fields refused; vectors must have the field's
  dimension), ``GET .../docs('key')``, ``GET .../docs/$count``;
- search: ``POST .../docs/search.post.search`` with ``search``, ``vectorQueries``
  (``{kind: vector, vector, k, fields, exhaustive}``), ``filter``, ``orderby``, ``top``,
  ``skip``, ``select``, ``count``, ``queryType: semantic``; paging with
  ``@search.nextPageParameters`` (50 a page when ``top`` is not given).

The ``filter`` is evaluated (:mod:`ragloom.retrievers.azure_ai_search.odata_eval`: the
comparisons, ``and``/``or``/``not``, ``any``/``all`` over collections, ``search.in``)
before the nearest neighbours are chosen (Azure's default ``preFilter``); an invalid
filter or an unknown field is a 400, as on Azure. Vector scores are exact cosine
(``1 / (2 - cos)``, Azure's score for the cosine metric; every query is exhaustive
here). Full text counts query words in the index's searchable strings, hybrid fuses
full text and vectors by RRF (k = 60), the semantic reranker scores 0-4 by word overlap.

The HTTP side is the testkit's :class:`~ragloom.testkit.wire.WireServer` (one route for
``/indexes...``, the ``api-key`` header, Azure's error bodies).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ragloom.retrievers.azure_ai_search.odata_eval import ODataError, parse_filter
from ragloom.testkit.wire import Recorded, WireServer

__all__ = ["SearchWireServer"]

_WORDS = re.compile(r"[a-z0-9]+")
_KEY = re.compile(r"[A-Za-z0-9_\-=]+")
_INDEX = r"/indexes(?:\('(?P<q>[^']+)'\)|/(?P<p>[A-Za-z0-9_-]+))"
_ROUTES = {
    "index": re.compile(rf"^{_INDEX}$"),
    "search": re.compile(rf"^{_INDEX}/docs/search(?:\.post\.search)?$"),
    "batch": re.compile(rf"^{_INDEX}/docs/search\.index$"),
    "count": re.compile(rf"^{_INDEX}/docs/\$count$"),
    "doc": re.compile(rf"^{_INDEX}/docs(?:\('(?P<key>[^']*)'\)|/(?P<key2>[^/]+))$"),
}
PAGE_SIZE = 50  # Azure's page size when `top` is not given
_JSON = {"Content-Type": "application/json; odata.metadata=none"}


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower()))


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class _Failure(Exception):
    """An error answer: status and Azure's ``{"error": {code, message}}``."""

    def __init__(self, status: int, message: str, code: str = "") -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def _check_length(name: str, dimension: int | None, vector: Sequence[float] | None) -> None:
    """Azure's 400 for a vector whose length is not its field's dimension."""
    if dimension is not None and vector is not None and len(vector) != dimension:
        raise _Failure(
            400,
            f"The request is invalid. Details: The vector field '{name}', with dimension of "
            f"'{dimension}', expects a length of '{dimension}'. However, the provided vector "
            f"has a length of '{len(vector)}'.",
        )


@dataclass
class _Index:
    """One index: its definition (None: schemaless, any field) and documents by key."""

    name: str
    definition: dict[str, Any] | None
    key_field: str = "id"
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def fields(self) -> dict[str, dict[str, Any]]:
        return {f["name"]: f for f in (self.definition or {}).get("fields", [])}

    def vector_fields(self) -> dict[str, int]:
        return {
            name: int(f["dimensions"])
            for name, f in self.fields.items()
            if f.get("dimensions") is not None
        }

    def searchable_text(self, document: Mapping[str, Any], content_field: str) -> str:
        if self.definition is None:
            return str(document.get(content_field) or "")
        return " ".join(
            str(document.get(name) or "")
            for name, f in self.fields.items()
            if f.get("searchable") and f.get("type") == "Edm.String"
        )

    def check_path(self, path: str) -> None:
        """Raise Azure's 400 for a filter path the index does not have."""
        if self.definition is None:
            return
        fields = self.fields
        for part in path.split("/"):
            found = fields.get(part)
            if found is None:
                raise ODataError(
                    f"Invalid expression: Could not find a property named '{part}' on type "
                    "'search.document'."
                )
            fields = {f["name"]: f for f in found.get("fields") or []}

    def normalized(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """``document`` with every field of the definition (null when not given)."""
        if self.definition is None:
            return dict(document)
        return _complete(self.fields, document)


def _complete(
    fields: Mapping[str, Mapping[str, Any]], document: Mapping[str, Any]
) -> dict[str, Any]:
    unknown = sorted(set(document) - set(fields))
    if unknown:
        raise _Failure(
            400,
            f"The request is invalid. Details: The property '{unknown[0]}' does not exist on "
            "type 'search.documentFields'. Make sure to only use property names that are "
            "defined by the type.",
        )
    result: dict[str, Any] = {}
    for name, spec in fields.items():
        value = document.get(name)
        subfields = {f["name"]: f for f in spec.get("fields") or []}
        if subfields and value is not None:
            if spec["type"].startswith("Collection("):
                value = [_complete(subfields, item) for item in value]
            else:
                value = _complete(subfields, value)
        result[name] = value
    return result


class SearchWireServer:
    """Serves Azure AI Search indexes on 127.0.0.1 (a free port), via :meth:`running`.

    ``index`` and ``documents`` (dicts with the index's fields) create a schemaless
    index that exists from the start (any field may be filtered and returned);
    indexes created through the API have the definition sent. ``requests`` lists
    ``{"method", "path", "body"}`` of each request with the right ``api-key``.
    """

    def __init__(
        self,
        index: str | None = None,
        documents: Sequence[Mapping[str, Any]] = (),
        *,
        api_key: str = "test-key",
        content_field: str = "content",
        key_field: str = "id",
    ) -> None:
        self.api_key = api_key
        self.content_field = content_field
        self.indexes: dict[str, _Index] = {}
        if index is not None:
            self.indexes[index] = _Index(
                index, None, key_field, {str(d[key_field]): dict(d) for d in documents}
            )
        self.requests: list[dict[str, Any]] = []
        self.wire: WireServer | None = None
        """The wire server while :meth:`running` (``wire.script(...)`` stalls or cuts the
        next answers: ``testkit.wire.late``, ``slowly``, ``disconnect``)."""
        self._lock = threading.Lock()

    def _unauthorized(self, request: Recorded) -> tuple[int, Any, Mapping[str, str]]:
        return 403, {"error": {"code": "", "message": "Forbidden"}}, _JSON

    def _not_found(self, request: Recorded) -> tuple[int, Any, Mapping[str, str]]:
        return 404, {"error": {"code": "", "message": f"Resource not found: {request.path}"}}, _JSON

    # ------------------------------------------------------------------ search

    def search(self, index: _Index, body: Mapping[str, Any]) -> dict[str, Any]:
        """The documented search answer (``value``, paging, count) for ``body``."""
        documents = list(index.documents.values())
        odata = body.get("filter")
        if odata:
            try:
                predicate = parse_filter(odata, index.check_path)
                documents = [d for d in documents if predicate(d)]
            except ODataError as exc:
                raise _Failure(400, str(exc)) from exc
        text = body.get("search")
        ranked: list[dict[int, float]] = []
        if text and text != "*":
            query = _words(text)
            scores = {
                i: float(len(query & _words(index.searchable_text(d, self.content_field))))
                for i, d in enumerate(documents)
            }
            ranked.append({i: s for i, s in scores.items() if s > 0})
        for vq in body.get("vectorQueries") or []:
            ranked.append(self._vector_scores(index, documents, vq))
        if not ranked:
            final = dict.fromkeys(range(len(documents)), 1.0)
        elif len(ranked) == 1:
            final = ranked[0]
        else:  # hybrid: reciprocal rank fusion
            final = {}
            for scores in ranked:
                for rank, i in enumerate(sorted(scores, key=lambda i: (-scores[i], i))):
                    final[i] = final.get(i, 0.0) + 1.0 / (60 + rank + 1)
        order = sorted(final, key=lambda i: (-final[i], i))
        if body.get("orderby"):
            order = self._ordered(order, documents, str(body["orderby"]))
        skip = int(body.get("skip") or 0)
        top = body.get("top")
        size = PAGE_SIZE if top is None else min(int(top), 1000)
        page = order[skip : skip + size]
        select = body.get("select")
        fields = [f.strip() for f in select.split(",")] if select and select != "*" else None
        hits = []
        semantic = body.get("queryType") == "semantic"
        for i in page:
            doc = documents[i]
            hit = {k: v for k, v in doc.items() if fields is None or k in fields}
            hit["@search.score"] = final[i]
            if semantic:
                words = _words(text or "")
                overlap = len(words & _words(index.searchable_text(doc, self.content_field)))
                hit["@search.rerankerScore"] = min(4.0, overlap * 4.0 / max(1, len(words)))
            hits.append(hit)
        if semantic:
            hits.sort(key=lambda h: -h["@search.rerankerScore"])
        answer: dict[str, Any] = {"value": hits}
        if body.get("count"):
            answer["@odata.count"] = len(order)
        wanted = len(order) if top is None else min(int(top), len(order) - skip)
        if len(page) < wanted and skip + len(page) < len(order):
            remaining = None if top is None else int(top) - len(page)
            answer["@search.nextPageParameters"] = {
                **body,
                "skip": skip + len(page),
                "top": remaining,
            }
        return answer

    @staticmethod
    def _vector_scores(
        index: _Index, documents: Sequence[Mapping[str, Any]], vq: Mapping[str, Any]
    ) -> dict[int, float]:
        if vq.get("kind", "vector") != "vector":
            raise _Failure(400, f"vector query kind {vq.get('kind')!r} is not supported here")
        name, vector = vq["fields"], vq["vector"]
        _check_length(name, index.vector_fields().get(name), vector)
        scores = {
            i: 1.0 / (2.0 - _cosine(vector, d[name]))
            for i, d in enumerate(documents)
            if d.get(name) is not None
        }
        k = int(vq.get("k") or PAGE_SIZE)
        return {i: scores[i] for i in sorted(scores, key=lambda i: (-scores[i], i))[:k]}

    @staticmethod
    def _ordered(
        order: list[int], documents: Sequence[Mapping[str, Any]], orderby: str
    ) -> list[int]:
        for clause in reversed([c.strip() for c in orderby.split(",")]):
            name, _, direction = clause.partition(" ")
            present = [i for i in order if documents[i].get(name) is not None]
            absent = [i for i in order if documents[i].get(name) is None]
            present.sort(key=lambda i: documents[i][name], reverse=direction.strip() == "desc")
            order = present + absent
        return order

    # ------------------------------------------------------------------ documents

    def index_batch(self, index: _Index, actions: Sequence[Mapping[str, Any]]) -> tuple[int, Any]:
        """Apply a ``search.index`` batch; per-document results, 207 when one failed."""
        vectors = index.vector_fields()
        prepared = []
        for action in actions:
            kind = action.get("@search.action", "upload")
            document = {k: v for k, v in action.items() if k != "@search.action"}
            key = document.get(index.key_field)
            if not isinstance(key, str):
                raise _Failure(
                    400,
                    f"The request is invalid. Details: The key field "
                    f"'{index.key_field}' is missing or not a string.",
                )
            if kind != "delete":
                document = index.normalized(document)
                for name, dimension in vectors.items():
                    _check_length(name, dimension, document.get(name))
            prepared.append((kind, key, document))
        results = []
        for kind, key, document in prepared:
            results.append(self._apply(index, kind, key, document))
        status = 200 if all(r["status"] for r in results) else 207
        return status, {"value": results}

    @staticmethod
    def _apply(index: _Index, kind: str, key: str, document: dict[str, Any]) -> dict[str, Any]:
        def result(status: int, message: str | None = None) -> dict[str, Any]:
            ok = status in (200, 201)
            return {"key": key, "status": ok, "errorMessage": message, "statusCode": status}

        if not _KEY.fullmatch(key) or len(key.encode()) > 1024:
            return result(
                400,
                f"Invalid document key: '{key}'. Keys can only contain letters, digits, "
                "underscore (_), dash (-), or equal sign (=).",
            )
        existing = index.documents.get(key)
        if kind == "delete":
            index.documents.pop(key, None)
            return result(200)
        if kind == "upload" or (kind == "mergeOrUpload" and existing is None):
            index.documents[key] = document
            return result(201 if existing is None else 200)
        if kind in ("merge", "mergeOrUpload"):
            if existing is None:
                return result(404, "Document not found.")
            given = {k: v for k, v in document.items() if k in document and v is not None}
            index.documents[key] = {**existing, **given}
            return result(200)
        return result(400, f"Unknown action {kind!r}.")

    # ------------------------------------------------------------------ HTTP

    def _index(self, name: str) -> _Index:
        index = self.indexes.get(name)
        if index is None:
            raise _Failure(
                404, f"No index with the name '{name}' was found in the service '127.0.0.1'."
            )
        return index

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """The status and JSON answer (or ``str`` for ``$count``) of one request."""
        with self._lock:
            self.requests.append({"method": method, "path": path, "body": body})
            if path == "/indexes":
                if method == "GET":
                    return 200, {"value": [i.definition for i in self.indexes.values()]}
                return self._create(body, replace=False)
            for route, pattern in _ROUTES.items():
                match = pattern.match(path)
                if match is not None:
                    name = match.group("q") or match.group("p")
                    return self._route(route, method, name, match, body)
            return 404, {"error": {"code": "", "message": f"Resource not found: {path}"}}

    def _route(
        self, route: str, method: str, name: str, match: re.Match[str], body: Any
    ) -> tuple[int, Any]:
        if route == "index":
            if method == "PUT":
                return self._create({**body, "name": name}, replace=True)
            index = self._index(name)
            if method == "DELETE":
                del self.indexes[name]
                return 204, None
            return 200, index.definition or {"name": name, "fields": []}
        index = self._index(name)
        if route == "search":
            return 200, self.search(index, body or {})
        if route == "batch":
            return self.index_batch(index, (body or {}).get("value", []))
        if route == "count":
            return 200, str(len(index.documents))
        key = match.group("key") if match.group("key") is not None else match.group("key2")
        document = index.documents.get(str(key).replace("''", "'"))
        if document is None:
            raise _Failure(404, "Document not found.")
        return 200, document

    def _create(self, definition: Mapping[str, Any], *, replace: bool) -> tuple[int, Any]:
        name = definition.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,127}", name):
            raise _Failure(400, f"Invalid index name {name!r}: lower case letters, digits, dashes")
        fields = definition.get("fields") or []
        keys = [f["name"] for f in fields if f.get("key")]
        if len(keys) != 1:
            raise _Failure(400, "The request is invalid. Details: index must have one key field.")
        profiles = {p["name"] for p in (definition.get("vectorSearch") or {}).get("profiles", [])}
        for f in fields:
            if f.get("dimensions") is not None and f.get("vectorSearchProfile") not in profiles:
                raise _Failure(400, f"vector field {f['name']!r} names an unknown profile")
        existing = self.indexes.get(name)
        if existing is not None and not replace:
            raise _Failure(409, f"Cannot create index '{name}' because it already exists.")
        documents = existing.documents if existing is not None else {}
        self.indexes[name] = _Index(name, dict(definition), keys[0], documents)
        return (200 if existing else 201), definition

    def _answer(self, request: Recorded) -> tuple[int, Any, Mapping[str, str]]:
        """A request as the wire server hands it: Azure's answer, or its error body."""
        if isinstance(request.body, str):  # not JSON
            return 400, {"error": {"code": "", "message": "The request is invalid."}}, _JSON
        try:
            status, payload = self.handle(request.method, request.path, request.body)
        except _Failure as failure:
            error = {"code": failure.code, "message": failure.message}
            return failure.status, {"error": error}, _JSON
        if isinstance(payload, str):  # $count: plain text, with a byte-order mark
            return status, payload.encode("utf-8-sig"), {"Content-Type": "text/plain"}
        return status, payload, _JSON

    @contextmanager
    def running(self) -> Iterator[str]:
        """Serve on 127.0.0.1 (a free port) and yield the endpoint URL."""
        wire = WireServer(
            {"^/indexes.*": self._answer},
            api_key=self.api_key,
            api_key_header="api-key",
            unauthorized=self._unauthorized,
            not_found=self._not_found,
        )
        with wire:
            self.wire = wire
            try:
                yield wire.url
            finally:
                self.wire = None
