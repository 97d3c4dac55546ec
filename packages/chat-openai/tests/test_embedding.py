"""OpenAiEmbeddingModel against the local server: batching, dimension, usage, errors."""

from __future__ import annotations

import asyncio
import json

import httpx
import numpy as np
import pytest
from openai_helpers import API_KEY, Sleeps, closed_after_test, embedding_error, embedding_model

from ragloom.chat_models.openai import OpenAiEmbeddingModel
from ragloom.chat_models.openai.testing import EMBEDDING_MODEL, WireServer, raw, status
from ragloom.core import aio
from ragloom.core.aio import AsyncEmbeddingModel
from ragloom.core.document import TextSegment
from ragloom.core.embedding import EmbeddingModel, EmbeddingResult, TokenUsage
from ragloom.core.errors import ChatModelError
from ragloom.core.kit.http import HttpErrorKind
from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel

TEXTS = [f"text number {i}" for i in range(7)]


def test_batches_keep_order_and_sum_usage(server: WireServer) -> None:
    model = embedding_model(server, batch_size=3)
    result = model.embed_all([TextSegment(t) for t in TEXTS])
    bodies = server.bodies("/v1/embeddings")
    assert [body["input"] for body in bodies] == [TEXTS[0:3], TEXTS[3:6], TEXTS[6:7]]
    assert all(body["model"] == EMBEDDING_MODEL for body in bodies)
    assert all(body["encoding_format"] == "float" for body in bodies)
    assert all("dimensions" not in body for body in bodies)
    expected = FakeEmbeddingModel(64).embed_all(TEXTS).embeddings
    assert result.embeddings == expected  # exact: float32 survives the JSON round trip
    assert result.token_usage == TokenUsage(input_token_count=21, total_token_count=21)
    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"


def test_base64_encoding_gives_the_same_vectors(server: WireServer) -> None:
    floats = embedding_model(server).embed_all(TEXTS).embeddings
    base64 = embedding_model(server, encoding_format="base64").embed_all(TEXTS).embeddings
    assert base64 == floats
    assert server.bodies()[-1]["encoding_format"] == "base64"


def test_dimensions_are_requested_and_known_without_a_call(server: WireServer) -> None:
    model = embedding_model(server, dimensions=32)
    assert model.dimension == 32
    assert server.requests == []
    assert model.embed("hello").embedding.dimension == 32
    assert server.bodies()[0]["dimensions"] == 32


def test_dimension_is_probed_once(server: WireServer) -> None:
    model = embedding_model(server)
    assert model.dimension == 64
    assert model.dimension == 64
    assert len(server.requests) == 1


def test_nothing_to_embed_sends_nothing(server: WireServer) -> None:
    result = embedding_model(server).embed_all([])
    assert result.embeddings == []
    assert result.token_usage is None
    assert server.requests == []


def test_a_single_string_is_refused(server: WireServer) -> None:
    with pytest.raises(TypeError, match="use embed"):
        embedding_model(server).embed_all("one text")


def test_entries_are_put_back_in_index_order(server: WireServer) -> None:
    body = {
        "data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]},
        ],
        "usage": {"prompt_tokens": 2, "total_tokens": 2},
    }
    server.script(raw(json.dumps(body).encode()))
    result = embedding_model(server).embed_all(["a", "b"])
    assert [e.to_list() for e in result.embeddings] == [[1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"data": [{"index": 0, "embedding": [1.0]}]}, "1 embeddings for 2 inputs"),
        ({"object": "list"}, "no 'data' list"),
        (
            {"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]},
            "bad or repeated index 0",
        ),
        (
            {"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]},
            r"different dimensions \[1, 2\]",
        ),
        (
            {"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": [1.0]}]},
            "not a non-empty list of numbers",
        ),
        (
            {"data": [{"index": 0, "embedding": "!!"}, {"index": 1, "embedding": [1.0]}]},
            "not base64",
        ),
        (
            {"data": [{"index": 0, "embedding": "AAA="}, {"index": 1, "embedding": [1.0]}]},
            "2 bytes, not float32",
        ),
        (
            {"data": [{"index": 0, "embedding": [1e39]}, {"index": 1, "embedding": [1.0]}]},
            "invalid embedding",
        ),
    ],
)
def test_answers_of_the_wrong_shape(server: WireServer, body: object, message: str) -> None:
    server.script(raw(json.dumps(body).encode()))
    with embedding_error(HttpErrorKind.PROTOCOL, match=message) as caught:
        embedding_model(server).embed_all(["a", "b"])
    assert not isinstance(caught.value, ChatModelError)


def test_dimension_other_than_requested(server: WireServer) -> None:
    server.script(raw(json.dumps({"data": [{"index": 0, "embedding": [1.0, 2.0]}]}).encode()))
    with embedding_error(HttpErrorKind.PROTOCOL, match="dimension 2, not the 8 requested"):
        embedding_model(server, dimensions=8).embed("a")


def test_dimension_changing_between_calls(server: WireServer) -> None:
    model = embedding_model(server)
    model.embed("a")
    server.script(raw(json.dumps({"data": [{"index": 0, "embedding": [1.0, 2.0]}]}).encode()))
    with embedding_error(HttpErrorKind.PROTOCOL, match="dimension 2, earlier calls gave 64"):
        model.embed("b")


def test_errors_are_openai_errors_but_not_chat_model_errors(server: WireServer) -> None:
    with embedding_error(
        HttpErrorKind.AUTHENTICATION, match=r"\$RAGLOOM_EMBEDDING_API_KEY", status=401
    ) as auth:
        embedding_model(server, api_key=None).embed("a")
    assert not isinstance(auth.value, ChatModelError)
    assert "embedding model 'embed-1'" in str(auth.value)
    with embedding_error(HttpErrorKind.STATUS, match="'embed-nope'", status=404):
        embedding_model(server, model_name="embed-nope").embed("a")


def test_retries(server: WireServer, sleeps: Sleeps) -> None:
    server.script(status(429, headers={"Retry-After": "2"}), status(500))
    assert embedding_model(server, sleeps).embed("a").embedding.dimension == 64
    assert sleeps == [2.0, 1.0]


def test_is_an_embedding_model_with_a_safe_repr(server: WireServer) -> None:
    with embedding_model(server) as model:
        assert isinstance(model, EmbeddingModel)
        assert API_KEY not in repr(model)
        assert model.batch_size == 256
        assert np.isfinite(model.embed("x").embedding.vector).all()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model_name": ""}, "model_name"),
        ({"dimensions": 0}, "dimensions"),
        ({"batch_size": 0}, "batch_size"),
        ({"encoding_format": "int8"}, "encoding_format"),
        ({"timeout": 0}, "timeout"),
    ],
)
def test_settings_are_checked(options: dict[str, object], message: str) -> None:
    settings: dict[str, object] = {"model_name": "m", "base_url": "http://127.0.0.1:1/v1"}
    settings.update(options)
    with pytest.raises(ValueError, match=message):
        OpenAiEmbeddingModel(**settings)  # type: ignore[arg-type]


def test_from_env(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with embedding_error(None, match="RAGLOOM_EMBEDDING_MODEL_NAME"):
        OpenAiEmbeddingModel.from_env()
    monkeypatch.setenv("RAGLOOM_EMBEDDING_MODEL_NAME", EMBEDDING_MODEL)
    monkeypatch.setenv("RAGLOOM_EMBEDDING_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    model = closed_after_test(OpenAiEmbeddingModel.from_env(batch_size=2))
    assert (model.model_name, model.base_url, model.batch_size) == (EMBEDDING_MODEL, server.url, 2)
    assert len(model.embed_all(TEXTS[:3]).embeddings) == 3


# --- asyncio ----------------------------------------------------------------------------


def test_aembed_all_sends_the_same_requests_and_returns_the_same_result(
    server: WireServer,
) -> None:
    model = embedding_model(server, batch_size=3)
    expected = model.embed_all(TEXTS)
    sync_bodies = server.bodies("/v1/embeddings")
    server.requests.clear()
    assert asyncio.run(model.aembed_all([TextSegment(t) for t in TEXTS])) == expected
    assert server.bodies("/v1/embeddings") == sync_bodies
    assert isinstance(model, AsyncEmbeddingModel)


def test_aembed_all_through_a_given_async_client_and_the_core_helper(server: WireServer) -> None:
    async def run() -> tuple[list[EmbeddingResult], bool]:
        async with httpx.AsyncClient() as client:
            model = embedding_model(server, async_http_client=client)
            results = await asyncio.gather(*(aio.aembed(model, t) for t in TEXTS))
            return list(results), client.is_closed

    results, closed = asyncio.run(run())
    assert not closed  # a given client is the caller's
    assert [r.embedding for r in results] == FakeEmbeddingModel(64).embed_all(TEXTS).embeddings
    assert len(server.bodies("/v1/embeddings")) == len(TEXTS)


def test_aembed_all_errors_and_retries_as_the_sync_path(server: WireServer, sleeps: Sleeps) -> None:
    with embedding_error(HttpErrorKind.STATUS, match="'embed-nope'", status=404):
        asyncio.run(embedding_model(server, model_name="embed-nope").aembed_all(["a"]))
    server.script(status(429, headers={"Retry-After": "2"}), status(500))
    result = asyncio.run(embedding_model(server, sleeps).aembed_all(["a"]))
    assert result.embedding.dimension == 64
    assert sleeps == [2.0, 1.0]
