"""BM25 scoring functions, vectorized over postings.

A document's score for a query is the sum, over the query's terms (repeated terms count
again), of ``idf(df) * tfc(tf, length_norm)`` where ``length_norm = 1 - b + b * dl / avgdl``.
The variants follow the usual definitions (Kamphuis et al., ECIR 2020) and the reference
libraries exactly:

=========  =====================================  ===============================================
variant    idf                                    tfc
=========  =====================================  ===============================================
lucene     ln(1 + (N - df + .5) / (df + .5))      tf / (tf + k1 * norm)          (= bm25s "lucene")
okapi      ln((N - df + .5) / (df + .5)), below   tf (k1 + 1) / (tf + k1 * norm) (= rank-bm25
           0 replaced by epsilon * mean idf                                        BM25Okapi)
bm25l      ln((N + 1) / (df + .5))                (k1 + 1)(c + d) / (k1 + c + d), c = tf / norm
bm25+      ln((N + 1) / df)                       tf (k1 + 1) / (tf + k1 * norm) + d
=========  =====================================  ===============================================

For bm25l and bm25+ a term that a document lacks still adds ``idf * tfc(0)``; the index adds
that constant to every document, so scores equal the formula for all of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["BM25Parameters", "BM25Variant"]

BM25Variant = Literal["lucene", "okapi", "bm25l", "bm25+"]
_DEFAULT_DELTA = {"bm25l": 0.5, "bm25+": 1.0}

Floats = npt.NDArray[np.float64]
Freqs = npt.NDArray[np.float32]


def robertson_idf(df: Floats, count: int) -> Floats:
    """``ln((N - df + .5) / (df + .5))``: negative for terms in more than half the documents."""
    result: Floats = np.log(count - df + 0.5) - np.log(df + 0.5)
    return result


@dataclass(frozen=True, slots=True)
class BM25Parameters:
    """``k1`` (term-frequency saturation), ``b`` (length normalization), the variant, and
    ``delta`` (bm25l/bm25+; default 0.5 and 1.0) or ``epsilon`` (okapi's idf floor)."""

    k1: float = 1.5
    b: float = 0.75
    variant: BM25Variant = "lucene"
    delta: float | None = None
    epsilon: float = 0.25

    def __post_init__(self) -> None:
        if self.variant not in get_args(BM25Variant):
            raise InvalidArgumentError(
                f"unknown BM25 variant {self.variant!r}; use one of {get_args(BM25Variant)}"
            )
        for name in ("k1", "b", "epsilon"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise InvalidArgumentTypeError(f"{name} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {value!r}")
            object.__setattr__(self, name, float(value))
        if self.b > 1:
            raise InvalidArgumentError(f"b must lie in [0, 1], got {self.b!r}")
        delta = self.delta
        if delta is None:
            delta = _DEFAULT_DELTA.get(self.variant, 0.0)
        if not isinstance(delta, int | float) or not math.isfinite(delta) or delta < 0:
            raise InvalidArgumentError(f"delta must be a finite number >= 0, got {delta!r}")
        object.__setattr__(self, "delta", float(delta))

    def idf(self, df: Floats, count: int, mean_idf: float = 0.0) -> Floats:
        """Inverse document frequency of terms found in ``df`` of ``count`` documents;
        ``mean_idf`` is the mean :func:`robertson_idf` of the vocabulary (okapi only)."""
        n = float(count)
        if self.variant == "lucene":
            result: Floats = np.log1p((n - df + 0.5) / (df + 0.5))
        elif self.variant == "okapi":
            result = robertson_idf(df, count)
            result[result < 0] = self.epsilon * mean_idf
        elif self.variant == "bm25l":
            result = math.log(n + 1) - np.log(df + 0.5)
        else:
            result = np.log((n + 1) / df)
        return result

    def document_factor(self, length_norm: Floats) -> Floats:
        """The per-document constant of ``tfc``: ``k1 * length_norm`` (``length_norm`` for
        bm25l), computed once per corpus change so that a query only gathers it."""
        if self.variant == "bm25l":
            return length_norm
        result: Floats = self.k1 * length_norm
        return result

    def term_scale(self) -> float:
        """The constant factor of ``tfc`` that :meth:`gains` leaves out (``k1 + 1`` or 1)."""
        return 1.0 if self.variant in ("lucene", "bm25l") else self.k1 + 1

    def gains(self, tf: Freqs, factor: Floats) -> Floats:
        """``(tfc(tf) - tfc(0)) / term_scale()`` per posting, given each posting's
        :meth:`document_factor`; ``factor`` (a fresh gathered array) is overwritten."""
        if self.variant == "bm25l":
            delta, k1 = self.delta or 0.0, self.k1
            c = np.divide(tf, factor, out=factor)
            c += delta
            result: Floats = (k1 + 1) * c / (k1 + c)
            result -= (k1 + 1) * delta / (k1 + delta)
            return result
        factor += tf  # tf / (tf + k1 * norm); bm25+'s delta cancels against tfc(0)
        return np.divide(tf, factor, out=factor)

    def tfc_absent(self) -> float:
        """``tfc`` for a term a document does not contain (nonzero for bm25l and bm25+)."""
        delta = self.delta or 0.0
        if self.variant == "bm25l":
            return (self.k1 + 1) * delta / (self.k1 + delta)
        if self.variant == "bm25+":
            return delta
        return 0.0

    def to_dict(self) -> dict[str, object]:
        """The parameters as JSON values (for saved indexes)."""
        return {
            "k1": self.k1,
            "b": self.b,
            "variant": self.variant,
            "delta": self.delta,
            "epsilon": self.epsilon,
        }
