"""EgressProxy: the browser's only way out, filtered by an :class:`EgressPolicy`.

A page chooses the URLs the browser fetches (links, redirects, images, scripts, fetch and
XHR, iframes, WebSockets), so checking the page's own URL is not enough. The loader
starts Chromium with ``--proxy-server`` pointing here and ``--proxy-bypass-list=<-loopback>``
(so even loopback goes through the proxy). For every request this proxy resolves the host
with the policy, refuses non-public addresses with ``403`` before any connection is made,
and connects upstream to the address it checked (``EgressPolicy.create_connection``), so
a second DNS answer (DNS rebinding) cannot switch it. ``CONNECT`` (https, wss) is
tunnelled to the checked address; plain http is forwarded with ``Connection: close`` so
the browser never reuses a connection for another host.
"""

from __future__ import annotations

import contextlib
import logging
import re
import selectors
import socket
import socketserver
import threading
from typing import Any
from urllib.parse import urlsplit

from ragloom.core.errors import EgressRefusedError
from ragloom.core.kit.egress import EgressPolicy

__all__ = ["EgressProxy"]

logger = logging.getLogger(__name__)

_HEAD_LIMIT = 64 * 1024
_CHUNK = 64 * 1024
#: Hop-by-hop headers dropped in both directions (replaced by ``Connection: close``).
_HOP_BY_HOP = re.compile(
    rb"^(connection|proxy-connection|keep-alive|proxy-authorization|proxy-authenticate)\s*:",
    re.IGNORECASE,
)


class EgressProxy:
    """A threaded HTTP proxy on ``127.0.0.1`` that lets through only what ``policy``
    allows. ``timeout``: seconds for resolving and connecting upstream, and the longest
    a relayed connection may stay silent. Use as a context manager or call :meth:`close`."""

    def __init__(self, policy: EgressPolicy, *, timeout: float) -> None:
        self.policy = policy
        self.timeout = timeout
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._handle(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="ragloom-egress-proxy",
            daemon=True,
        )
        self._thread.start()

    @property
    def address(self) -> str:
        """``host:port`` for Chromium's ``--proxy-server``."""
        return f"127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        """Stop accepting and cut every open connection (idempotent)."""
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            sockets, self._sockets = list(self._sockets), set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def __enter__(self) -> EgressProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)

    def _handle(self, client: socket.socket) -> None:
        self._track(client)
        upstream: socket.socket | None = None
        try:
            client.settimeout(self.timeout)
            head, rest = _read_head(client)
            if head is None:
                return
            request_line, _, headers = head.partition(b"\r\n")
            parts = request_line.split(b" ")
            if len(parts) != 3:
                _answer(client, 400, "malformed request line")
                return
            method, target, version = (part.decode("latin-1") for part in parts)
            if method == "CONNECT":
                host, port = _host_port(target, default=443)
                upstream = self._connect(client, f"https://{target}/", host, port)
                if upstream is None:
                    return
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                first = rest
            else:
                url = urlsplit(target)
                if url.scheme.lower() != "http" or not url.hostname:
                    _answer(client, 403, f"{target}: only absolute http URLs are proxied")
                    return
                upstream = self._connect(client, target, url.hostname, url.port or 80)
                if upstream is None:
                    return
                path = url.path or "/"
                if url.query:
                    path += "?" + url.query
                first = _forward_head(f"{method} {path} {version}".encode("latin-1"), headers)
                first += rest
            self._relay(client, upstream, first, rewrite_response=method != "CONNECT")
        except (OSError, ValueError) as exc:
            logger.debug("egress proxy connection ended: %s", exc)
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    with self._lock:
                        self._sockets.discard(sock)
                    sock.close()

    def _connect(
        self, client: socket.socket, url: str, host: str, port: int
    ) -> socket.socket | None:
        """A socket to a checked address of ``host``, or ``None`` after answering the
        browser (403 when refused, 502 when unreachable)."""
        try:
            self.policy.check_url(url)
            upstream = self.policy.create_connection(host, port, timeout=self.timeout)
        except EgressRefusedError as exc:
            logger.info("egress proxy refused %s: %s", url, exc)
            _answer(client, 403, str(exc))
            return None
        except OSError as exc:
            _answer(client, 502, f"{url}: cannot connect: {exc}")
            return None
        self._track(upstream)
        upstream.settimeout(None)
        return upstream

    def _relay(
        self,
        client: socket.socket,
        upstream: socket.socket,
        first: bytes,
        *,
        rewrite_response: bool,
    ) -> None:
        """Copy bytes both ways until one side closes or both stay silent for
        ``timeout``; the response head is rewritten to ``Connection: close``."""
        if first:
            upstream.sendall(first)
        pending_head = b"" if rewrite_response else None
        with selectors.DefaultSelector() as selector:
            selector.register(client, selectors.EVENT_READ, upstream)
            selector.register(upstream, selectors.EVENT_READ, client)
            while True:
                events = selector.select(self.timeout)
                if not events:
                    return
                for key, _ in events:
                    source: Any = key.fileobj
                    data = source.recv(_CHUNK)
                    if not data:
                        return
                    if source is upstream and pending_head is not None:
                        pending_head += data
                        end = pending_head.find(b"\r\n\r\n")
                        if end < 0:
                            if len(pending_head) > _HEAD_LIMIT:
                                return
                            continue
                        head, data = pending_head[: end + 2], pending_head[end + 4 :]
                        status, _, headers = head.partition(b"\r\n")
                        data = _forward_head(status, headers) + data
                        pending_head = None
                    key.data.sendall(data)


def _read_head(sock: socket.socket) -> tuple[bytes | None, bytes]:
    """The request head (without the blank line) and the bytes read after it."""
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > _HEAD_LIMIT:
            _answer(sock, 431, "request head too large")
            return None, b""
        data = sock.recv(_CHUNK)
        if not data:
            return None, b""
        buffer += data
    head, _, rest = buffer.partition(b"\r\n\r\n")
    return head, rest


def _forward_head(first_line: bytes, headers: bytes) -> bytes:
    """``first_line`` and ``headers`` without hop-by-hop headers, plus ``Connection: close``."""
    kept = [line for line in headers.split(b"\r\n") if line and not _HOP_BY_HOP.match(line)]
    return b"\r\n".join([first_line, *kept, b"Connection: close", b"", b""])


def _host_port(authority: str, *, default: int) -> tuple[str, int]:
    """``host`` and ``port`` of ``host:port`` / ``[v6]:port``."""
    parts = urlsplit(f"//{authority}")
    if not parts.hostname:
        raise ValueError(f"no host in {authority!r}")
    return parts.hostname, parts.port or default


def _answer(sock: socket.socket, status: int, message: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large"}
    body = message.encode("utf-8", "replace")
    head = (
        f"HTTP/1.1 {status} {reason.get(status, 'Bad Gateway')}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError):
        sock.sendall(head.encode("latin-1") + body)
