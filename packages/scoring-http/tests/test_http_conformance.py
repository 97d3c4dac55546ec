"""The ScoringModel contract on a real server (the testkit has no scoring suite yet)."""

from __future__ import annotations

import math
import os
import socket
from urllib.parse import urlsplit

import pytest

from ragloom.core.scoring import ScoringModel
from ragloom.scorings.http import HttpScoringModel

pytestmark = pytest.mark.integration

TEXTS = ["Bake the bread at 220 degrees.", "The ship sailed at dawn.", "Rooks and pawns."]
QUERY = "how hot should the oven be for bread"

SERVER_URL = os.environ.get("RAGLOOM_HTTP_URL", "http://127.0.0.1:27442")
START_HINT = "bash scripts/services/http.sh start"


@pytest.fixture(scope="session")
def server_url() -> str:
    """The server's URL; fails (never skips) with the command that starts it."""
    address = urlsplit(SERVER_URL)
    try:
        socket.create_connection((address.hostname, address.port), timeout=3).close()
    except OSError as exc:
        pytest.fail(
            f"http is not reachable at {SERVER_URL}: {exc}\n"
            f"Start it with `{START_HINT}` (from the repository root), "
            "or set RAGLOOM_HTTP_URL to a running server.",
            pytrace=False,
        )
    return SERVER_URL


class TestHttpConformance:
    @pytest.fixture
    def model(self, server_url: str) -> HttpScoringModel:
        return HttpScoringModel(server_url)

    def test_is_a_scoring_model(self, model: HttpScoringModel) -> None:
        assert isinstance(model, ScoringModel)

    def test_one_finite_score_per_text_relevant_first(
        self, model: HttpScoringModel
    ) -> None:
        scores = model.score_all(TEXTS, QUERY).scores
        assert len(scores) == len(TEXTS)
        assert all(isinstance(s, float) and math.isfinite(s) for s in scores)
        assert scores[0] == max(scores)

    def test_scores_follow_the_input_order(
        self, model: HttpScoringModel
    ) -> None:
        forward = model.score_all(TEXTS, QUERY).scores
        assert model.score_all(TEXTS[::-1], QUERY).scores == pytest.approx(forward[::-1])

    def test_empty_input_gives_no_scores(self, model: HttpScoringModel) -> None:
        assert model.score_all([], "anything").scores == []
