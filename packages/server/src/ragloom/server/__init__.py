"""ragloom server: one Easy RAG index as a service.

``ragloom serve`` runs :func:`create_app` under uvicorn: a retrieval API, OpenAI-compatible
chat with sources, a documents API with background ingestion, an MCP server at ``/mcp``,
a web page at ``/`` and Prometheus metrics; API keys bind callers to tenants.
``ragloom mcp`` serves the same tools over stdio. See docs/serving.md.
"""

from ragloom.server.app import SOURCES_FIELD, create_app
from ragloom.server.mcp_server import build_mcp
from ragloom.server.service import IndexService, Principal
from ragloom.server.settings import ApiKey, ServerConfigError, ServerSettings, StoreSettings

__all__ = [
    "SOURCES_FIELD",
    "ApiKey",
    "IndexService",
    "Principal",
    "ServerConfigError",
    "ServerSettings",
    "StoreSettings",
    "build_mcp",
    "create_app",
]
