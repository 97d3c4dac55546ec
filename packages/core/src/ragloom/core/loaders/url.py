"""UrlDocumentLoader: a document fetched over HTTP(S) with the standard library."""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import urlparse

from ragloom.core.document import URL, Document
from ragloom.core.errors import DocumentLoadError
from ragloom.core.loaders.default_parser import default_document_parser
from ragloom.core.loaders.guard import parse_source
from ragloom.core.parsers.base import DocumentParser

DEFAULT_TIMEOUT = 30.0
USER_AGENT = "ragloom-url-loader/0.1"


class UrlDocumentLoader:
    """Fetches a URL and parses the body; metadata ``url``.

    Without a parser, the discovered default parser is used; the plain-text fallback
    decodes with the charset the server declares in ``Content-Type``. HTTP errors,
    timeouts and unreachable hosts raise :class:`DocumentLoadError` naming the URL.
    """

    @staticmethod
    def load(
        url: str,
        parser: DocumentParser | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
    ) -> Document:
        """Fetch ``url`` (http or https) within ``timeout`` seconds and parse it."""
        if urlparse(url).scheme not in ("http", "https"):
            raise DocumentLoadError(f"{url!r}: only http and https URLs are supported")
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body: bytes = response.read()
                charset = response.headers.get_content_charset()
        except urllib.error.HTTPError as exc:
            raise DocumentLoadError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
        except urllib.error.URLError as exc:
            raise DocumentLoadError(f"{url}: cannot fetch: {exc.reason}") from exc
        except TimeoutError as exc:
            raise DocumentLoadError(f"{url}: timed out after {timeout} s") from exc
        document = parse_source(parser or default_document_parser(charset), body, url)
        document.metadata[URL] = url
        return document
