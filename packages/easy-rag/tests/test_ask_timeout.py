"""`ragloom ask` against a real local OpenAI-wire server: the answer streams as it comes,
a slow start is announced on stderr, and --timeout bounds the whole answer (a server
that accepts and never answers held the CLI 381 s, silently)."""

import time
from collections.abc import Iterator

import pytest

from ragloom.chat_models.openai.testing import (
    CHAT_MODEL,
    WireServer,
    delay,
    dripping_stream,
    stalled_stream,
    status,
)
from ragloom.core import EmbeddingStoreIngestor
from ragloom.easy_rag import streaming
from ragloom.easy_rag.cli import EXIT_FAILURE, EXIT_USAGE, main
from ragloom.easy_rag.index import RagIndex
from ragloom.testkit import FakeEmbeddingModel

QUESTION = "What does bread need to rise?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("ask")
    (root / "baking.txt").write_text("Bread dough needs yeast, time and a hot oven to rise.")
    index = RagIndex.create(root / "index", "fake")
    index.ingest([root], EmbeddingStoreIngestor(index.mirrored, FakeEmbeddingModel()))
    index.save()
    return str(index.path)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[WireServer]:
    monkeypatch.setattr(streaming, "WAIT_NOTICE", 0.3)
    with WireServer() as server:
        monkeypatch.setenv("RAGLOOM_CHAT_BASE_URL", server.url)
        monkeypatch.setenv("RAGLOOM_CHAT_MODEL_NAME", CHAT_MODEL)
        yield server


def ask(index: str, *options: str) -> int:
    return main(["ask", QUESTION, "--index", index, "--mode", "keyword", *options])


def test_a_server_that_never_answers_fails_at_the_timeout(
    index: str, server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script(delay(300))  # accepts the request, answers in 5 minutes
    started = time.monotonic()
    code = ask(index, "--timeout", "1.5")
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == EXIT_FAILURE  # a failure while running, not a usage error
    assert elapsed < 15, f"held {elapsed:.1f} s with --timeout 1.5"
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == "ragloom: waiting for the chat model..."
    assert f"chat model at {server.url}" in lines[1]
    assert "within 1.5 s" in lines[1]
    assert "raise --timeout" in lines[1]
    assert "timeout=" not in err  # the Python-only hint is not the CLI's advice


def test_the_answer_streams_as_it_comes(
    index: str, server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script(stalled_stream(after=3, seconds=300))  # two words, then silence
    code = ask(index, "--timeout", "2")
    out, err = capsys.readouterr()
    assert code == EXIT_FAILURE  # a failure while running, not a usage error
    assert out.startswith("Echo: ")  # printed before the stream stalled
    assert "within 2 s" in err
    assert "waiting for the chat model" not in err  # the first words came at once


def test_an_answer_still_coming_is_cut_at_the_timeout(
    index: str, server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The deadline is the whole answer's, not the first word's: words that keep coming,
    each 0.3 s after the last (well within any per-read timeout), are cut at --timeout."""
    server.script(dripping_stream(0.3))
    started = time.monotonic()
    code = ask(index, "--timeout", "1.5")
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    (body,) = server.bodies("/v1/chat/completions")
    whole = len(body["messages"][-1]["content"].split()) + 1  # "Echo: " and the prompt
    assert whole * 0.3 > 6  # the whole answer would take over 6 s
    assert code == EXIT_FAILURE  # a failure while running, not a usage error
    assert elapsed < 4, f"held {elapsed:.1f} s with --timeout 1.5"
    assert out.startswith("Echo: ")  # the words printed before the cut stay ...
    assert out.endswith("\n")  # ... on a line of their own
    assert len(out.split()) < whole
    assert "Sources:" not in out
    *notice, error = err.splitlines()
    assert notice in ([], ["ragloom: waiting for the chat model..."])  # first word at 0.6 s
    assert error == (
        f"ragloom: answer cut at 1.5 s: the chat model at {server.url} had not finished "
        "within 1.5 s (--timeout bounds the whole answer); raise --timeout for longer answers"
    )


def test_a_complete_answer_with_sources(
    index: str, server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ask(index) == 0
    out, err = capsys.readouterr()
    answer, sources = out.split("\nSources:\n")
    assert answer.startswith("Echo: ")
    assert QUESTION in answer
    assert "baking.txt" in sources
    assert err == ""
    (body,) = server.bodies("/v1/chat/completions")
    assert body["stream"] is True


def test_timeout_option_shows_its_default_and_refuses_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["ask", "--help"]) == 0
    ask_help = " ".join(capsys.readouterr().out.split())
    assert "--timeout SECONDS give the chat model this long for a whole answer" in ask_help
    assert f"(default {streaming.DEFAULT_TIMEOUT:g};" in ask_help
    assert main(["ask", QUESTION, "--timeout", "0"]) == EXIT_USAGE
    assert "give a number > 0" in capsys.readouterr().err


def test_a_chat_model_that_fails_is_a_runtime_failure(
    index: str, server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1 with the model's error on one line; 2 is for bad command lines."""
    server.script(status(401, {"error": {"message": "bad key", "type": "invalid_request"}}))
    code = ask(index, "--timeout", "10")
    out, err = capsys.readouterr()
    assert code == EXIT_FAILURE
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith("ragloom: ")
    assert server.url in line
    assert "Traceback" not in err
