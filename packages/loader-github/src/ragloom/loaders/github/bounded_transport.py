"""Every PyGithub request of a loader bounded as a whole by its timeout and in size.

PyGithub hands its ``timeout`` to ``requests`` as the socket timeout, which bounds each
read, not the request: a server dripping a byte every few seconds holds a call for as
long as it likes, and a huge body is read whole into memory. :func:`bound_requests`
mounts :class:`BoundedAdapter` on the ``requests`` sessions of one ``Github`` client; the
adapter reads every body as it arrives through core's ``read_within`` (deadline, cap).

Why an adapter rather than fetching blobs ourselves: the tree listing, the repository
and the contents answers need the same bound, and the adapter gives it to every request
while PyGithub keeps the wire format, auth, rate-limit headers and errors. PyGithub
builds its sessions lazily in connection objects and offers no per-client hook (its
``injectConnectionClasses`` is process-wide), so the connection factories of this
client's ``Requester`` are replaced; :func:`bound_requests` fails loudly if a PyGithub
release renames them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter

from github import Github
from ragloom.core.bounded_read import read_within
from ragloom.core.errors import PluginError

__all__ = ["BoundedAdapter", "bound_requests"]

CHUNK_SIZE = 1 << 16
# Where PyGithub's Requester keeps its connection classes (name-mangled privates).
_FACTORIES = {
    "_Requester__httpConnectionClass": "http",
    "_Requester__httpsConnectionClass": "https",
}
_CURRENT = "_Requester__connectionClass"


class BoundedAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` whose responses are read whole within ``timeout`` seconds of
    the request's start (``TimeoutError`` after) and refused past ``max_bytes``
    (``ResponseTooLargeError``), whatever timeout the caller passed."""

    def __init__(self, timeout: float, max_bytes: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.timeout = timeout
        self.max_bytes = max_bytes

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, stream: bool = False, **kwargs: Any
    ) -> requests.Response:
        deadline = time.monotonic() + self.timeout
        kwargs["timeout"] = self.timeout  # connecting and each read (a stalled server)
        response = super().send(request, stream=True, **kwargs)
        try:
            body = read_within(_arriving(response.raw), deadline=deadline, max_bytes=self.max_bytes)
        except BaseException:
            response.close()  # a dripping or oversized answer's connection is not reused
            raise
        response._content = body
        response._content_consumed = True
        return response


def _arriving(raw: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """The decoded body as it arrives (``read1``: a dripping server's chunks are seen
    one by one), with urllib3's errors as the ``requests`` errors PyGithub expects."""
    try:
        while chunk := raw.read1(CHUNK_SIZE, decode_content=True):
            yield chunk
    except urllib3.exceptions.ReadTimeoutError as exc:
        raise requests.ReadTimeout(exc) from exc
    except urllib3.exceptions.HTTPError as exc:  # cut off, bad chunking, bad encoding
        raise requests.ConnectionError(exc) from exc


def bound_requests(github: Github, *, timeout: float, max_bytes: int) -> None:
    """Make every request of ``github`` go through a :class:`BoundedAdapter`."""
    requester = github.requester
    missing = [name for name in (*_FACTORIES, _CURRENT) if not hasattr(requester, name)]
    if missing:
        raise PluginError(
            f"this PyGithub release has no Requester.{missing[0]}; ragloom-loader-github "
            "cannot bound its requests (tested with PyGithub 2.10; see its README)"
        )
    current = getattr(requester, _CURRENT)
    for name, scheme in _FACTORIES.items():
        factory = _BoundedConnections(getattr(requester, name), scheme, timeout, max_bytes)
        if getattr(requester, name) is current:
            setattr(requester, _CURRENT, factory)
        setattr(requester, name, factory)


@dataclass(frozen=True)
class _BoundedConnections:
    """Makes PyGithub's connection (``base``) with a :class:`BoundedAdapter` mounted."""

    base: Callable[..., Any]
    scheme: str
    timeout: float
    max_bytes: int

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        connection = self.base(*args, **kwargs)
        adapter = BoundedAdapter(
            self.timeout,
            self.max_bytes,
            max_retries=connection.retry,
            pool_connections=connection.pool_size,
            pool_maxsize=connection.pool_size,
        )
        connection.adapter.close()
        connection.adapter = adapter
        connection.session.mount(f"{self.scheme}://", adapter)
        return connection
