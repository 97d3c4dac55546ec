"""chat-openai against a hostile server: every misbehaviour is a bounded, clear error."""

from __future__ import annotations

import asyncio
import time

import pytest

from ragloom.chat_models.openai import OpenAiChatModel
from ragloom.core import ChatModelError
from ragloom.core.chat import UserMessage

MESSAGES = [UserMessage("hello")]


def model(hostile: str, mode: str, **options: object) -> OpenAiChatModel:
    return OpenAiChatModel(
        model_name="m", base_url=f"{hostile}/{mode}/v1", api_key="", max_retries=0, **options
    )


def bounded(seconds: float, call: object) -> ChatModelError:
    """Run ``call``; it must raise a ChatModelError within ``seconds``."""
    started = time.monotonic()
    with pytest.raises(ChatModelError) as info:
        call()  # type: ignore[operator]
    assert time.monotonic() - started < seconds
    return info.value


def test_a_dripping_server_is_bounded_by_the_timeout(hostile: str) -> None:
    error = bounded(8, lambda: model(hostile, "drip", timeout=1).chat(MESSAGES))
    assert "within the timeout" in str(error)


def test_a_dripping_server_is_bounded_async(hostile: str) -> None:
    error = bounded(8, lambda: asyncio.run(model(hostile, "drip", timeout=1).achat(MESSAGES)))
    assert "timeout" in str(error)


def test_a_stall_after_headers_is_a_timeout_error(hostile: str) -> None:
    bounded(8, lambda: model(hostile, "stall", timeout=1).chat(MESSAGES))
    bounded(8, lambda: list(model(hostile, "stall", timeout=1).stream(MESSAGES)))


def test_a_huge_body_is_refused_not_read(hostile: str) -> None:
    error = bounded(20, lambda: model(hostile, "huge", max_response_bytes=1_000_000).chat(MESSAGES))
    assert "max_response_bytes=1,000,000" in str(error)


def test_deeply_nested_json_is_a_clear_error(hostile: str) -> None:
    error = bounded(10, lambda: model(hostile, "nested").chat(MESSAGES))
    assert "JSON" in str(error)


def test_keep_alive_comments_do_not_extend_a_stalled_stream(hostile: str) -> None:
    error = bounded(8, lambda: list(model(hostile, "keepalive", timeout=1).stream(MESSAGES)))
    assert "stalled" in str(error)


def test_keep_alive_comments_do_not_extend_a_stalled_stream_async(hostile: str) -> None:
    async def consume() -> None:
        async for _ in model(hostile, "keepalive", timeout=1).astream(MESSAGES):
            pass

    error = bounded(8, lambda: asyncio.run(consume()))
    assert "stalled" in str(error)


def test_a_cut_stream_is_a_clear_error(hostile: str) -> None:
    bounded(8, lambda: list(model(hostile, "cut", timeout=2).stream(MESSAGES)))
