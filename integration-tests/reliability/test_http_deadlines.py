"""Header drip and slow redirect chains against every client on the kit's bounded call:
chat-openai (sync, async, streamed both ways) and both rerank clients end within their
timeout + 1 s with their own timeout error (issue 33)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from ragloom.chat_models.openai import OpenAiChatModel, OpenAiChatModelError
from ragloom.core.chat import UserMessage
from ragloom.core.errors import ScoringTimeoutError
from ragloom.core.kit.http import HttpErrorKind
from ragloom.core.retry import RetryPolicy
from ragloom.scoring_models.cohere import CohereScoringModel
from ragloom.scoring_models.http import HttpScoringModel

TIMEOUT = 1.0
MODES = ["headerdrip", "slowredirect/0"]
MESSAGES = [UserMessage("hello")]


def ends_in_time(call: Callable[[], object], error: type[Exception]) -> Exception:
    """``call`` raises ``error`` within the timeout + 1 s."""
    started = time.monotonic()
    with pytest.raises(error) as info:
        call()
    assert time.monotonic() - started < TIMEOUT + 1
    return info.value


def chat(hostile: str, mode: str) -> OpenAiChatModel:
    return OpenAiChatModel(
        model_name="m", base_url=f"{hostile}/{mode}/v1", api_key="", timeout=TIMEOUT, max_retries=0
    )


async def _collect(model: OpenAiChatModel) -> list[object]:
    return [part async for part in model.astream(MESSAGES)]


@pytest.mark.parametrize("mode", MODES)
def test_chat_openai_ends_in_time(hostile: str, mode: str) -> None:
    calls: list[Callable[[], object]] = [
        lambda: chat(hostile, mode).chat(MESSAGES),
        lambda: asyncio.run(chat(hostile, mode).achat(MESSAGES)),
        lambda: list(chat(hostile, mode).stream(MESSAGES)),
        lambda: asyncio.run(_collect(chat(hostile, mode))),
    ]
    for call in calls:
        error = ends_in_time(call, OpenAiChatModelError)
        assert isinstance(error, OpenAiChatModelError)
        assert error.kind is HttpErrorKind.TIMEOUT, error


@pytest.mark.parametrize("mode", MODES)
def test_rerank_clients_end_in_time(hostile: str, mode: str) -> None:
    once = RetryPolicy(max_retries=0)
    cohere = CohereScoringModel(
        api_key="k", base_url=f"{hostile}/{mode}", timeout=TIMEOUT, retry=once
    )
    tei = HttpScoringModel(f"{hostile}/{mode}", timeout=TIMEOUT, retry=once)
    for model in (cohere, tei):
        with model:
            error = ends_in_time(lambda: model.score_all(["a", "b"], "q"), ScoringTimeoutError)  # noqa: B023
            assert "no answer within the timeout" in str(error)
