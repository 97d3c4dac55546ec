"""ragloom.server: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.server
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.server,
        [
            "SOURCES_FIELD",
            "ApiKey",
            "IndexService",
            "Principal",
            "ServerConfigError",
            "ServerSettings",
            "StoreSettings",
            "build_mcp",
            "create_app",
        ],
    )
