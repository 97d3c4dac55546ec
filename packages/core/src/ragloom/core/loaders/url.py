"""UrlDocumentLoader: a document fetched over HTTP(S) with the standard library."""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.request
from urllib.parse import urlparse

from ragloom.core.bounded_read import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ResponseTooLargeError,
    read_within,
)
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
    ``timeout`` bounds the whole fetch (a server dripping its body is cut off), and a body
    larger than ``max_bytes`` (100 MiB) is refused while it arrives.
    """

    @staticmethod
    def load(
        url: str,
        parser: DocumentParser | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> Document:
        """Fetch ``url`` (http or https) within ``timeout`` seconds and parse it."""
        if urlparse(url).scheme not in ("http", "https"):
            raise DocumentLoadError(f"{url!r}: only http and https URLs are supported")
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})
        deadline = time.monotonic() + timeout
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                chunks = iter(lambda: response.read1(1 << 16), b"")
                body = read_within(chunks, deadline=deadline, max_bytes=max_bytes)
                if response.length:  # read1 ends quietly when the server hangs up early
                    raise http.client.IncompleteRead(body, response.length)
                charset = response.headers.get_content_charset()
        except urllib.error.HTTPError as exc:
            raise DocumentLoadError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
        except urllib.error.URLError as exc:
            raise DocumentLoadError(f"{url}: cannot fetch: {exc.reason}") from exc
        except TimeoutError as exc:
            raise DocumentLoadError(f"{url}: timed out after {timeout} s") from exc
        except ResponseTooLargeError as exc:
            raise DocumentLoadError(f"{url}: {exc}") from exc
        except (http.client.HTTPException, OSError) as exc:  # cut off, reset mid-body
            raise DocumentLoadError(f"{url}: cannot fetch: {exc!r}") from exc
        document = parse_source(parser or default_document_parser(charset), body, url)
        document.metadata[URL] = url
        return document
