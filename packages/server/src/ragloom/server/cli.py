"""``ragloom serve`` and ``ragloom mcp``: registered into the ``ragloom`` CLI of
ragloom-easy-rag through the ``ragloom.cli_commands`` entry-point group.

Importing this module is cheap (the server stack loads only when a command runs), since
the CLI reads the group on every start.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from pathlib import Path
from typing import Any

__all__ = ["register_serve", "register_mcp", "cmd_serve", "cmd_mcp"]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _settings(args: argparse.Namespace, **overrides: Any) -> Any:
    from ragloom.server.settings import ServerSettings

    given = {k: v for k, v in overrides.items() if v is not None}
    return ServerSettings.load(args.config, **given)


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the HTTP server until SIGINT/SIGTERM (uvicorn's graceful shutdown)."""
    import uvicorn

    from ragloom.server.app import create_app
    from ragloom.server.blas import blas_threads, limit_blas_threads
    from ragloom.server.limits import MAX_HEADER_BYTES, header_deadline_protocol
    from ragloom.server.settings import ServerConfigError

    settings = _settings(args, index=args.index, host=args.host, port=args.port)
    if not settings.api_keys and not _is_loopback(settings.host):
        raise ServerConfigError(
            f"--host {settings.host}: refusing to serve without API keys beyond this machine; "
            "configure api_keys (RAGLOOM_SERVER_API_KEYS or --config) or bind 127.0.0.1"
        )
    if not settings.api_keys:
        print("ragloom: no API keys configured: open to anyone on this machine", file=sys.stderr)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    limit_blas_threads(settings.blas_threads)
    for library, threads in blas_threads().items():
        logging.getLogger("ragloom.server").info(
            "ragloom: BLAS %s: %d thread(s)", Path(library).name, threads
        )
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        http=header_deadline_protocol(settings.header_timeout),  # h11, headers under deadline
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        limit_concurrency=settings.max_connections,  # the app's own cap is max_concurrency
        timeout_keep_alive=5,  # idle keep-alive connections close after 5 s
        timeout_graceful_shutdown=int(settings.request_timeout) + 5,
        log_level="info",
        access_log=False,  # ragloom.server.access logs one JSON line per request
    )
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the MCP tools over stdio (stdout carries the protocol; logs go to stderr)."""
    from ragloom.server.auth import Authenticator
    from ragloom.server.blas import limit_blas_threads
    from ragloom.server.mcp_server import build_mcp
    from ragloom.server.service import IndexService, Principal

    settings = _settings(args, index=args.index)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    limit_blas_threads(settings.blas_threads)
    service = IndexService(settings)
    try:
        server = build_mcp(
            lambda: service, Authenticator(settings), Principal("stdio", args.tenant)
        )
        server.run("stdio")
    finally:
        service.close()
    return 0


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", help="index directory (default .ragloom-index)")
    parser.add_argument(
        "--config", help="TOML configuration file (else $RAGLOOM_SERVER_CONFIG); see docs"
    )


def register_serve(commands: Any) -> None:
    """Add ``ragloom serve`` to the CLI's subcommands."""
    sub = commands.add_parser("serve", help="serve the index over HTTP (API, chat, MCP, page)")
    _common(sub)
    sub.add_argument("--host", help="address to bind (default 127.0.0.1)")
    sub.add_argument("--port", type=int, help="port (default 8000)")
    sub.set_defaults(run=cmd_serve)


def register_mcp(commands: Any) -> None:
    """Add ``ragloom mcp`` to the CLI's subcommands."""
    sub = commands.add_parser("mcp", help="serve the index as MCP tools over stdio")
    _common(sub)
    sub.add_argument("--tenant", help="limit the tools to this tenant's documents")
    sub.set_defaults(run=cmd_mcp)
