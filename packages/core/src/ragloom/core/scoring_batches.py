"""What every client of a hosted or self-hosted rerank API needs, in one place.

A rerank API scores a batch of documents for a query and answers ``(index, score)``
pairs, usually sorted by score. Its clients (``ragloom-scoring-cohere``,
``ragloom-scoring-http``) share, through this module:

- :func:`batches`: splitting more documents than one call takes into calls;
- retries of 408/429/5xx and of lost connections by a
  :class:`~ragloom.core.retry.RetryPolicy` (backoff, the server's ``Retry-After``);
- the errors (:class:`ScoringModelError` and its kinds), naming the provider, the model,
  the URL, the HTTP status and the server's own message;
- :func:`scores_in_input_order`: mapping the pairs back to input order, refusing
  truncated, duplicated or out-of-range answers.

:class:`RerankEndpoint.call` needs no HTTP library: a client passes a ``send`` function
that makes one request with its own HTTP library and returns a :class:`Reply` (or raises
:class:`TransportFailure`). Clients on httpx subclass :class:`HttpxRerankClient`, which
calls through the kit's bounded call (:class:`~ragloom.core.kit.http.HttpClient`: one
deadline for connect, headers and body, a byte cap, the retries) and maps its outcome
with :meth:`RerankEndpoint.answer` and :meth:`RerankEndpoint.call_error`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import (
    InvalidArgumentError,
    RetrievalError,
    ScoringAuthenticationError,
    ScoringConnectionError,
    ScoringModelError,
    ScoringRateLimitError,
    ScoringResponseError,
    ScoringServerError,
    ScoringStatusError,
    ScoringTimeoutError,
)
from ragloom.core.kit.egress import ALLOW_ALL
from ragloom.core.kit.http import HttpCallError, HttpClient, HttpErrorKind
from ragloom.core.kit.retrying import Pause, retrying
from ragloom.core.kit.steps import run_steps
from ragloom.core.retry import RetryPolicy, retry_after
from ragloom.core.scoring import ScoringResult

__all__ = [
    "BatchScorer",
    "HttpxRerankClient",
    "RerankEndpoint",
    "Reply",
    "RetryPolicy",
    "ScoringAuthenticationError",
    "ScoringConnectionError",
    "ScoringModelError",
    "ScoringRateLimitError",
    "ScoringResponseError",
    "ScoringServerError",
    "ScoringStatusError",
    "ScoringTimeoutError",
    "TransportFailure",
    "batches",
    "check_batch_size",
    "retry_after",
    "score_in_batches",
    "scores_in_input_order",
    "server_message",
]

_EXCERPT = 300


@dataclass(frozen=True, slots=True)
class Reply:
    """One HTTP answer, as the retry logic needs it (headers looked up case-insensitively)."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class TransportFailure(Exception):
    """Raised by a ``send`` function when no answer arrived (``timeout``: by timeout)."""

    def __init__(self, reason: str, *, timeout: bool = False) -> None:
        super().__init__(reason)
        self.timeout = timeout


def _clip(text: str) -> str:
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


def server_message(body: bytes) -> str:
    """The server's explanation in an error body, whatever the server.

    Understands ``{"message": ...}`` (Cohere), ``{"error": "...", "error_type": ...}``
    (text-embeddings-inference), ``{"error": {"message": ...}}`` (OpenAI style: vLLM,
    Infinity, Jina), ``{"detail": ...}`` (FastAPI); anything else is quoted.
    """
    if not body:
        return "(empty body)"
    try:
        data: Any = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        data = None
    if isinstance(data, dict):
        for key in ("error", "message", "detail"):
            value = data.get(key)
            if isinstance(value, dict) and isinstance(value.get("message"), str):
                value = value["message"]
            if isinstance(value, str) and value:
                kind = data.get("error_type") or data.get("type")
                return _clip(f"{value} [{kind}]" if isinstance(kind, str) and kind else value)
            if isinstance(value, list) and value:
                return _clip(json.dumps(value))
    return repr(_clip(body.decode("utf-8", "replace").strip()))


def check_batch_size(batch_size: int, limit: int, provider: str) -> int:
    """``batch_size`` if it is an int in ``[1, limit]``; else InvalidArgumentError."""
    if type(batch_size) is not int or not 1 <= batch_size <= limit:
        raise InvalidArgumentError(
            f"batch_size must be an int from 1 to {limit} ({provider}'s limit of documents "
            f"per call), got {batch_size!r}"
        )
    return batch_size


def batches(count: int, size: int) -> Iterator[range]:
    """The index ranges of consecutive batches of at most ``size`` out of ``count``."""
    for start in range(0, count, size):
        yield range(start, min(start + size, count))


BatchScorer = Callable[[list[str]], tuple[list[float], TokenUsage | None]]
"""Scores one batch of texts (one API call): scores in input order, tokens used."""


def score_in_batches(texts: Sequence[str], size: int, score_batch: BatchScorer) -> ScoringResult:
    """Every text's score, ``size`` texts per call, in input order; usages added up.

    A cross-encoder scores each (query, text) pair on its own, so splitting does not
    change the scores. Token usage is ``None`` unless some call reported it.
    """
    scores: list[float] = []
    usage: TokenUsage | None = None
    for batch in batches(len(texts), size):
        batch_scores, batch_usage = score_batch([texts[i] for i in batch])
        if len(batch_scores) != len(batch):
            raise RetrievalError(f"a batch of {len(batch)} texts got {len(batch_scores)} scores")
        scores.extend(batch_scores)
        if batch_usage is not None:
            usage = batch_usage if usage is None else usage + batch_usage
    return ScoringResult(scores, usage)


@dataclass(frozen=True, slots=True)
class RerankEndpoint:
    """One rerank endpoint of one model: how to call it and how to report its failures.

    ``provider`` and ``model`` name it in every error message; ``auth_hint`` says where
    the API key came from (for 401/403; never the key itself).
    """

    provider: str
    url: str
    model: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    auth_hint: str = ""

    @property
    def subject(self) -> str:
        model = f" (model {self.model!r})" if self.model else ""
        return f"{self.provider} rerank{model} at {self.url}"

    def error(
        self, kind: type[ScoringModelError], message: str, status: int | None = None
    ) -> ScoringModelError:
        """An error of ``kind`` whose message starts with the subject."""
        return kind(
            f"{self.subject}: {message}", model=self.model, url=self.url, status_code=status
        )

    def call(self, send: Callable[[], Reply]) -> Any:
        """``send`` until it succeeds or retries run out; the decoded JSON of the answer.

        Retried: HTTP 408, 429, 5xx and :class:`TransportFailure`. Everything else
        raises at once: the fitting :class:`ScoringModelError`, the cause chained.
        """

        def attempt() -> Generator[Callable[[], Reply], Reply, Reply]:
            return (yield send)

        def gave_up(exc: Exception, attempts: int) -> BaseException:
            if isinstance(exc, TransportFailure):
                return self._transport_error(exc, attempts)
            return exc

        def perform(step: Callable[[], Reply] | Pause) -> Reply | None:
            if isinstance(step, Pause):
                step.policy.sleep(step.seconds)
                return None
            return step()

        steps = retrying(
            attempt,
            self.retry,
            status=lambda reply: (reply.status, reply.headers, None),
            retried=lambda exc: isinstance(exc, TransportFailure),
            gave_up=gave_up,
        )
        done = run_steps(steps, perform)
        return self.answer(done.answer, done.attempts, done.note)

    def answer(self, reply: Reply, attempts: int, note: str = "") -> Any:
        """The decoded JSON of a 2xx ``reply``; else the fitting :class:`ScoringModelError`
        (``attempts`` made, ``note`` on why it was not retried)."""
        if 200 <= reply.status < 300:
            return self.decode(reply)
        raise self.status_error(reply, attempts, note)

    def call_error(self, exc: HttpCallError) -> ScoringModelError:
        """The error for a call of the kit that got no answer (timeout, connection, size)."""
        timeout = exc.kind is HttpErrorKind.TIMEOUT
        return self._transport_error(TransportFailure(str(exc), timeout=timeout), exc.attempts)

    def decode(self, reply: Reply) -> Any:
        """The JSON body of a successful answer; ScoringResponseError when it is not JSON."""
        try:
            return json.loads(reply.body)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            excerpt = _clip(reply.body.decode("utf-8", "replace").strip())
            raise self.error(
                ScoringResponseError,
                f"answered HTTP {reply.status} with a body that is not JSON: {excerpt!r}",
                reply.status,
            ) from exc

    def status_error(self, reply: Reply, attempts: int, note: str = "") -> ScoringModelError:
        """The error for an HTTP error status, with the server's own message."""
        status = reply.status
        detail = server_message(reply.body)
        tried = f" after {attempts} attempts" if attempts > 1 else ""
        if status in (401, 403):
            what = "authentication failed" if status == 401 else "access denied"
            hint = f"; API key used: {self.auth_hint}" if self.auth_hint else ""
            return self.error(
                ScoringAuthenticationError, f"{what} (HTTP {status}): {detail}{hint}", status
            )
        kind: type[ScoringModelError] = ScoringStatusError
        what = f"HTTP {status}"
        if status == 429:
            kind, what = ScoringRateLimitError, "rate limited (HTTP 429)"
        elif status >= 500:
            kind, what = ScoringServerError, f"server error (HTTP {status})"
        return self.error(kind, f"{what}{tried}{note}: {detail}", status)

    def _transport_error(self, exc: TransportFailure, attempts: int) -> ScoringModelError:
        tried = f" ({attempts} attempts)" if attempts > 1 else ""
        if exc.timeout:
            return self.error(ScoringTimeoutError, f"no answer within the timeout{tried}: {exc}")
        return self.error(
            ScoringConnectionError, f"cannot reach the server{tried}: {exc}; is it running?"
        )

    def response_error(self, message: str) -> ScoringModelError:
        """A :class:`ScoringResponseError` for an answer that breaks the documented format."""
        return self.error(ScoringResponseError, message)


class HttpxRerankClient:
    """The HTTP side of a rerank client: JSON POSTs to ``self._endpoint`` with
    ``self._headers`` through the kit's bounded call (an endpoint of the caller's
    configuration: every address allowed, the deadline and byte cap kept; redirects are
    answers, as before), over one pooled client or the ``httpx.Client`` passed in (which
    stays the caller's to close); ``close()``/``with`` release what this client opened."""

    _endpoint: RerankEndpoint
    _headers: dict[str, str]

    def _connect(self, http_client: Any | None, timeout: float) -> None:
        self._timeout = float(timeout)  # bounds each attempt as a whole
        self._http = HttpClient(egress=ALLOW_ALL, client=http_client, follow_redirects=False)

    def _post(self, body: Mapping[str, Any]) -> Any:
        """The decoded JSON answer to ``body``, retried by the endpoint's policy."""
        try:
            reply = self._http.request(
                "POST",
                self._endpoint.url,
                timeout=self._timeout,
                json=body,
                headers=self._headers,
                retry=self._endpoint.retry,
            )
        except HttpCallError as exc:
            raise self._endpoint.call_error(exc) from exc
        answer = Reply(reply.status, reply.headers, reply.body)
        return self._endpoint.answer(answer, reply.attempts, reply.retry_note)

    def close(self) -> None:
        """Release the pooled connections (not those of an ``http_client`` passed in)."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def scores_in_input_order(
    pairs: Iterable[tuple[object, object]],
    count: int,
    endpoint: RerankEndpoint,
    *,
    required: int | None = None,
    fill: float = 0.0,
) -> list[float]:
    """The scores of ``(index, score)`` pairs, placed at their index, for ``count`` inputs.

    Servers answer sorted by score, not by input; this puts each score back at its
    document. Every index must be answered, unless ``required`` (a ``top_n`` request)
    says how many: the unanswered ones then score ``fill``. A missing, repeated or
    out-of-range index, or a score that is not a finite number, is a
    :class:`ScoringResponseError` naming it.
    """
    scores: list[float | None] = [None] * count
    for index, score in pairs:
        if type(index) is not int or not 0 <= index < count:
            raise endpoint.response_error(f"answered index {index!r} for {count} documents sent")
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise endpoint.response_error(
                f"answered score {score!r} (not a number) for document {index}"
            )
        if not math.isfinite(score):
            raise endpoint.response_error(f"answered score {score!r} for document {index}")
        if scores[index] is not None:
            raise endpoint.response_error(f"answered document {index} twice")
        scores[index] = float(score)
    missing = [i for i, s in enumerate(scores) if s is None]
    if required is not None and count - len(missing) >= required:
        return [fill if s is None else s for s in scores]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        raise endpoint.response_error(
            f"answered {count - len(missing)} scores for {count} documents sent "
            f"(truncated answer; missing indexes {shown})"
        )
    return [s for s in scores if s is not None]
