"""FakeScoringModel: a deterministic, dependency-free re-ranking model for tests.

The score of a text is the fraction of the query's distinct words (lowercased) that it
contains, in [0, 1]: transparent enough that a test can say which text must win.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from ragloom.core.document import TextSegment
from ragloom.core.embedding import TokenUsage, text_of
from ragloom.core.scoring import ScoringModel, ScoringResult

__all__ = ["FakeScoringModel"]

_WORD = re.compile(r"\w+")


class FakeScoringModel(ScoringModel):
    """Scores by query-word coverage; ``calls`` records ``(query, texts)`` of each call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[tuple[str, list[str]]] = []

    def score_all(self, segments: Sequence[str | TextSegment], query: str) -> ScoringResult:
        texts = [text_of(segment) for segment in segments]
        with self._lock:
            self.calls.append((query, texts))
        wanted = set(_WORD.findall(query.lower()))
        scores = [
            len(wanted & set(_WORD.findall(text.lower()))) / len(wanted) if wanted else 0.0
            for text in texts
        ]
        words = sum(len(_WORD.findall(text)) for text in texts)
        return ScoringResult(scores, TokenUsage(words + len(texts) * len(wanted), 0))
