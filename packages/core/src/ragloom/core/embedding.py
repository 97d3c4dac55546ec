"""Embedding, TokenUsage, EmbeddingResult and the EmbeddingModel protocol.

An :class:`Embedding` is an immutable 1-D ``float32`` vector. A model returns its
embeddings wrapped in an :class:`EmbeddingResult` together with the tokens it used
(the spec's ``Response<Embedding>`` / ``Response<List<Embedding>>``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragloom.core.document import TextSegment
from ragloom.core.errors import (
    EmbeddingModelError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)

__all__ = [
    "FloatVector",
    "Embedding",
    "relevance_score",
    "TokenUsage",
    "EmbeddingResult",
    "EmbeddingModel",
    "text_of",
]

FloatVector = npt.NDArray[np.float32]


class Embedding:
    """An immutable embedding vector: a finite, non-empty, 1-D ``float32`` array.

    The array is copied on construction and made read-only, so an ``Embedding`` can be
    shared, hashed and compared safely. ``numpy.asarray(embedding)`` gives the vector.
    """

    __slots__ = ("_vector",)

    _vector: FloatVector

    def __init__(self, vector: npt.ArrayLike) -> None:
        if type(vector) is np.ndarray and vector.dtype == np.float32:
            array = vector.copy()  # no conversion, so nothing to overflow: half the cost
        else:
            try:
                with np.errstate(over="ignore", invalid="ignore"):  # reported below
                    array = np.array(vector, dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise InvalidArgumentError(
                    f"embedding vector must be numeric, got {_describe(vector)}"
                ) from exc
        if array.ndim != 1 or array.size == 0:
            raise InvalidArgumentError(
                f"embedding vector must be 1-D and non-empty, got shape {array.shape}"
            )
        if not _finite(array):
            raise InvalidArgumentError("embedding vector contains NaN or infinity")
        array.flags.writeable = False
        self._vector = array

    @classmethod
    def _trusted(cls, array: FloatVector) -> Embedding:
        """Wrap a validated, privately owned float32 vector without copying (internal)."""
        instance = cls.__new__(cls)
        array.flags.writeable = False
        instance._vector = array
        return instance

    @classmethod
    def _trusted_rows(cls, matrix: npt.NDArray[np.float32]) -> list[Embedding]:
        """:meth:`_trusted` of each row of a privately owned float32 matrix (made
        read-only once, so that its row views are read-only too)."""
        matrix.flags.writeable = False
        new = cls.__new__
        embeddings = []
        for row in matrix:
            instance = new(cls)
            instance._vector = row
            embeddings.append(instance)
        return embeddings

    @classmethod
    def from_list(cls, values: Sequence[float]) -> Embedding:
        """The spec's ``Embedding.from(List<Float>)``."""
        return cls(values)

    @property
    def vector(self) -> FloatVector:
        """The read-only ``float32`` vector."""
        return self._vector

    @property
    def dimension(self) -> int:
        """The number of components of the vector."""
        return int(self._vector.shape[0])

    def to_list(self) -> list[float]:
        """The vector as Python floats (exact: every float32 is a float)."""
        values: list[float] = self._vector.tolist()
        return values

    def normalized(self) -> Embedding:
        """This embedding scaled to unit length (a zero vector is returned unchanged)."""
        norm = float(np.linalg.norm(self._vector.astype(np.float64)))
        if norm == 0.0:
            return self
        return Embedding._trusted((self._vector / norm).astype(np.float32))

    def cosine_similarity(self, other: Embedding) -> float:
        """Cosine similarity in [-1, 1] (the spec's ``CosineSimilarity.between``).

        Computed in float64; 0 when either vector is zero.
        """
        if other.dimension != self.dimension:
            raise InvalidArgumentError(
                f"cannot compare embeddings of dimension {self.dimension} and {other.dimension}"
            )
        a = self._vector.astype(np.float64)
        b = other._vector.astype(np.float64)
        denominator = math.sqrt(float(a @ a) * float(b @ b))
        if denominator == 0.0:
            return 0.0
        return max(-1.0, min(1.0, float(a @ b) / denominator))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> FloatVector:
        if dtype is None or np.dtype(dtype) == np.float32:
            return self._vector.copy() if copy else self._vector
        if copy is False:
            raise InvalidArgumentError(
                f"cannot view a float32 embedding as {np.dtype(dtype)} without a copy"
            )
        return self._vector.astype(dtype)

    def __len__(self) -> int:
        return self.dimension

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Embedding):
            return NotImplemented
        return bool(np.array_equal(self._vector, other._vector))

    def __hash__(self) -> int:
        return hash(self._vector.tobytes())

    def __repr__(self) -> str:
        head = ", ".join(f"{x:.4g}" for x in self._vector[:4].tolist())
        more = ", ..." if self.dimension > 4 else ""
        return f"Embedding(dimension={self.dimension}, vector=[{head}{more}])"


def _finite(array: FloatVector) -> bool:
    """Whether every component of the 1-D ``array`` is finite, in one BLAS call when so
    (a query's check, 1-2 us less cold than ``isfinite(...).all()``): a NaN or an
    infinity makes the sum of squares NaN or infinite (squares cannot cancel); a
    finite sum proves them all finite. Only an overflowing sum (a norm above ~1.8e19)
    needs the component-wise check. ``vdot``, unlike ``dot``, raises no floating-point
    warning for that overflow, so such a vector is accepted silently as before."""
    return math.isfinite(np.vdot(array, array)) or bool(np.isfinite(array).all())


def relevance_score(cosine_similarity: float) -> float:
    """Map a cosine similarity in [-1, 1] to a relevance score in [0, 1]: ``(cos + 1) / 2``.

    The spec's ``RelevanceScore.fromCosineSimilarity``; stores report this score.
    """
    return (cosine_similarity + 1.0) / 2.0


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens a model call used; counts a provider does not report are ``None``.

    ``total_token_count`` defaults to the sum of the known counts. Usages add up with
    ``+`` (``None`` counts are treated as unknown, not zero, unless the other side knows
    them), and ``sum(usages)`` works.
    """

    input_token_count: int | None = None
    output_token_count: int | None = None
    total_token_count: int | None = None

    def __post_init__(self) -> None:
        for name in ("input_token_count", "output_token_count", "total_token_count"):
            value = getattr(self, name)
            if value is not None and (type(value) is not int or value < 0):
                raise InvalidArgumentError(
                    f"{name} must be a non-negative int or None, got {value!r}"
                )
        if self.total_token_count is None:
            object.__setattr__(
                self,
                "total_token_count",
                _sum_counts(self.input_token_count, self.output_token_count),
            )

    def __add__(self, other: TokenUsage | None) -> TokenUsage:
        if other is None:
            return self
        if not isinstance(other, TokenUsage):
            return NotImplemented
        return TokenUsage(
            _sum_counts(self.input_token_count, other.input_token_count),
            _sum_counts(self.output_token_count, other.output_token_count),
            _sum_counts(self.total_token_count, other.total_token_count),
        )

    def __radd__(self, other: object) -> TokenUsage:
        if other is None or other == 0:  # ``None + usage`` and ``sum(usages)``
            return self
        return NotImplemented


def _sum_counts(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


@dataclass(frozen=True, slots=True)
class EmbeddingResult:
    """What an :class:`EmbeddingModel` returns: embeddings in input order plus token usage.

    The spec's ``Response<List<Embedding>>``: ``embeddings`` is its ``content()`` and
    ``token_usage`` its ``tokenUsage()``. ``embed`` returns one with a single embedding,
    available as :attr:`embedding`.
    """

    embeddings: list[Embedding]
    token_usage: TokenUsage | None = None

    @property
    def embedding(self) -> Embedding:
        """The only embedding (for results of ``embed``); raises if there is not exactly one."""
        if len(self.embeddings) != 1:
            raise InvalidArgumentError(
                f"embedding needs exactly one; this result holds {len(self.embeddings)} embeddings"
            )
        return self.embeddings[0]


@runtime_checkable
class EmbeddingModel(Protocol):
    """Turns text into :class:`Embedding` s.

    Implementations must define :meth:`embed_all`; subclassing this protocol explicitly
    inherits :meth:`embed` (one-element ``embed_all``) and :attr:`dimension` (embeds a
    probe text once), which a model with a known dimension should override.
    """

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """Embed every text or segment, in order, in as few provider calls as possible."""
        ...

    def embed(self, text: str | TextSegment) -> EmbeddingResult:
        """Embed one text or segment; the result's :attr:`~EmbeddingResult.embedding`."""
        result = self.embed_all([text])
        if len(result.embeddings) != 1:
            raise EmbeddingModelError(
                f"{type(self).__name__}.embed_all returned {len(result.embeddings)} "
                "embeddings for 1 text"
            )
        return result

    @property
    def dimension(self) -> int:
        """The dimension of the embeddings this model produces."""
        return self.embed("dimension").embedding.dimension


def text_of(item: str | TextSegment) -> str:
    """The text to embed for a ``str`` or :class:`TextSegment` (helper for models)."""
    if isinstance(item, TextSegment):
        return item.text
    if isinstance(item, str):
        return item
    raise InvalidArgumentTypeError(
        f"each text must be a str or TextSegment, got {type(item).__name__}"
    )


def _describe(value: object) -> str:
    return type(value).__name__
