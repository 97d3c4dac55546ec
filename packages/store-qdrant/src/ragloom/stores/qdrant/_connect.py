"""Opening a Qdrant client: exactly one of a client, a server URL, a local path or a location."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from qdrant_client import QdrantClient
from qdrant_client.local.qdrant_local import QdrantLocal

from ragloom.core.errors import EmbeddingStoreError, RagloomError

__all__ = ["collection_name", "connect"]


def collection_name(name: object) -> str:
    if not isinstance(name, str) or not name or len(name) > 255:
        raise EmbeddingStoreError(f"collection must be a non-empty str (<= 255), got {name!r}")
    if any(char in name for char in "/\\\x00") or name in (".", ".."):
        raise EmbeddingStoreError(f"collection name {name!r} may not contain '/', '\\' or NUL")
    return name


def connect(
    client: QdrantClient | None,
    url: str | None,
    path: str | os.PathLike[str] | None,
    location: str | None,
    api_key: str | None,
    timeout: int | None,
) -> tuple[QdrantClient, bool, dict[str, Any] | None]:
    """The client, whether the store owns it, and for a server, the settings an
    ``AsyncQdrantClient`` of the same server takes (exactly one connection setting)."""
    given = [
        name
        for name, value in (
            ("client", client),
            ("url", url),
            ("path", path),
            ("location", location),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise EmbeddingStoreError(
            "give exactly one of client, url, path or location "
            f"(got {', '.join(given) if given else 'none'})"
        )
    if api_key is not None and (not isinstance(api_key, str) or not api_key):
        raise EmbeddingStoreError("api_key must be a non-empty str")
    if api_key is not None and url is None and (location is None or location == ":memory:"):
        raise EmbeddingStoreError("api_key is only used with a server url")
    if timeout is not None and (type(timeout) is not int or timeout < 1):
        raise EmbeddingStoreError(f"timeout must be an int >= 1 (seconds), got {timeout!r}")
    if client is not None:
        if not isinstance(client, QdrantClient):
            raise EmbeddingStoreError(f"client must be a QdrantClient, got {type(client).__name__}")
        return client, False, None
    try:
        if url is not None:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise EmbeddingStoreError(f"url must be an http(s):// URL, got {url!r}")
            server: dict[str, Any] = {
                "url": url,
                "api_key": api_key,
                "timeout": timeout,
                "check_compatibility": False,
            }
            return QdrantClient(**server), True, server
        if path is not None:
            if not isinstance(path, str | os.PathLike) or not str(path):
                raise EmbeddingStoreError(f"path must be a directory path, got {path!r}")
            if Path(path).exists() and not Path(path).is_dir():
                raise EmbeddingStoreError(f"path {str(path)!r} exists and is not a directory")
            # The store serializes every call to a local client itself (see _guard).
            return QdrantClient(path=str(path), force_disable_check_same_thread=True), True, None
        if not isinstance(location, str) or not location:
            raise EmbeddingStoreError(
                f"location must be ':memory:' or a server URL, got {location!r}"
            )
        sync = QdrantClient(
            location=location,
            api_key=api_key,
            timeout=timeout,
            force_disable_check_same_thread=True,
        )
        local = isinstance(sync._client, QdrantLocal)
        server = {"location": location, "api_key": api_key, "timeout": timeout}  # a URL
        return sync, True, None if local else server
    except RagloomError:
        raise
    except Exception as exc:
        where = url or path or location
        raise EmbeddingStoreError(f"cannot open Qdrant at {str(where)!r}: {exc}") from exc
