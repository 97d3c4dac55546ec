"""The ScoringModel contract on local servers speaking each wire format.

text-embeddings-inference, vLLM and Infinity need a cross-encoder model, which cannot be
downloaded here; these run against ragloom.scoring_models.http.testing, real HTTP servers
in-process on 127.0.0.1 following each server's published request/response schema.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from ragloom.core.scoring import ScoringModel
from ragloom.scoring_models.http import HttpScoringModel
from ragloom.scoring_models.http.testing import jina_server, tei_server

TEXTS = ["Bake the bread at 220 degrees.", "The ship sailed at dawn.", "Rooks and pawns."]
QUERY = "how hot should the oven be for bread"


@pytest.fixture(scope="module", params=["tei", "jina-vllm", "jina-infinity"])
def model(request: pytest.FixtureRequest) -> Iterator[HttpScoringModel]:
    kind: str = request.param
    with tei_server() if kind == "tei" else jina_server() as server:
        if kind == "tei":
            url, api = server.url, "tei"
        else:
            url, api = (server.url + "/v1" if kind == "jina-vllm" else server.url), "jina"
        with HttpScoringModel(url, api=api) as model:  # type: ignore[arg-type]
            yield model


class TestHttpConformance:
    def test_is_a_scoring_model(self, model: HttpScoringModel) -> None:
        assert isinstance(model, ScoringModel)

    def test_one_finite_score_per_text_relevant_first(self, model: HttpScoringModel) -> None:
        scores = model.score_all(TEXTS, QUERY).scores
        assert len(scores) == len(TEXTS)
        assert all(isinstance(s, float) and math.isfinite(s) for s in scores)
        assert scores[0] > max(scores[1:])

    def test_scores_follow_the_input_order(self, model: HttpScoringModel) -> None:
        forward = model.score_all(TEXTS, QUERY).scores
        assert model.score_all(TEXTS[::-1], QUERY).scores == pytest.approx(forward[::-1])

    def test_empty_input_gives_no_scores(self, model: HttpScoringModel) -> None:
        assert model.score_all([], "anything").scores == []
