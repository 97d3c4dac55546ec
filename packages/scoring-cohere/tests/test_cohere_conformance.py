"""The ScoringModel contract on a local server speaking Cohere's rerank API v2.

Cohere's API is paid and remote, so this runs against ragloom.scoring_models.cohere.testing:
a real HTTP server, in-process on 127.0.0.1, following Cohere's published schema.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from ragloom.core.scoring import ScoringModel
from ragloom.scoring_models.cohere import CohereScoringModel
from ragloom.scoring_models.cohere.testing import API_KEY, MODEL, cohere_server
from ragloom.testkit.wire import WireServer

TEXTS = ["Bake the bread at 220 degrees.", "The ship sailed at dawn.", "Rooks and pawns."]
QUERY = "how hot should the oven be for bread"


@pytest.fixture(scope="module")
def server() -> Iterator[WireServer]:
    with cohere_server() as running:
        yield running


class TestCohereConformance:
    @pytest.fixture
    def model(self, server: WireServer) -> Iterator[CohereScoringModel]:
        with CohereScoringModel(MODEL, api_key=API_KEY, base_url=server.url) as model:
            yield model

    def test_is_a_scoring_model(self, model: CohereScoringModel) -> None:
        assert isinstance(model, ScoringModel)

    def test_one_finite_score_per_text_relevant_first(self, model: CohereScoringModel) -> None:
        scores = model.score_all(TEXTS, QUERY).scores
        assert len(scores) == len(TEXTS)
        assert all(isinstance(s, float) and math.isfinite(s) for s in scores)
        assert scores[0] == max(scores)
        assert scores[0] > scores[1]

    def test_scores_follow_the_input_order(self, model: CohereScoringModel) -> None:
        forward = model.score_all(TEXTS, QUERY).scores
        assert model.score_all(TEXTS[::-1], QUERY).scores == pytest.approx(forward[::-1])

    def test_empty_input_gives_no_scores(self, model: CohereScoringModel) -> None:
        assert model.score_all([], "anything").scores == []

    def test_score_of_one(self, model: CohereScoringModel) -> None:
        assert model.score(TEXTS[0], QUERY) == model.score_all(TEXTS, QUERY).scores[0]
