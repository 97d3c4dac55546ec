"""Clear errors from the local server's failures: auth, 404, bad JSON, refused, timeouts."""

from __future__ import annotations

import asyncio
import pickle
import socket
import time

import pytest
from openai_helpers import (
    API_KEY,
    Sleeps,
    chat_error,
    chat_model,
    closed_after_test,
    embedding_model,
)

from ragloom.chat_models.openai import (
    OpenAiChatModel,
    OpenAiChatModelError,
    OpenAiEmbeddingModelError,
    OpenAiError,
    OpenAiPromptTooLongError,
)
from ragloom.chat_models.openai.testing import (
    WireServer,
    broken_stream,
    delay,
    events,
    raw,
    sse,
    stalled_stream,
    status,
)
from ragloom.core.chat import UserMessage
from ragloom.core.errors import (
    ChatModelError,
    EmbeddingModelError,
    InvalidArgumentError,
    RagloomError,
)
from ragloom.core.kit.http import HttpErrorKind

HELLO = [UserMessage("hello there")]


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def assert_no_key(error: BaseException, key: str = API_KEY) -> None:
    while error is not None:
        assert key not in str(error)
        assert key not in repr(error)
        error = error.__cause__ or error.__context__  # type: ignore[assignment]


# -- authentication --------------------------------------------------------------------


def test_wrong_key_is_an_authentication_error_naming_the_url_not_the_key(
    server: WireServer,
) -> None:
    wrong = "sk-wrong-secret-key-42"
    with chat_error(HttpErrorKind.AUTHENTICATION, status=401) as caught:
        chat_model(server, api_key=wrong).chat(HELLO)
    error = caught.value
    assert isinstance(error, ChatModelError)
    assert isinstance(error, OpenAiChatModelError)
    assert error.status_code == 401
    message = str(error)
    assert "authentication failed (HTTP 401)" in message
    assert server.url in message
    assert "API key used: the api_key argument" in message
    assert "Incorrect API key provided: ***" in message  # the server echoed it; redacted
    assert_no_key(error, wrong)
    assert len(server.requests) == 1  # not retried


def test_missing_key_says_where_a_key_would_come_from(server: WireServer) -> None:
    with chat_error(
        HttpErrorKind.AUTHENTICATION, match=r"\$RAGLOOM_CHAT_API_KEY.*\$OPENAI_API_KEY"
    ):
        chat_model(server, api_key=None).chat(HELLO)


def test_key_from_the_environment_is_named_by_its_variable(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-wrong")
    with chat_error(HttpErrorKind.AUTHENTICATION, match=r"API key used: \$OPENAI_API_KEY") as e:
        chat_model(server, api_key=None).chat(HELLO)
    assert_no_key(e.value, "sk-env-wrong")


def test_forbidden(server: WireServer) -> None:
    server.script(status(403, {"error": {"message": "model not allowed for this project"}}))
    with chat_error(
        HttpErrorKind.AUTHENTICATION, match=r"access denied \(HTTP 403\).*not allowed", status=403
    ):
        chat_model(server).chat(HELLO)


def test_stream_authentication_error(server: WireServer) -> None:
    stream = chat_model(server, api_key="sk-bad").stream(HELLO)
    with chat_error(HttpErrorKind.AUTHENTICATION, status=401):
        next(stream)


# -- not found -------------------------------------------------------------------------


def test_unknown_model_is_not_found_naming_the_model(server: WireServer) -> None:
    with chat_error(HttpErrorKind.STATUS, status=404) as caught:
        chat_model(server, model_name="gpt-nope").chat(HELLO)
    message = str(caught.value)
    assert "HTTP 404" in message
    assert "'gpt-nope'" in message
    assert "The model `gpt-nope` does not exist" in message
    assert "[model_not_found]" in message
    assert "does not end in /v1" not in message
    assert isinstance(caught.value, ChatModelError)


def test_base_url_without_v1_gets_a_hint(server: WireServer) -> None:
    model = chat_model(server, base_url=server.url.removesuffix("/v1"))
    with chat_error(HttpErrorKind.STATUS, match="does not end in /v1", status=404) as caught:
        model.chat(HELLO)
    assert "404 page not found" in str(caught.value)
    assert caught.value.url == server.url.removesuffix("/v1") + "/chat/completions"


# -- other statuses and bad answers ----------------------------------------------------


def test_bad_request_is_not_retried_and_shows_the_server_message(
    server: WireServer, sleeps: Sleeps
) -> None:
    server.script(
        status(
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        )
    )
    with chat_error(HttpErrorKind.STATUS) as caught:
        chat_model(server, sleeps).chat(HELLO)
    assert caught.value.status_code == 400
    assert "HTTP 400 Bad Request" in str(caught.value)
    assert "maximum context length is 8192 tokens. [context_length_exceeded]" in str(caught.value)
    assert sleeps == []
    assert len(server.requests) == 1


def test_ollama_style_error_and_plain_text_error(server: WireServer) -> None:
    server.script(status(400, {"error": "model is required"}), status(418, "I'm a teapot"))
    model = chat_model(server)
    with chat_error(HttpErrorKind.STATUS, match="model is required", status=400):
        model.chat(HELLO)
    with chat_error(HttpErrorKind.STATUS, match="HTTP 418.*I'm a teapot", status=418):
        model.chat(HELLO)


def test_redirect_names_the_location(server: WireServer) -> None:
    server.script(status(308, "", {"Location": "https://elsewhere/v1/chat/completions"}))
    with chat_error(HttpErrorKind.STATUS, match="redirects to https://elsewhere", status=308):
        chat_model(server).chat(HELLO)


def test_body_that_is_not_json(server: WireServer) -> None:
    server.script(raw(b"<html>Bad Gateway page</html>", "text/html"))
    with chat_error(HttpErrorKind.PROTOCOL, match=r"not JSON \(text/html\).*Bad Gateway page") as e:
        chat_model(server).chat(HELLO)
    assert isinstance(e.value, ChatModelError)


def test_truncated_json(server: WireServer) -> None:
    server.script(raw(b'{"choices": [{"message": {"content": "hel'))
    with chat_error(HttpErrorKind.PROTOCOL, match="not JSON"):
        chat_model(server).chat(HELLO)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[]", "JSON list, not a chat completion"),
        (b'{"choices": []}', "no choices"),
        (b'{"object": "chat.completion"}', "no choices"),
        (b'{"error": {"message": "upstream overloaded"}}', "upstream overloaded"),
        (b'{"choices": [{"index": 0}]}', "without a message object"),
        (b'{"choices": [{"message": {"content": 42}}]}', "unknown shape"),
    ],
)
def test_json_of_the_wrong_shape(server: WireServer, body: bytes, message: str) -> None:
    server.script(raw(body))
    with chat_error(HttpErrorKind.PROTOCOL, match=message):
        chat_model(server).chat(HELLO)


def test_answer_beyond_max_response_bytes(server: WireServer) -> None:
    server.script(raw(b'{"choices": []}' + b" " * 2000))
    with chat_error(HttpErrorKind.TOO_LARGE, match="max_response_bytes=1,000 bytes") as caught:
        chat_model(server, max_response_bytes=1000).chat(HELLO)
    assert caught.value.url == server.url + "/chat/completions"


# -- connections and timeouts ----------------------------------------------------------


def test_connection_refused_names_the_base_url(sleeps: Sleeps) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    model = closed_after_test(
        OpenAiChatModel(
            base_url=base_url, model_name="m", retry_policy=sleeps.policy(max_retries=2)
        )
    )
    with chat_error(HttpErrorKind.CONNECTION) as caught:
        model.chat(HELLO)
    message = str(caught.value)
    assert f"cannot connect to {base_url} (3 attempts)" in message
    assert "is the server running?" in message
    assert isinstance(caught.value, ChatModelError)
    assert sleeps == [0.5, 1.0]
    with chat_error(HttpErrorKind.CONNECTION, match="cannot connect"):
        next(model.stream(HELLO))
    with chat_error(HttpErrorKind.CONNECTION, match="cannot connect"):
        asyncio.run(model.achat(HELLO))


def test_slow_answer_times_out(server: WireServer) -> None:
    server.script(delay(5))
    model = chat_model(server, timeout=0.3, max_retries=0)
    started = time.monotonic()
    with chat_error(HttpErrorKind.TIMEOUT) as caught:
        model.chat(HELLO)
    assert time.monotonic() - started < 4
    assert isinstance(caught.value, ChatModelError)
    assert caught.value.url == server.url + "/chat/completions"
    assert "within the timeout of 0.3 s" in str(caught.value)
    assert "raise timeout=" in str(caught.value)


def test_slow_answer_times_out_async(server: WireServer) -> None:
    server.script(delay(5))
    model = chat_model(server, timeout=0.3, max_retries=0)
    with chat_error(HttpErrorKind.TIMEOUT):
        asyncio.run(model.achat(HELLO))


# -- broken streams --------------------------------------------------------------------


def test_mid_stream_disconnect_after_partial_texts(server: WireServer) -> None:
    server.script(broken_stream(after=3))
    stream = chat_model(server).stream([UserMessage("a b c d e")])
    received = [next(stream), next(stream)]
    assert received == ["Echo: ", "a "]
    with chat_error(HttpErrorKind.CONNECTION, match="broke off after 2 partial texts") as caught:
        next(stream)
    assert isinstance(caught.value, ChatModelError)


def test_mid_stream_disconnect_async(server: WireServer) -> None:
    server.script(broken_stream(after=3))
    model = chat_model(server)

    async def run() -> list[str]:
        parts: list[str] = []
        async for part in model.astream([UserMessage("a b c d e")]):
            parts.append(part)
        return parts

    with chat_error(HttpErrorKind.CONNECTION, match="broke off after 2 partial texts"):
        asyncio.run(run())


def test_stream_closed_cleanly_before_the_end_is_an_error(server: WireServer) -> None:
    """A close-delimited body looks complete to HTTP; the missing [DONE] gives it away."""
    server.script(broken_stream(after=3, chunked=False))
    with chat_error(HttpErrorKind.CONNECTION, match="without a finish reason or \\[DONE\\]"):
        chat_model(server).stream([UserMessage("a b c d e")]).collect()


def test_stalled_stream_times_out(server: WireServer) -> None:
    server.script(stalled_stream(after=2, seconds=5))
    stream = chat_model(server, timeout=0.3).stream(HELLO)
    assert next(stream) == "Echo: "
    with chat_error(HttpErrorKind.TIMEOUT, match="stalled for more than 0.3 s after 1 partial"):
        next(stream)


def test_stream_event_that_is_not_json(server: WireServer) -> None:
    server.script(events(["data: {not json\n\n"]))
    with chat_error(HttpErrorKind.PROTOCOL, match="not JSON: '\\{not json'"):
        chat_model(server).stream(HELLO).collect()


def test_stream_event_that_is_not_an_object(server: WireServer) -> None:
    server.script(events(["data: [1, 2]\n\n"]))
    with chat_error(HttpErrorKind.PROTOCOL, match="list instead of a chunk"):
        chat_model(server).stream(HELLO).collect()


def test_error_reported_inside_the_stream(server: WireServer) -> None:
    chunk = {"choices": [{"delta": {"content": "par"}, "finish_reason": None}]}
    server.script(events([sse(chunk), sse({"error": {"message": "The server had an error"}})]))
    stream = chat_model(server).stream(HELLO)
    assert next(stream) == "par"
    with chat_error(HttpErrorKind.PROTOCOL, match="reported an error in the stream.*server had"):
        next(stream)


def test_named_error_event(server: WireServer) -> None:
    server.script(events(['event: error\ndata: {"detail": "overloaded"}\n\n']))
    with chat_error(HttpErrorKind.PROTOCOL, match="overloaded"):
        chat_model(server).stream(HELLO).collect()


# -- the hierarchy ---------------------------------------------------------------------


def test_errors_pickle_with_their_attributes() -> None:
    for error_type in (OpenAiChatModelError, OpenAiEmbeddingModelError):
        error = error_type(
            "msg", url="http://x/v1", status_code=401, kind=HttpErrorKind.AUTHENTICATION
        )
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is error_type
        assert (str(copy), copy.url, copy.status_code, copy.kind) == (
            "msg",
            "http://x/v1",
            401,
            HttpErrorKind.AUTHENTICATION,
        )


def test_hierarchy() -> None:
    assert issubclass(OpenAiChatModelError, OpenAiError)
    assert issubclass(OpenAiChatModelError, ChatModelError)
    assert not issubclass(OpenAiChatModelError, EmbeddingModelError)
    assert issubclass(OpenAiEmbeddingModelError, OpenAiError)
    assert issubclass(OpenAiEmbeddingModelError, EmbeddingModelError)
    assert not issubclass(OpenAiEmbeddingModelError, ChatModelError)
    assert issubclass(OpenAiPromptTooLongError, OpenAiChatModelError)
    assert issubclass(OpenAiPromptTooLongError, InvalidArgumentError)
    assert issubclass(OpenAiError, RagloomError)
    assert not issubclass(OpenAiError, ChatModelError)
    assert not issubclass(OpenAiError, TimeoutError)  # a timeout is kind TIMEOUT


def test_errors_carry_their_kind_and_their_component(server: WireServer) -> None:
    with chat_error(HttpErrorKind.AUTHENTICATION, status=401):
        chat_model(server, api_key="sk-wrong-secret-key-42").chat(HELLO)
    with pytest.raises(EmbeddingModelError) as embedding:
        embedding_model(server, api_key="sk-wrong-secret-key-42").embed_all(["x"])
    assert isinstance(embedding.value, OpenAiEmbeddingModelError)
    assert not isinstance(embedding.value, ChatModelError)
    assert (embedding.value.kind, embedding.value.status_code) == (
        HttpErrorKind.AUTHENTICATION,
        401,
    )
    server.script(delay(5))
    with chat_error(HttpErrorKind.TIMEOUT) as timeout:
        chat_model(server, timeout=0.3, max_retries=0).chat(HELLO)
    assert timeout.value.status_code is None
