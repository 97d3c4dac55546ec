"""create_app: the FastAPI application of ``ragloom serve``.

Routes: ``POST /v1/retrieve``; OpenAI-compatible ``GET /v1/models`` and
``POST /v1/chat/completions`` (plain and SSE, sources in ``ragloom_sources``);
``/v1/documents`` (upload, list, delete) and ``/v1/jobs/{id}``; MCP at ``/mcp``; the web
page at ``/``; ``/healthz``, ``/readyz``, ``/metrics``. Every error is JSON in OpenAI's
shape, ``{"error": {"message", "type", "code"}}``: bad input is a 4xx naming the field,
never a traceback.
"""

import asyncio
import contextlib
import json
import logging
import math
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from importlib import resources
from typing import Annotated, Any, TypeVar

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragloom.core import (
    AiMessage,
    ChatMemory,
    ChatModelError,
    DocumentLoadError,
    DocumentParseError,
    EmbeddingModelError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidFilterError,
    MessageWindowChatMemory,
    Query,
    RagAssistant,
    RagIndexError,
    RagloomError,
    RetrievalError,
    UnsupportedDocumentError,
    UserMessage,
)
from ragloom.core.assistant import Result
from ragloom.core.kit.http import HttpErrorKind
from ragloom.server.auth import Authenticator
from ragloom.server.limits import TokenBucket
from ragloom.server.mcp_server import build_mcp
from ragloom.server.metrics import ServerMetrics, route_label
from ragloom.server.schemas import (
    ChatMessageIn,
    ChatRequest,
    RetrieveRequest,
    TextUpload,
    citation,
    user_metadata,
)
from ragloom.server.service import IndexService, Principal
from ragloom.server.settings import ServerSettings

__all__ = ["SOURCES_FIELD", "create_app", "error_body"]

SOURCES_FIELD = "ragloom_sources"
MAX_UPLOAD_FILES = 32
MAX_SYSTEM_CHARS = 8000
logger = logging.getLogger("ragloom.server")
access_log = logging.getLogger("ragloom.server.access")
_T = TypeVar("_T")

# The core error hierarchy → HTTP: bad input 4xx, a failing dependency 502/503, else 500.
ERROR_STATUS: tuple[tuple[type[RagloomError], int, str], ...] = (
    (InvalidFilterError, 400, "invalid_filter"),
    (InvalidArgumentError, 400, "invalid_request_error"),
    (InvalidArgumentTypeError, 400, "invalid_request_error"),
    (UnsupportedDocumentError, 415, "unsupported_document"),
    (DocumentParseError, 422, "unparseable_document"),
    (DocumentLoadError, 422, "unreadable_document"),
    (ChatModelError, 502, "chat_model_error"),
    (EmbeddingModelError, 502, "embedding_model_error"),
    (RetrievalError, 502, "retrieval_error"),
    (RagIndexError, 503, "index_unavailable"),
)


def _error_status(exc: RagloomError) -> tuple[int, str]:
    """The HTTP status and error type of a ragloom error: a dependency that did not answer
    in its own time (``kind`` timeout: a chat or embedding model, a remote store) is a
    504, as a gateway's upstream timeout; else by the table above, 500 for the rest."""
    if getattr(exc, "kind", None) is HttpErrorKind.TIMEOUT:
        return 504, "timeout"
    return next(((s, k) for t, s, k in ERROR_STATUS if isinstance(exc, t)), (500, "server_error"))


HTTP_KINDS = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "request_too_large",
    415: "unsupported_media_type",
    429: "rate_limit_exceeded",
    503: "service_unavailable",
    504: "timeout",
}


def error_body(status: int, message: str, kind: str) -> dict[str, Any]:
    """The JSON of an error response (OpenAI's shape, so its clients show the message)."""
    return {"error": {"message": message, "type": kind, "code": status}}


def _error(
    status: int, message: str, kind: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(status, message, kind), status_code=status, headers=headers)


class _TooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body exceeds {limit} bytes")


class _SlowBody(HTTPException):
    def __init__(self, timeout: float) -> None:
        super().__init__(
            408,
            f"the request body did not arrive within {timeout:g} s",
            headers={"Connection": "close"},
        )


class _Limits:
    """ASGI middleware: refuses bodies over the cap (uploads have their own) or slower than
    ``body_timeout`` from the start of the request (408, connection closed), and records
    metrics and one structured access-log line per request."""

    def __init__(self, app: ASGIApp, settings: ServerSettings, metrics: ServerMetrics) -> None:
        self.app = app
        self.settings = settings
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = route_label(scope["path"])
        limit = (
            self.settings.max_upload_bytes
            if route == "/v1/documents"
            else self.settings.max_body_bytes
        )
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        body_ends = loop.time() + self.settings.body_timeout
        status = 500
        responded = False

        async def sending(message: Message) -> None:
            nonlocal status, responded
            if message["type"] == "http.response.start":
                status = int(message["status"])
                responded = True
            await send(message)

        try:
            declared = dict(scope["headers"]).get(b"content-length")
            if declared is not None and (not declared.isdigit() or int(declared) > limit):
                too_large = declared.isdigit()
                response = _error(
                    413 if too_large else 400,
                    f"request body exceeds {limit} bytes"
                    if too_large
                    else "Content-Length is not a number",
                    "request_too_large" if too_large else "invalid_request_error",
                )
                await response(scope, receive, sending)
                return
            received = 0
            body_done = False

            async def receiving() -> Message:
                nonlocal received, body_done
                if body_done:  # later reads wait for a disconnect: no deadline
                    return await receive()
                try:  # a timeout scope, not wait_for: that costs a task per read on 3.11
                    async with asyncio.timeout_at(body_ends):
                        message = await receive()
                except TimeoutError:
                    raise _SlowBody(self.settings.body_timeout) from None
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > limit:
                        raise _TooLarge(limit)
                    body_done = not message.get("more_body", False)
                return message

            try:
                await self.app(scope, receiving, sending)
            except _SlowBody as exc:  # raised where no route handler turned it into a response
                if responded:
                    raise
                slow = _error(408, str(exc.detail), "request_timeout", dict(exc.headers or {}))
                await slow(scope, receive, sending)
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.requests.labels(route, scope["method"], str(status)).inc()
            self.metrics.latency.labels(route).observe(elapsed)
            if status >= 400:
                self.metrics.errors.labels(HTTP_KINDS.get(status, str(status))).inc()
            access_log.info(
                json.dumps(
                    {
                        "method": scope["method"],
                        "route": route,
                        "status": status,
                        "ms": round(elapsed * 1000, 2),
                        "client": (scope.get("client") or ("", 0))[0],
                    }
                )
            )


class _Admission:
    """ASGI middleware for the API (``/v1/...``, ``POST /mcp``): a token bucket per key
    (``429``) and a cap on requests in flight (``503``), both with ``Retry-After``, so one
    key cannot starve the others. A request without a valid key goes on to its ``401``."""

    def __init__(
        self, app: ASGIApp, settings: ServerSettings, authenticator: Authenticator
    ) -> None:
        self.app = app
        self.settings = settings
        self.authenticator = authenticator
        self.buckets: dict[int, TokenBucket | None] = {}
        self.in_flight = 0

    def bucket(self, position: int) -> TokenBucket | None:
        """The bucket of the key at ``position`` (its own rate, else the server's)."""
        if position not in self.buckets:
            own = self.settings.api_keys[position] if position >= 0 else None
            rate, burst = self.settings.rate_limit, self.settings.rate_burst
            if own is not None and own.rate_limit is not None:
                rate = own.rate_limit
            if own is not None and own.rate_burst is not None:
                burst = own.rate_burst
            self.buckets[position] = TokenBucket(rate, burst) if rate > 0 else None
        return self.buckets[position]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (
            path.startswith("/v1/") or (path == "/mcp" and scope["method"] == "POST")
        ):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        found = self.authenticator.lookup(headers)
        bucket = None if found is None else self.bucket(found[0])
        if bucket is not None and (wait := bucket.take()) > 0:
            refused = _error(
                429,
                f"rate limit of {bucket.rate:g} requests per second for this key exceeded",
                "rate_limit_exceeded",
                {"Retry-After": str(math.ceil(wait))},
            )
            await refused(scope, receive, send)
            return
        if self.in_flight >= self.settings.max_concurrency:
            busy = _error(
                503,
                f"the server is at its limit of {self.settings.max_concurrency} requests in flight",
                "service_unavailable",
                {"Retry-After": "1"},
            )
            await busy(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


def create_app(
    settings: ServerSettings,
    service: IndexService | None = None,
) -> FastAPI:
    """The server app. Without ``service``, the app opens the index when it starts and
    closes it (finishing uploads, saving) when it stops; a given service stays open."""
    authenticator = Authenticator(settings)
    metrics = ServerMetrics()
    state: dict[str, IndexService] = {}
    if service is not None:
        state["service"] = service

    def current() -> IndexService:
        found = state.get("service")
        if found is None:
            raise RagIndexError("the index is not open yet; retry in a moment")
        return found

    mcp = build_mcp(current, authenticator, local=Principal("stdio", None))
    mcp.streamable_http_app(
        streamable_http_path="/mcp",
        host=settings.host,
        max_request_body_size=settings.max_body_bytes,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        owned = "service" not in state
        if owned:
            state["service"] = await asyncio.to_thread(IndexService, settings)
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            if owned:
                await asyncio.to_thread(state.pop("service").close)

    app = FastAPI(
        title="ragloom",
        summary="Retrieval, OpenAI-compatible chat with sources, documents and MCP over one index",
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.metrics = metrics
    app.add_middleware(_Admission, settings=settings, authenticator=authenticator)
    app.add_middleware(_Limits, settings=settings, metrics=metrics)  # outermost: sees 429/503

    # --- errors ---------------------------------------------------------------------------

    @app.exception_handler(RagloomError)
    async def ragloom_error(_: Request, exc: RagloomError) -> JSONResponse:
        status, name = _error_status(exc)
        if status == 500:
            logger.error("ragloom-server: %s: %s", type(exc).__name__, exc)
            return _error(500, f"{type(exc).__name__}: {exc}", name)
        return _error(status, str(exc), name)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(400, _describe(exc.errors()), "invalid_request_error")

    # Starlette's class: FastAPI and Starlette raise it too (an unparseable body such as
    # JSON nested past the parser's depth, an unknown route), and those get OpenAI's shape.
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = HTTP_KINDS.get(exc.status_code, "invalid_request_error")
        return _error(exc.status_code, str(exc.detail), kind, dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def internal(_: Request, exc: Exception) -> JSONResponse:
        logger.exception("ragloom-server: internal error")
        return _error(
            500, f"internal error ({type(exc).__name__}); see the server log", "server_error"
        )

    # --- helpers --------------------------------------------------------------------------

    async def principal(request: Request) -> Principal:
        """The caller (async: a sync dependency would cost a thread-pool hop per request)."""
        found = authenticator.principal(request.headers)
        if found is None:
            raise HTTPException(
                401,
                "a valid API key is required: send Authorization: Bearer <key>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return found

    Caller = Annotated[Principal, Depends(principal)]

    def limit(max_results: int | None) -> int:
        if max_results is None:
            return settings.default_max_results
        if max_results > settings.max_results:
            given = max_results if max_results < 10**12 else f"of {len(str(max_results))} digits"
            raise InvalidArgumentError(
                f"max_results {given} exceeds this server's cap of {settings.max_results}"
            )
        return max_results

    async def deadline(work: Coroutine[Any, Any, _T]) -> _T:
        try:  # a timeout scope, not wait_for: that wraps ``work`` in a task on 3.11
            async with asyncio.timeout(settings.request_timeout):
                return await work
        except TimeoutError:
            raise HTTPException(
                504, f"the request took longer than {settings.request_timeout:g} s"
            ) from None

    async def timed(histogram: Any, call: Callable[[], _T]) -> _T:
        started = time.perf_counter()
        try:
            return await deadline(asyncio.to_thread(call))
        finally:
            histogram.observe(time.perf_counter() - started)

    # --- operations -----------------------------------------------------------------------

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        """The index is open and uploads are accepted."""
        found = state.get("service")
        if found is None:
            return _error(503, "the index is not open yet", "service_unavailable")
        return JSONResponse({"status": "ready", "pending_uploads": found.pending()})

    @app.get("/metrics")
    async def prometheus() -> Response:
        """Prometheus metrics (no document data: safe to expose to the scraper)."""
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", response_class=HTMLResponse)
    async def page() -> HTMLResponse:
        """The web page: ask a question, watch the answer stream, open the sources."""
        html = resources.files("ragloom.server").joinpath("static/index.html").read_text("utf-8")
        return HTMLResponse(html, headers={"Content-Security-Policy": CSP})

    # --- retrieval ------------------------------------------------------------------------

    async def retrieve(scope: Scope, receive: Receive, send: Send) -> None:
        """``POST /v1/retrieve``: the passages most relevant to ``query`` with scores,
        metadata and citations. A plain ASGI handler rather than a FastAPI route: its
        response is built on the event loop just after the retrieval has filled the caches
        with vectors and model weights, where FastAPI's dependency, validation and
        response layers cost ~0.26 ms more CPU a request (docs/benchmarks.md,
        "Serving"). Errors take the app's handlers, as a route's would."""
        request = Request(scope, receive)
        caller = await principal(request)
        raw = await _json_body(request)
        try:
            body = RetrieveRequest.model_validate_json(raw, strict=True)  # as its schema says
        except ValidationError as exc:
            raise InvalidArgumentError(_describe(exc.errors(), "body")) from None
        _refuse_repeated_fields(raw)
        retriever = current().retriever(
            caller,
            max_results=limit(body.max_results),
            min_score=body.min_score,
            filter=body.filter,
            mode=body.mode,
        )
        contents = await timed(metrics.retrieval, lambda: retriever.retrieve(Query(body.query)))
        found = {
            "object": "list",
            "query": body.query,
            "data": [citation(n, c) for n, c in enumerate(contents, 1)],
        }
        await JSONResponse(found)(scope, receive, send)

    app.router.routes.append(
        Route("/v1/retrieve", _Asgi(retrieve), methods=["POST"], include_in_schema=False)
    )

    def openapi() -> dict[str, Any]:
        """FastAPI's schema with ``POST /v1/retrieve``, a route FastAPI does not see."""
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, summary=app.summary, routes=app.routes
            )
            schema.setdefault("components", {}).setdefault("schemas", {})["RetrieveRequest"] = (
                RetrieveRequest.model_json_schema()
            )
            schema["paths"]["/v1/retrieve"] = {"post": _RETRIEVE_OPERATION}
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    # --- OpenAI-compatible chat -----------------------------------------------------------

    @app.get("/v1/models")
    async def models(_: Caller) -> dict[str, Any]:
        """The one model this server answers as."""
        return {
            "object": "list",
            "data": [
                {"id": settings.model_name, "object": "model", "created": 0, "owned_by": "ragloom"}
            ],
        }

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(
        body: ChatRequest, caller: Caller
    ) -> JSONResponse | StreamingResponse:
        """An answer to the last user message, with its sources in ``ragloom_sources``."""
        if body.model != settings.model_name:
            raise HTTPException(
                404,
                f"model {body.model!r} does not exist; this server serves {settings.model_name!r}",
            )
        question, system, memory = _conversation(body, caller, current(), settings)
        options = body.ragloom
        retriever = current().retriever(
            caller,
            max_results=limit(options.max_results),
            min_score=options.min_score,
            filter=options.filter,
        )
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        if body.stream:
            events = _stream(
                current(),
                retriever,
                memory,
                system,
                question,
                completion_id,
                created,
                settings,
                metrics,
            )
            return StreamingResponse(
                events,
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        with current().assistant(retriever, memory, system) as assistant:
            result = await timed(metrics.answer, lambda: assistant.chat(question))
        return JSONResponse(_completion(result, completion_id, created, settings.model_name))

    # --- documents ------------------------------------------------------------------------

    @app.post("/v1/documents", status_code=202)
    async def upload(request: Request, caller: Caller) -> dict[str, Any]:
        """Queue files (multipart field ``files``, optional field ``metadata``: a JSON
        object) or a JSON ``{"name", "text", "metadata"}`` for ingestion; each job's
        status is at ``/v1/jobs/{id}``. The metadata is filterable like any other."""
        index = current()
        content_type = request.headers.get("content-type", "")
        uploads: list[tuple[str, bytes | str]] = []
        metadata: dict[str, str | bool | int | float] = {}
        if content_type.startswith("multipart/form-data"):
            async with request.form(max_files=MAX_UPLOAD_FILES, max_fields=8) as form:
                for value in form.getlist("files"):
                    if not isinstance(value, UploadFile):
                        raise InvalidArgumentError("files: send file parts, not text fields")
                    uploads.append((value.filename or "", await value.read()))
                given = form.get("metadata")
                if isinstance(given, UploadFile):
                    raise InvalidArgumentError("metadata: send a text field, not a file")
                if given is not None:
                    try:
                        metadata = user_metadata(given)
                    except ValidationError as exc:
                        raise InvalidArgumentError(_describe(exc.errors(), "metadata")) from None
        elif content_type.startswith("application/json"):
            try:
                text = TextUpload.model_validate_json(await request.body())
            except ValidationError as exc:
                raise InvalidArgumentError(_describe(exc.errors())) from None
            uploads.append((text.name, text.text))
            metadata = text.metadata
        else:
            raise HTTPException(
                415, "send multipart/form-data (field 'files') or application/json {name, text}"
            )
        if not uploads:
            raise InvalidArgumentError("no files: send one or more parts named 'files'")
        jobs = [index.submit(caller, name, data, metadata) for name, data in uploads]
        metrics.ingested.inc(len(jobs))
        return {"jobs": [job.to_dict() for job in jobs]}

    @app.get("/v1/documents")
    async def list_documents(caller: Caller) -> dict[str, Any]:
        """The documents the caller's key may see."""
        return {"object": "list", "data": [s.to_dict() for s in current().sources(caller)]}

    @app.delete("/v1/documents")
    async def delete_document(id: str, caller: Caller) -> dict[str, Any]:
        """Remove the document ``id`` (as listed) and its segments."""
        if not await asyncio.to_thread(current().delete, caller, id):
            raise HTTPException(404, f"no document {id[:200]!r} for this key")
        return {"deleted": id}

    @app.get("/v1/jobs/{job_id}")
    async def job_status(job_id: str, caller: Caller) -> dict[str, Any]:
        """An upload's ingestion status."""
        job = current().job(caller, job_id)
        if job is None:
            raise HTTPException(404, f"no job {job_id[:100]!r} for this key")
        return job.to_dict()

    # --- MCP (streamable HTTP) ------------------------------------------------------------

    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if authenticator.principal(headers) is None:
            response = _error(
                401,
                "a valid API key is required: send Authorization: Bearer <key>",
                "authentication_error",
                {"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        await mcp.session_manager.handle_request(scope, receive, send)

    app.router.routes.append(Route("/mcp", _Asgi(mcp_endpoint), include_in_schema=False))
    return app


_RETRIEVE_OPERATION: dict[str, Any] = {
    "summary": "Retrieve",
    "description": "The passages most relevant to `query` with scores, metadata and citations.",
    "operationId": "retrieve_v1_retrieve_post",
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/RetrieveRequest"}}
        },
    },
    "responses": {
        "200": {"description": "`{object: list, query, data: [passage, ...]}`, best first"},
        "400": {"description": "bad input, naming the field"},
        "401": {"description": "no valid API key"},
    },
}


class _Asgi:
    """A plain ASGI callable as a route endpoint (Starlette calls it with scope/receive/send)."""

    def __init__(self, handler: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)


CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


async def _json_body(request: Request) -> bytes:
    """The request's body, refused (400) unless it is JSON by its Content-Type (or has
    none), as FastAPI reads a JSON body, in UTF-8 (a ``charset`` other than UTF-8 is
    named rather than failing as 'Invalid JSON')."""
    kind = request.headers.get("content-type")
    if kind is not None:
        media, _, parameters = kind.partition(";")
        media = media.strip().lower()
        if not (media == "application/json" or re.fullmatch(r"application/[^/]+\+json", media)):
            raise InvalidArgumentError(
                f"body: send JSON (Content-Type: application/json), not {media[:80]!r}"
            )
        charset = re.search(r"charset\s*=\s*\"?([^\";\s]*)", parameters, re.IGNORECASE)
        if charset and charset[1].lower() not in {"utf-8", "utf8"}:
            raise InvalidArgumentError(f"body: send UTF-8 JSON, not charset {charset[1][:40]!r}")
    return await request.body()


def _refuse_repeated_fields(raw: bytes) -> None:
    """A field given twice is refused (400 naming it): the parser keeps the last, and a
    proxy or log reading the first would see another request than the one served.
    ``raw`` has passed validation (one flat object), so this second parse is cheap."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for name, value in pairs:
            if name in seen:
                raise InvalidArgumentError(f"body.{name[:80]}: given twice; send each field once")
            seen[name] = value
        return seen

    json.loads(raw, object_pairs_hook=unique)


def _describe(errors: Any, *prefix: str) -> str:
    """``body.max_results: Input should be ...``: each bad field and why (no input echoed)."""
    parts = []
    for item in errors:
        where = ".".join(str(p) for p in (*prefix, *item.get("loc", ()))) or "body"
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)


def _conversation(
    body: ChatRequest, caller: Principal, service: IndexService, settings: ServerSettings
) -> tuple[str, str | None, ChatMemory]:
    """The question (the last user message), the system prompt, and the memory: the
    server's memory of ``user`` when given, else the request's own earlier messages."""
    last = body.messages[-1]
    question = last.text().strip()
    if last.role != "user" or not question:
        raise InvalidArgumentError("messages: the last message must be a non-empty user message")
    system = "\n".join(
        m.text() for m in body.messages if m.role in {"system", "developer"} and m.text().strip()
    )
    if len(system) > MAX_SYSTEM_CHARS:
        raise InvalidArgumentError(f"messages: system prompt over {MAX_SYSTEM_CHARS} characters")
    if body.user is not None:
        return (
            question,
            system or None,
            service.memories.get((caller.name, caller.tenant, body.user)),
        )
    memory = MessageWindowChatMemory(settings.memory_messages)
    for message in body.messages[:-1]:
        _remember(memory, message)
    return question, system or None, memory


def _remember(memory: ChatMemory, message: ChatMessageIn) -> None:
    text = message.text()
    if not text.strip():
        return
    if message.role == "user":
        memory.add(UserMessage(text))
    elif message.role == "assistant":
        memory.add(AiMessage(text))


def _usage(result: Result) -> dict[str, int]:
    usage = result.token_usage
    prompt = (usage.input_token_count if usage else None) or 0
    completion = (usage.output_token_count if usage else None) or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _completion(result: Result, completion_id: str, created: int, model: str) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": result.content},
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(result),
        SOURCES_FIELD: [citation(n, c) for n, c in enumerate(result.sources, 1)],
    }


def _chunk(
    completion_id: str,
    created: int,
    model: str,
    delta: dict[str, Any],
    finish: str | None = None,
    sources: list[dict[str, Any]] | None = None,
) -> str:
    payload = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if sources is not None:
        payload[SOURCES_FIELD] = sources
    return f"data: {json.dumps(payload)}\n\n"


_PIECES = re.compile(r"\s*\S+\s*")


async def _stream(
    service: IndexService,
    retriever: Any,
    memory: ChatMemory,
    system: str | None,
    question: str,
    completion_id: str,
    created: int,
    settings: ServerSettings,
    metrics: ServerMetrics,
) -> AsyncIterator[str]:
    """The SSE events of a streamed answer: first the role and ``ragloom_sources``, then
    the text, then ``finish_reason``, then ``[DONE]``; an error ends it with an error event."""
    model = settings.model_name

    def sources_chunk(result_sources: list[Any]) -> str:
        cited = [citation(n, c) for n, c in enumerate(result_sources, 1)]
        return _chunk(
            completion_id,
            created,
            model,
            {"role": "assistant", "content": ""},
            sources=cited,
        )

    started = time.perf_counter()
    ends = asyncio.get_running_loop().time() + settings.request_timeout

    async def within(work: Awaitable[_T]) -> _T:
        """``work``, bounded by what is left of the request's deadline."""
        return await asyncio.wait_for(work, max(0.0, ends - asyncio.get_running_loop().time()))

    try:
        with service.assistant(retriever, memory, system) as assistant:
            if isinstance(assistant, RagAssistant):
                retrieved: list[Any] = []
                stream = assistant.astream(question, on_retrieved=retrieved.extend)
                sent = False
                try:
                    while True:
                        try:
                            text = await within(anext(stream))
                        except StopAsyncIteration:
                            break
                        if not sent:
                            yield sources_chunk(retrieved)
                            sent = True
                        yield _chunk(completion_id, created, model, {"content": text})
                finally:
                    await stream.aclose()
                if not sent:
                    yield sources_chunk(retrieved)
            else:
                result = await within(asyncio.to_thread(assistant.chat, question))
                yield sources_chunk(result.sources)
                for piece in _PIECES.findall(result.content):
                    yield _chunk(completion_id, created, model, {"content": piece})
        yield _chunk(completion_id, created, model, {}, "stop")
    except TimeoutError:
        message = f"the answer took longer than {settings.request_timeout:g} s"
        yield f"data: {json.dumps(error_body(504, message, 'timeout'))}\n\n"
    except RagloomError as exc:
        status, kind = _error_status(exc)
        yield f"data: {json.dumps(error_body(status, str(exc), kind))}\n\n"
    finally:
        metrics.answer.observe(time.perf_counter() - started)
    yield "data: [DONE]\n\n"
