"""UrlDocumentLoader: a document fetched over HTTP(S) through the kit's bounded call."""

from __future__ import annotations

import http

from ragloom.core.bounded_read import DEFAULT_MAX_RESPONSE_BYTES
from ragloom.core.document import URL, Document
from ragloom.core.errors import DocumentLoadError, EgressRefusedError
from ragloom.core.kit.egress import ALLOW_ALL, DEFAULT_EGRESS_POLICY, EgressPolicy
from ragloom.core.kit.http import DEFAULT_MAX_REDIRECTS, HttpCallError, HttpClient
from ragloom.core.loaders.default_parser import default_document_parser
from ragloom.core.loaders.guard import parse_source
from ragloom.core.parsers.base import DocumentParser

__all__ = [
    "DEFAULT_TIMEOUT",
    "USER_AGENT",
    "UrlDocumentLoader",
]

DEFAULT_TIMEOUT = 30.0
USER_AGENT = "ragloom-url-loader/0.1"


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


class UrlDocumentLoader:
    """Fetches a URL and parses the body; metadata ``url``.

    Without a parser, the discovered default parser is used; the plain-text fallback
    decodes with the charset the server declares in ``Content-Type``. HTTP errors,
    timeouts, unreachable hosts and refused addresses raise :class:`DocumentLoadError`
    naming the URL. ``timeout`` bounds the whole fetch: DNS, connect, TLS, headers, every
    redirect (at most ``max_redirects``) and the body; a body larger than ``max_bytes``
    (100 MiB) is refused while it arrives.

    The URL may come from a document, a search result or a model, so the egress policy
    is on by default: only http(s), public addresses only (checked after DNS and on every
    redirect, the checked address is the one connected). ``allow_private_addresses=True``
    reaches every address (intranet use); ``egress`` passes a policy of your own (e.g.
    ``EgressPolicy(allowed_networks=("10.20.0.0/16",))``).
    """

    @staticmethod
    def load(
        url: str,
        parser: DocumentParser | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        allow_private_addresses: bool = False,
        egress: EgressPolicy | None = None,
    ) -> Document:
        """Fetch ``url`` (http or https) within ``timeout`` seconds and parse it."""
        policy = egress or (ALLOW_ALL if allow_private_addresses else DEFAULT_EGRESS_POLICY)
        try:
            with HttpClient(
                egress=policy, max_redirects=max_redirects, max_bytes=max_bytes
            ) as client:
                reply = client.request(
                    "GET",
                    url,
                    timeout=timeout,
                    headers={"User-Agent": USER_AGENT, **(headers or {})},
                )
        except (HttpCallError, EgressRefusedError) as exc:
            raise DocumentLoadError(f"{url}: {exc}" if url not in str(exc) else str(exc)) from exc
        if not 200 <= reply.status < 300:
            raise DocumentLoadError(f"{url}: HTTP {reply.status} {_reason(reply.status)}".rstrip())
        document = parse_source(parser or default_document_parser(reply.charset), reply.body, url)
        document.metadata[URL] = url
        return document
