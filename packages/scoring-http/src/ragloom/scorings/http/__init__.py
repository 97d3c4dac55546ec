"""The ragloom ScoringModel (re-ranking) on http."""

from ragloom.scorings.http.scoring import (
    HttpScoringModel,
)

__all__ = ["HttpScoringModel"]
