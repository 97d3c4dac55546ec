"""Opening the store's pymilvus client: a URI (Milvus Lite file or server) or a given client."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

from pymilvus import AsyncMilvusClient, MilvusClient  # type: ignore[import-untyped]

from ragloom.core.errors import EmbeddingStoreError
from ragloom.stores.milvus import _lite
from ragloom.stores.milvus._schema import check_uri

__all__ = ["Connection", "connect"]


class Connection(NamedTuple):
    """The sync client and what the store keeps about it."""

    client: MilvusClient
    owned: bool
    """The store opened it (and closes it)."""
    uri: str
    """The URI, or ``"<client>"`` for a given client."""
    settings: dict[str, Any] | None
    """What an ``AsyncMilvusClient`` of the same Milvus takes (None for a given client)."""
    templates: bool
    """Whether filter values travel as expression templates."""
    lite_lease: str | None
    """The Milvus Lite server's lease (see ``_lite``), for a ``.db`` URI."""


def _optional_str(value: object, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise EmbeddingStoreError(f"{what} must be a str, got {type(value).__name__}")
    return value


def connect(
    uri: str | None,
    client: MilvusClient | None,
    async_client: AsyncMilvusClient | None,
    *,
    token: str | None,
    db_name: str | None,
    timeout: int,
    expression_templates: bool | None,
    call: Callable[..., Any],
) -> Connection:
    """The client of ``uri`` (opened with ``call``, the store's error handling) or the
    given ``client``, with the options checked."""
    if (uri is None) == (client is None):
        raise EmbeddingStoreError("give either uri (a Milvus URI or a .db path) or client")
    if expression_templates is not None and not isinstance(expression_templates, bool):
        raise EmbeddingStoreError(
            f"expression_templates must be a bool or None, got {expression_templates!r}"
        )
    if async_client is not None:
        if client is None:
            raise EmbeddingStoreError("async_client goes with client, not with uri")
        if not isinstance(async_client, AsyncMilvusClient):
            raise EmbeddingStoreError(
                "async_client must be a pymilvus.AsyncMilvusClient, "
                f"got {type(async_client).__name__}"
            )
    if client is not None:
        if not isinstance(client, MilvusClient):
            raise EmbeddingStoreError(
                f"client must be a pymilvus.MilvusClient, got {type(client).__name__}"
            )
        if token is not None or db_name is not None:
            raise EmbeddingStoreError("token and db_name go with uri, not with client")
        # A given client may be Milvus Lite: templates only when asked for.
        return Connection(client, False, "<client>", None, bool(expression_templates), None)
    checked = check_uri(uri)
    settings: dict[str, Any] = {"uri": checked, "timeout": timeout}
    if _optional_str(token, "token"):
        settings["token"] = token
    if _optional_str(db_name, "db_name"):
        settings["db_name"] = db_name
    lite = checked.endswith(".db")
    templates = (not lite) if expression_templates is None else expression_templates
    lease = _lite.acquire(checked) if lite else None
    try:
        # Its own connection alias: pymilvus shares one connection per URI otherwise, and
        # closing this store would close it under every other client of the URI.
        opened = call(
            f"connecting to Milvus at {checked}",
            MilvusClient,
            alias=f"ragloom-{uuid.uuid4().hex}",
            **settings,
        )
    except BaseException:
        if lease is not None:
            _lite.release(lease)
        raise
    return Connection(opened, True, checked, settings, templates, lease)
