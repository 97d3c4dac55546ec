"""The server-sent-events decoder on its own."""

from __future__ import annotations

from ragloom.chat_models.openai._sse import ServerSentEvent, SseDecoder


def decode(lines: list[str]) -> list[ServerSentEvent]:
    decoder = SseDecoder()
    found = [event for line in lines if (event := decoder.feed(line)) is not None]
    if (last := decoder.end()) is not None:
        found.append(last)
    return found


def test_events_are_split_by_blank_lines() -> None:
    assert decode(["data: a", "", "data: b", ""]) == [ServerSentEvent("a"), ServerSentEvent("b")]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert decode(["data: one", "data:two", "data:  three", ""]) == [
        ServerSentEvent("one\ntwo\n three")
    ]


def test_comments_ids_and_retries_are_ignored() -> None:
    assert decode([": ping", "", "id: 7", "retry: 10", "data: x", ""]) == [ServerSentEvent("x")]


def test_event_names_apply_to_one_event() -> None:
    assert decode(["event: error", "data: x", "", "data: y", ""]) == [
        ServerSentEvent("x", "error"),
        ServerSentEvent("y"),
    ]


def test_blank_lines_without_data_dispatch_nothing() -> None:
    assert decode(["", "", "event: ping", "", "data: z"]) == [ServerSentEvent("z")]


def test_field_without_colon() -> None:
    assert decode(["data", ""]) == [ServerSentEvent("")]
