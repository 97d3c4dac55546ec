"""ServerSettings: the server's configuration, from a TOML file and ``RAGLOOM_SERVER_*``.

Precedence, highest first: keyword arguments, environment variables
(``RAGLOOM_SERVER_INDEX``, ``RAGLOOM_SERVER_API_KEYS`` as JSON, ...), the TOML file
(``RAGLOOM_SERVER_CONFIG`` or ``--config``), the defaults below. A bad value fails at start
with :class:`ServerConfigError` naming the field, never later at a request.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from ragloom.core.errors import RagloomError

__all__ = [
    "CONFIG_ENV",
    "TENANT_PATTERN",
    "ApiKey",
    "ServerConfigError",
    "ServerSettings",
    "StoreSettings",
]

CONFIG_ENV = "RAGLOOM_SERVER_CONFIG"
TENANT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MIB = 1 << 20


class ServerConfigError(RagloomError, ValueError):
    """The server configuration is invalid (names the field and the reason)."""


class ApiKey(BaseModel):
    """One API key: ``tenant`` scopes everything it reads and writes; ``None`` is an admin
    key that sees every tenant (and the documents ``ragloom ingest`` added)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: SecretStr = Field(min_length=16, description="the bearer token, 16+ characters")
    tenant: str | None = None
    name: str = Field(default="", max_length=64, description="a label for logs and metrics")
    rate_limit: float | None = Field(
        default=None, ge=0, description="requests per second for this key (else the server's)"
    )
    rate_burst: int | None = Field(default=None, ge=1, description="this key's bucket size")

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, value: str | None) -> str | None:
        if value is not None and not TENANT_PATTERN.fullmatch(value):
            raise ValueError(
                f"tenant {value!r}: use 1-64 letters, digits, '_', '.', '-' (first a letter "
                "or digit)"
            )
        return value


class StoreSettings(BaseModel):
    """Where the vectors live: ``memory`` (persisted in the index directory) or the name
    of an installed store (entry-point group ``ragloom.embedding_stores``: ``pgvector``,
    ``qdrant``, ``milvus``) with its keyword arguments in ``options``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(default="memory", min_length=1, max_length=64)
    options: dict[str, Any] = Field(
        default_factory=dict, description="the store's keyword arguments (e.g. connection)"
    )


class ServerSettings(BaseSettings):
    """Everything ``ragloom serve`` and ``ragloom mcp`` read; see docs/serving.md."""

    model_config = SettingsConfigDict(
        env_prefix="RAGLOOM_SERVER_", extra="forbid", validate_default=True
    )

    index: Path = Field(default=Path(".ragloom-index"), description="the index directory")
    store: StoreSettings = Field(
        default_factory=StoreSettings, description="the vector store (default: in memory)"
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    model_name: str = Field(default="ragloom", min_length=1, max_length=64)
    api_keys: list[ApiKey] = Field(
        default_factory=list, description="none: no authentication (loopback only)"
    )
    max_body_bytes: int = Field(default=1 * MIB, ge=1024, description="JSON request bodies")
    max_upload_bytes: int = Field(default=20 * MIB, ge=1024, description="one upload request")
    max_results: int = Field(default=20, ge=1, le=1000, description="cap on max_results")
    default_max_results: int = Field(default=4, ge=1)
    request_timeout: float = Field(default=60.0, gt=0, description="seconds per request")
    memory_users: int = Field(default=1000, ge=1, description="conversations remembered")
    memory_messages: int = Field(default=10, ge=2, description="messages per conversation")
    max_concurrency: int = Field(default=64, ge=1, description="API requests in flight before 503")
    max_connections: int = Field(
        default=256, ge=1, description="open connections before uvicorn answers 503"
    )
    rate_limit: float = Field(
        default=20.0, ge=0, description="requests per second per key (0: unlimited)"
    )
    rate_burst: int = Field(default=40, ge=1, description="requests a key may send at once")
    body_timeout: float = Field(
        default=30.0, gt=0, description="seconds to receive a whole request body, else 408"
    )
    header_timeout: float = Field(
        default=10.0, gt=0, description="seconds to receive a request's headers, else closed"
    )
    max_jobs: int = Field(default=1000, ge=1, description="ingestion jobs kept for status")
    blas_threads: int = Field(
        default=1, ge=0, description="numpy's BLAS threads (0: as the environment sets)"
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then the environment, then the TOML file of ``RAGLOOM_SERVER_CONFIG``."""
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config = os.environ.get(CONFIG_ENV)
        if config:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=Path(config)))
        return tuple(sources)

    @classmethod
    def load(
        cls, config_file: str | os.PathLike[str] | None = None, **overrides: Any
    ) -> ServerSettings:
        """The settings, with ``config_file`` as the TOML file; errors name the field."""
        previous = os.environ.get(CONFIG_ENV)
        if config_file is not None:
            if not Path(config_file).is_file():
                raise ServerConfigError(f"--config {config_file}: no such file")
            os.environ[CONFIG_ENV] = str(config_file)
        try:
            settings = cls(**overrides)
        except ValidationError as exc:
            raise ServerConfigError(_describe(exc)) from None
        except ValueError as exc:  # an unreadable TOML file
            raise ServerConfigError(f"configuration file: {exc}") from None
        finally:
            if config_file is not None:
                if previous is None:
                    os.environ.pop(CONFIG_ENV, None)
                else:
                    os.environ[CONFIG_ENV] = previous
        if settings.default_max_results > settings.max_results:
            raise ServerConfigError(
                f"default_max_results {settings.default_max_results} exceeds max_results "
                f"{settings.max_results}"
            )
        keys = [k.key.get_secret_value() for k in settings.api_keys]
        if len(set(keys)) != len(keys):
            raise ServerConfigError("api_keys: the same key is listed twice")
        return settings


def _describe(error: ValidationError) -> str:
    """``api_keys.0.tenant: ...; port: ...``: each bad field and why (never the value of a key)."""
    parts = []
    for item in error.errors(include_input=False):
        where = ".".join(str(part) for part in item["loc"]) or "configuration"
        parts.append(f"{where}: {item['msg']}")
    return "invalid server configuration: " + "; ".join(parts)
