"""OpenAiEmbeddingModel: an EmbeddingModel over the OpenAI ``/embeddings`` wire format."""

from __future__ import annotations

import array
import base64
import binascii
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import httpx

from ragloom.chat_models.openai._http import (
    DEFAULT_BASE_URL,
    DEFAULT_TIMEOUT,
    ApiClient,
    ApiModel,
    RetryPolicy,
    make_timeout,
    normalize_base_url,
    resolve_api_key,
)
from ragloom.chat_models.openai.errors import OpenAiEmbeddingModelError
from ragloom.core.document import TextSegment
from ragloom.core.embedding import (
    Embedding,
    EmbeddingModel,
    EmbeddingResult,
    TokenUsage,
    text_of,
)
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.kit.http import HttpErrorKind

__all__ = ["EMBEDDING_API_KEY_ENV", "OpenAiEmbeddingModel"]

EMBEDDING_API_KEY_ENV = ("RAGLOOM_EMBEDDING_API_KEY", "OPENAI_API_KEY")
"""Where the embedding model looks for its API key when none is passed."""

_PATH = "embeddings"
EncodingFormat = Literal["float", "base64"]


class OpenAiEmbeddingModel(ApiModel, EmbeddingModel):
    """An embedding model behind an OpenAI-compatible ``/embeddings`` endpoint.

    ``embed_all`` sends the texts in batches of at most ``batch_size`` (one request
    each, in order) and adds up the token usage the server reports. ``dimensions`` is
    sent to the server (OpenAI's text-embedding-3 models shorten their vectors to it)
    and checked against every answer; without it :attr:`dimension` embeds a probe text
    once. ``encoding_format="base64"`` asks for little-endian float32 in base64 (smaller
    answers; not every server supports it). The API key is ``api_key``, else
    ``$RAGLOOM_EMBEDDING_API_KEY``, else ``$OPENAI_API_KEY``. ``timeout``,
    ``max_retries``, ``retry_policy``, ``organization``, ``headers``, ``http_client`` and
    ``async_http_client`` (for :meth:`aembed_all`) work as for
    :class:`~ragloom.chat_models.openai.OpenAiChatModel`. Errors are
    :class:`~ragloom.chat_models.openai.errors.OpenAiEmbeddingModelError` s (thus
    :class:`~ragloom.core.errors.EmbeddingModelError` s) with their ``kind``.
    """

    def __init__(
        self,
        *,
        model_name: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 256,
        encoding_format: EncodingFormat = "float",
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        organization: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if not isinstance(model_name, str) or not model_name.strip():
            raise InvalidArgumentError(f"model_name must be a non-empty str, got {model_name!r}")
        if dimensions is not None and (type(dimensions) is not int or dimensions < 1):
            raise InvalidArgumentError(
                f"dimensions must be a positive int or None, got {dimensions!r}"
            )
        if type(batch_size) is not int or batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
        if encoding_format not in ("float", "base64"):
            raise InvalidArgumentError(
                f"encoding_format must be 'float' or 'base64', got {encoding_format!r}"
            )
        key, source = resolve_api_key(api_key, EMBEDDING_API_KEY_ENV)
        policy = retry_policy or RetryPolicy()
        if max_retries is not None:
            policy = RetryPolicy(
                max_retries=max_retries,
                initial_delay=policy.initial_delay,
                max_delay=policy.max_delay,
                jitter=policy.jitter,
                max_retry_after=policy.max_retry_after,
                sleep=policy.sleep,
                async_sleep=policy.async_sleep,
            )
        self._dimensions = dimensions
        self._dimension = dimensions
        self._batch_size = batch_size
        self._encoding_format = encoding_format
        self._lock = threading.Lock()
        self._api = ApiClient(
            base_url=normalize_base_url(base_url),
            api_key=key,
            key_source=source,
            model_name=model_name,
            subject=f"embedding model {model_name!r}",
            error_type=OpenAiEmbeddingModelError,
            timeout=make_timeout(timeout),
            retry=policy,
            organization=organization,
            headers=headers,
            http_client=http_client,
            async_http_client=async_http_client,
        )

    @classmethod
    def from_env(cls, **options: Any) -> OpenAiEmbeddingModel:
        """The embedding model the environment configures.

        Reads ``$RAGLOOM_EMBEDDING_MODEL_NAME`` (required), ``$RAGLOOM_EMBEDDING_BASE_URL``
        (else OpenAI's API) and the key from ``$RAGLOOM_EMBEDDING_API_KEY`` or
        ``$OPENAI_API_KEY``; keyword ``options`` win. Raises
        :class:`~ragloom.chat_models.openai.errors.OpenAiEmbeddingModelError` (``kind``
        None) naming the variables when the model name is missing.
        """
        model_name = options.pop("model_name", None) or _env("RAGLOOM_EMBEDDING_MODEL_NAME")
        base_url = (
            options.pop("base_url", None) or _env("RAGLOOM_EMBEDDING_BASE_URL") or DEFAULT_BASE_URL
        )
        if not model_name:
            raise OpenAiEmbeddingModelError(
                "no embedding model is configured: set RAGLOOM_EMBEDDING_MODEL_NAME (e.g. "
                "text-embedding-3-small) and, for a server other than OpenAI, "
                "RAGLOOM_EMBEDDING_BASE_URL; the API key comes from RAGLOOM_EMBEDDING_API_KEY "
                "or OPENAI_API_KEY",
                url=base_url,
            )
        return cls(model_name=model_name, base_url=base_url, **options)

    @property
    def batch_size(self) -> int:
        """The most texts sent in one request."""
        return self._batch_size

    @property
    def dimension(self) -> int:
        """The dimension of the embeddings (``dimensions``, else probed once and cached)."""
        if self._dimension is None:
            self.embed("dimension")
        assert self._dimension is not None  # set by every successful call
        return self._dimension

    def __repr__(self) -> str:
        return f"OpenAiEmbeddingModel(model_name={self.model_name!r}, base_url={self.base_url!r})"

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """One embedding per text, in order; token usage summed over the requests."""
        embeddings: list[Embedding] = []
        usage: TokenUsage | None = None
        for batch in self._batches(texts):
            body = self._api.post(_PATH, self._payload(batch))
            batch_embeddings, batch_usage = self._parse(body, len(batch))
            embeddings.extend(batch_embeddings)
            usage = batch_usage + usage if batch_usage is not None else usage
        return EmbeddingResult(embeddings, usage)

    async def aembed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """:meth:`embed_all` for asyncio, over ``httpx.AsyncClient`` (``async_http_client``,
        else one opened per call); the batches are sent one after the other, in order."""
        embeddings: list[Embedding] = []
        usage: TokenUsage | None = None
        for batch in self._batches(texts):
            body = await self._api.apost(_PATH, self._payload(batch))
            batch_embeddings, batch_usage = self._parse(body, len(batch))
            embeddings.extend(batch_embeddings)
            usage = batch_usage + usage if batch_usage is not None else usage
        return EmbeddingResult(embeddings, usage)

    def _batches(self, texts: Sequence[str | TextSegment]) -> list[list[str]]:
        """The texts, checked, in request-sized batches."""
        if isinstance(texts, str | TextSegment):
            raise InvalidArgumentTypeError("embed_all takes a sequence of texts; use embed for one")
        inputs = [text_of(item) for item in texts]
        return [
            inputs[start : start + self._batch_size]
            for start in range(0, len(inputs), self._batch_size)
        ]

    def _payload(self, batch: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model_name,
            "input": batch,
            "encoding_format": self._encoding_format,
        }
        if self._dimensions is not None:
            payload["dimensions"] = self._dimensions
        return payload

    def _parse(self, body: Any, expected: int) -> tuple[list[Embedding], TokenUsage | None]:
        url = self._api.url(_PATH)

        def bad(problem: str) -> Exception:
            return self._api.error(HttpErrorKind.PROTOCOL, f"{url} answered with {problem}", url)

        if not isinstance(body, dict) or not isinstance(body.get("data"), list):
            raise bad(f"no 'data' list of embeddings: {_clip(repr(body))}")
        items = body["data"]
        if len(items) != expected:
            raise bad(f"{len(items)} embeddings for {expected} inputs")
        vectors: list[Any] = [None] * expected
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                raise bad(f"an embedding entry that is not an object: {_clip(repr(item))}")
            index = item.get("index", position)
            if type(index) is not int or not 0 <= index < expected or vectors[index] is not None:
                raise bad(f"an embedding entry with a bad or repeated index {index!r}")
            vectors[index] = self._vector(item.get("embedding"), bad)
        dimensions = {len(vector) for vector in vectors}
        if len(dimensions) > 1:
            raise bad(f"embeddings of different dimensions {sorted(dimensions)}")
        dimension = dimensions.pop() if dimensions else None
        if dimension is not None:
            if self._dimensions is not None and dimension != self._dimensions:
                raise bad(
                    f"embeddings of dimension {dimension}, not the {self._dimensions} requested "
                    "(does this model support the dimensions parameter?)"
                )
            with self._lock:
                if self._dimension is None:
                    self._dimension = dimension
                elif self._dimension != dimension:
                    raise bad(
                        f"embeddings of dimension {dimension}, earlier calls gave {self._dimension}"
                    )
        try:
            embeddings = [Embedding(vector) for vector in vectors]
        except ValueError as exc:
            raise bad(f"an invalid embedding: {exc}") from exc
        return embeddings, _usage(body.get("usage"))

    def _vector(self, raw: object, bad: Any) -> Sequence[float]:
        if isinstance(raw, str):  # base64 of little-endian float32
            try:
                data = base64.b64decode(raw, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise bad("an embedding string that is not base64") from exc
            if not data or len(data) % 4:
                raise bad(f"a base64 embedding of {len(data)} bytes, not float32 values")
            values = array.array("f", data)
            if sys.byteorder == "big":
                values.byteswap()
            return values
        if (
            isinstance(raw, list)
            and raw
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw)
        ):
            return raw
        raise bad(f"an embedding that is not a non-empty list of numbers: {_clip(repr(raw))}")


def _usage(usage: object) -> TokenUsage | None:
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("prompt_tokens")
    total = usage.get("total_tokens")
    prompt = prompt if type(prompt) is int and prompt >= 0 else None
    total = total if type(total) is int and total >= 0 else None
    if prompt is None and total is None:
        return None
    return TokenUsage(input_token_count=prompt, total_token_count=total)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None
