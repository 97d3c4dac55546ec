"""HttpScoringModel: relevance scores of texts for a query, for re-ranking.

Scores come from a http server. Registered under
``ragloom.scoring_models`` as ``http``; the entry point is
:meth:`HttpScoringModel.from_env`, which reads the server's URL from
``RAGLOOM_HTTP_URL``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ragloom.core.document import TextSegment
from ragloom.core.embedding import text_of
from ragloom.core.errors import PluginError
from ragloom.core.scoring import ScoringModel, ScoringResult

URL_VARIABLE = "RAGLOOM_HTTP_URL"


class HttpScoringModel(ScoringModel):
    """Scores texts for a query (higher is more relevant) on the server at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url

    @classmethod
    def from_env(cls) -> HttpScoringModel:
        """The plugin factory: the server named by ``RAGLOOM_HTTP_URL``."""
        url = os.environ.get(URL_VARIABLE)
        if not url:
            raise PluginError(f"set {URL_VARIABLE} to the URL of a http server")
        return cls(url)

    def score_all(self, segments: Sequence[str | TextSegment], query: str) -> ScoringResult:
        """One score per segment, in input order."""
        texts = [text_of(segment) for segment in segments]
        return self._score(texts, query) if texts else ScoringResult([])

    def _score(self, texts: list[str], query: str) -> ScoringResult:
        raise NotImplementedError(
            f"implement me: ask the server at {self.url} to score {len(texts)} texts for "
            f"{query!r} with httpx>=0.27,<1; return ScoringResult(scores in input order, "
            "TokenUsage(...) when reported); server errors raise RetrievalError naming the URL"
        )
