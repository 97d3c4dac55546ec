"""API keys → principals: constant-time comparison, ``Authorization: Bearer <key>``."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from ragloom.server.service import Principal
from ragloom.server.settings import ServerSettings

__all__ = ["ANONYMOUS", "Authenticator"]

ANONYMOUS = Principal("anonymous", None)


class Authenticator:
    """Finds the principal of a request's bearer key (``None``: missing or wrong key)."""

    def __init__(self, settings: ServerSettings) -> None:
        self._keys = [
            (k.key.get_secret_value().encode(), Principal(k.name or f"key{n}", k.tenant))
            for n, k in enumerate(settings.api_keys, 1)
        ]

    @property
    def open(self) -> bool:
        """No keys configured: every request is the anonymous admin (loopback use)."""
        return not self._keys

    def principal(self, headers: Mapping[str, str] | None) -> Principal | None:
        """The principal of ``headers``' bearer key; every key is compared (no early exit)."""
        found = self.lookup(headers)
        return None if found is None else found[1]

    def lookup(self, headers: Mapping[str, str] | None) -> tuple[int, Principal] | None:
        """The position of ``headers``' key in ``api_keys`` (``-1``: no keys configured)
        and its principal; ``None`` for a missing or wrong key."""
        if self.open:
            return -1, ANONYMOUS
        value = (headers or {}).get("authorization") or (headers or {}).get("Authorization")
        if not value or value[:7].lower() != "bearer ":
            return None
        given = value[7:].strip().encode()
        found = None
        for position, (key, principal) in enumerate(self._keys):
            if hmac.compare_digest(key, given):
                found = position, principal
        return found
