"""The MCP server: tools ``search`` and ``ask`` over the same index, and each document the
caller may see as a resource (``ragloom://documents/<id>``: its passages in order), for
stdio (``ragloom mcp``) and streamable HTTP (mounted at ``/mcp`` by ``ragloom serve``).

Over HTTP the caller's bearer key picks the tenant exactly as for the HTTP API; over
stdio the caller is whoever started the process (every tenant, or ``--tenant``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.types import ListResourcesResult, PaginatedRequestParams, Resource

from ragloom.core import Query
from ragloom.server.auth import Authenticator
from ragloom.server.schemas import MAX_FILTER_CHARS, MAX_QUERY_CHARS, citation
from ragloom.server.service import IndexService, Principal

__all__ = ["DOCUMENT_URI", "build_mcp"]

DOCUMENT_URI = "ragloom://documents/{ref}"  # ref: the document id, percent-encoded


class _ScopedResources(MCPServer[Any]):
    """An MCP server whose resource list is the caller's documents: the SDK lists only
    registered resources, the same for every caller, so the list handler is replaced."""

    def __init__(self, documents: Callable[[Context], list[Resource]], **options: Any) -> None:
        # The SDK's constructor sets up the root logger (a Rich handler at INFO) unless the
        # application did first; that is the application's to decide, so it is undone: an
        # app that had not configured logging rendered each access-log line through Rich
        # (in-process, /healthz took 0.71 ms instead of 0.11).
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        super().__init__(**options)
        root.handlers[:] = handlers
        root.setLevel(level)
        self._documents = documents

    async def _handle_list_resources(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        context = Context(request_context=ctx, mcp_server=self)
        return ListResourcesResult(resources=self._documents(context))


def build_mcp(
    service: Callable[[], IndexService],
    authenticator: Authenticator,
    local: Principal,
) -> MCPServer[Any]:
    """An MCP server whose tools query ``service()``; ``local`` is the stdio principal."""

    def documents(ctx: Context) -> list[Resource]:
        return [
            Resource(
                uri=DOCUMENT_URI.format(ref=quote(entry.id, safe="")),
                name=entry.name,
                description=f"passages of {entry.name}"
                + (f" (tenant {entry.tenant})" if entry.tenant else ""),
                mime_type="application/json",
            )
            for entry in service().sources(principal(ctx))
        ]

    server = _ScopedResources(
        documents,
        name="ragloom",
        instructions="Search the indexed documents (search) or get an answer with sources "
        "(ask); each document is a resource.",
    )

    def principal(ctx: Context) -> Principal:
        headers = ctx.headers
        if headers is None:
            return local
        found = authenticator.principal(headers)
        if found is None:  # the HTTP mount refuses these first; this is the second line
            raise PermissionError("a valid API key is required (Authorization: Bearer ...)")
        return found

    def check(query: str, filter: str | None, max_results: int) -> int:
        limit = service().settings.max_results
        if not query.strip() or len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"query: give 1-{MAX_QUERY_CHARS} characters")
        if filter is not None and len(filter) > MAX_FILTER_CHARS:
            raise ValueError(f"filter: at most {MAX_FILTER_CHARS} characters")
        if not 1 <= max_results <= limit:
            raise ValueError(f"max_results: give 1-{limit}")
        return max_results

    @server.tool()
    async def search(
        query: str, ctx: Context, max_results: int = 4, filter: str | None = None
    ) -> list[dict[str, Any]]:
        """The passages most relevant to ``query``, with scores and sources. ``filter`` is
        a metadata filter such as ``file_name == 'faq.md'``."""
        who = principal(ctx)
        limit = check(query, filter, max_results)
        retriever = service().retriever(who, max_results=limit, filter=filter)
        contents = await asyncio.to_thread(retriever.retrieve, Query(query))
        return [citation(n, c) for n, c in enumerate(contents, 1)]

    @server.tool()
    async def ask(
        question: str, ctx: Context, max_results: int = 4, filter: str | None = None
    ) -> dict[str, Any]:
        """An answer to ``question`` from the documents, with the sources it used."""
        who = principal(ctx)
        limit = check(question, filter, max_results)
        index = service()
        retriever = index.retriever(who, max_results=limit, filter=filter)
        with index.assistant(retriever, None, None) as assistant:
            result = await asyncio.to_thread(assistant.chat, question)
        return {
            "answer": result.content,
            "sources": [citation(n, c) for n, c in enumerate(result.sources, 1)],
        }

    @server.resource(DOCUMENT_URI, mime_type="application/json")
    async def document(ref: str, ctx: Context) -> str:
        """A document's passages in order, with offsets and page where known."""
        source_id = unquote(ref)
        segments = await asyncio.to_thread(service().passages, principal(ctx), source_id)
        if segments is None:
            raise ResourceNotFoundError(f"no document {source_id[:200]!r} for this key")
        passages = [
            {
                "text": s.text,
                "start": s.metadata.get("start"),
                "end": s.metadata.get("end"),
                "page": s.metadata.get("page_number"),
            }
            for s in segments
        ]
        return json.dumps({"id": source_id, "passages": passages})

    return server
