"""OpenAiTokenizer (tiktoken over bpe-openai's encoding files, no download) and the prompt
budget check of OpenAiChatModel, against the local wire server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import bpe_openai
import pytest
from openai_helpers import chat_model

from ragloom.chat_models.openai import OpenAiPromptTooLongError, OpenAiTokenizer
from ragloom.chat_models.openai.testing import WireServer
from ragloom.core import (
    AiMessage,
    Document,
    SystemMessage,
    ToolExecutionRequest,
    ToolExecutionResultMessage,
    UserMessage,
    document_splitters,
)
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.tokenizer import Tokenizer

SAMPLES = [
    "Hello world",
    "  indented\n\n\tcode = f(x) ** 2  # comment\r\n",
    "Ünïcödé, 日本語のテキスト, emoji 🎉🎉 and numbers 1234567.89",
    "<|endoftext|> is plain text here",
    "don't won't I'll they've we're",
    "x" * 3000,
]


@pytest.fixture(scope="module")
def o200k() -> OpenAiTokenizer:
    return OpenAiTokenizer("o200k_base")


@pytest.fixture(scope="module")
def cl100k() -> OpenAiTokenizer:
    return OpenAiTokenizer("cl100k_base")


def test_known_token_ids(o200k: OpenAiTokenizer, cl100k: OpenAiTokenizer) -> None:
    assert cl100k.encode("Hello world") == [9906, 1917]
    assert o200k.encode("Hello world") == [13225, 2375]
    assert isinstance(o200k, Tokenizer)


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_ids_agree_with_an_independent_implementation(encoding: str) -> None:
    ours = OpenAiTokenizer(encoding)
    reference = bpe_openai.get_encoding(encoding)
    for text in SAMPLES:
        assert ours.encode(text) == list(reference.encode(text, disallowed_special=())), text
    assert ours.count_tokens_batch(SAMPLES) == [ours.count_tokens(t) for t in SAMPLES]


def test_models_map_to_their_encodings() -> None:
    assert OpenAiTokenizer.for_model("gpt-4o-mini").encoding_name == "o200k_base"
    assert OpenAiTokenizer.for_model("o3-mini").encoding_name == "o200k_base"
    assert OpenAiTokenizer.for_model("gpt-4-turbo").encoding_name == "cl100k_base"
    assert OpenAiTokenizer.for_model("gpt-3.5-turbo").encoding_name == "cl100k_base"
    with pytest.raises(InvalidArgumentError, match="no known OpenAI encoding for model 'llama3"):
        OpenAiTokenizer.for_model("llama3.2")
    with pytest.raises(InvalidArgumentError, match="unknown encoding 'p50k_base'"):
        OpenAiTokenizer("p50k_base")


def test_the_encodings_load_without_any_download(tmp_path: Path) -> None:
    """A fresh interpreter with an empty tiktoken cache and every proxy pointing at a
    closed port: a download would fail, so counting proves the files are local."""
    closed = "http://127.0.0.1:9"
    env = dict(
        os.environ,
        TIKTOKEN_CACHE_DIR=str(tmp_path),
        HTTP_PROXY=closed,
        HTTPS_PROXY=closed,
        http_proxy=closed,
        https_proxy=closed,
    )
    code = (
        "from ragloom.chat_models.openai import OpenAiTokenizer;"
        "print(OpenAiTokenizer('cl100k_base').count_tokens('Hello world'),"
        " OpenAiTokenizer('o200k_base').count_tokens('Hello world'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "2"]
    assert list(tmp_path.iterdir()) == []


def test_token_sized_splitting(o200k: OpenAiTokenizer) -> None:
    text = "\n\n".join(
        f"Paragraph {i}: " + "the lava flows downhill slowly. " * 12 for i in range(8)
    )
    segments = document_splitters.recursive(60, 10, tokenizer=o200k).split(Document(text))
    assert len(segments) > 8
    assert all(o200k.count_tokens(segment.text) <= 60 for segment in segments)


def test_messages_are_counted_by_openai_s_rule(o200k: OpenAiTokenizer) -> None:
    # 3 framing tokens per message, "user" (1) + "Hello world" (2), 3 to prime the reply
    assert o200k.count_messages([UserMessage("Hello world")]) == 3 + 1 + 2 + 3
    named = o200k.count_messages([UserMessage("Hello world", name="ada")])
    assert named == 9 + 1 + o200k.count_tokens("ada")


# -- the budget check ------------------------------------------------------------------


def test_a_prompt_over_the_context_window_is_refused_naming_the_counts(
    server: WireServer, o200k: OpenAiTokenizer
) -> None:
    model = chat_model(server, context_window=50, max_tokens=20, tokenizer=o200k)
    prompt = [UserMessage("lava " * 40)]
    needed = o200k.count_messages(prompt)
    with pytest.raises(OpenAiPromptTooLongError) as caught:
        model.chat(prompt)
    error = caught.value
    assert (error.prompt_tokens, error.reserved_tokens, error.context_window) == (needed, 20, 50)
    assert f"is {needed} tokens; with 20 reserved for the answer" in str(error)
    assert "context window of 50 tokens (counted with OpenAiTokenizer('o200k_base'))" in str(error)
    assert isinstance(error, ValueError)
    assert server.requests == []
    assert model.chat([UserMessage("hi")], max_tokens=5).text == "Echo: hi"


def test_trimming_drops_the_oldest_turns_and_keeps_tool_calls_with_their_results(
    server: WireServer, o200k: OpenAiTokenizer
) -> None:
    call = ToolExecutionRequest("c1", "search", '{"query": "lava"}')
    conversation = [
        SystemMessage("Be brief."),
        UserMessage("old question " * 10),
        AiMessage("", (call,)),
        ToolExecutionResultMessage.from_request(call, "old result " * 10),
        AiMessage("old answer " * 3),
        UserMessage("new question"),
    ]
    model = chat_model(server, context_window=60, trim_prompt=True, tokenizer=o200k)
    assert model.chat(conversation).text == "Echo: new question"
    sent = server.bodies()[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "assistant", "user"]
    assert sent[1]["content"] == "old answer " * 3
    assert o200k.count_messages([conversation[0], *conversation[4:]]) <= 60
    assert o200k.count_messages([conversation[0], *conversation[2:]]) > 60


def test_trimming_cannot_drop_the_last_message(server: WireServer, o200k: OpenAiTokenizer) -> None:
    model = chat_model(server, context_window=20, trim_prompt=True, tokenizer=o200k)
    with pytest.raises(OpenAiPromptTooLongError, match="even after dropping 1 of 3 messages"):
        model.chat([SystemMessage("s"), UserMessage("a"), UserMessage("lava " * 30)])
    assert server.requests == []


def test_budget_settings_are_checked(server: WireServer) -> None:
    with pytest.raises(InvalidArgumentError, match="context_window must be a positive int"):
        chat_model(server, context_window=0)
    with pytest.raises(TypeError, match="tokenizer must have count_tokens"):
        chat_model(server, context_window=10, tokenizer=object())
    with pytest.raises(InvalidArgumentError, match="no known OpenAI encoding for model 'echo-1'"):
        chat_model(server, model_name="echo-1", context_window=100)
