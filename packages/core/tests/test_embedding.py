"""Embedding, TokenUsage, EmbeddingResult and the EmbeddingModel protocol."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from ragloom.core import Embedding, EmbeddingModel, EmbeddingResult, TextSegment, TokenUsage
from ragloom.core.embedding import relevance_score, text_of


@pytest.mark.parametrize("dtype", [np.float64, np.float32])  # float32: the no-conversion path
def test_embedding_is_an_immutable_float32_copy(dtype: type[np.floating[Any]]) -> None:
    source = np.array([1.0, 2.0, 3.0], dtype=dtype)
    embedding = Embedding(source)
    source[0] = 99.0
    assert embedding.vector.dtype == np.float32
    assert embedding.to_list() == [1.0, 2.0, 3.0]
    assert embedding.dimension == len(embedding) == 3
    with pytest.raises(ValueError, match="read-only"):
        embedding.vector[0] = 5.0
    assert source.flags.writeable  # the caller's array is left alone


def test_a_strided_float32_view_becomes_a_contiguous_copy() -> None:
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    embedding = Embedding(matrix[:, 1])
    assert embedding.to_list() == [1.0, 5.0, 9.0]
    assert embedding.vector.flags.c_contiguous
    assert embedding.vector.base is None or embedding.vector.base is not matrix


def test_embedding_from_list_to_list_is_exact_for_float32_values() -> None:
    values = [0.1, -2.5, 1e-8, 3.4e38]
    embedding = Embedding.from_list(values)
    assert embedding.to_list() == [float(np.float32(v)) for v in values]
    assert Embedding(embedding.to_list()) == embedding


@pytest.mark.parametrize(
    "bad",
    [[], [[1.0, 2.0]], 1.0, [math.nan], [1.0, math.inf], ["a"], [1e39]],
    ids=["empty", "2-d", "scalar", "nan", "inf", "text", "overflow"],
)
def test_embedding_rejects_bad_vectors(bad: object) -> None:
    with pytest.raises(ValueError, match="embedding vector"):
        Embedding(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [1, 3, 8, 17, 384])  # BLAS kernels' vector widths and tails
def test_a_float32_vector_with_any_non_finite_component_is_refused(size: int) -> None:
    for bad in (np.nan, np.inf, -np.inf):
        for where in range(size):
            vector = np.ones(size, dtype=np.float32)
            vector[where] = bad
            with pytest.raises(ValueError, match="contains NaN or infinity"):
                Embedding(vector)
    both = np.ones(size + 1, dtype=np.float32)
    both[0], both[-1] = np.inf, -np.inf  # would cancel in a plain sum
    with pytest.raises(ValueError, match="contains NaN or infinity"):
        Embedding(both)


def test_a_finite_vector_whose_squares_overflow_is_kept_without_a_warning() -> None:
    huge = np.array([3.4e38, -3.4e38, 1e20, 1.0], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        embedding = Embedding(huge)
    assert embedding.to_list() == huge.tolist()


def test_equality_and_hashing_follow_the_values() -> None:
    assert Embedding([1, 2]) == Embedding(np.array([1.0, 2.0], dtype=np.float64))
    assert Embedding([1, 2]) != Embedding([1, 2, 0])
    assert Embedding([1, 2]) != Embedding([2, 1])
    assert len({Embedding([1, 2]), Embedding([1.0, 2.0]), Embedding([0, 1])}) == 2
    assert Embedding([1, 2]).__eq__([1, 2]) is NotImplemented


def test_normalized_gives_unit_length_and_keeps_zero_vectors() -> None:
    unit = Embedding([3, 4]).normalized()
    np.testing.assert_allclose(unit.vector, [0.6, 0.8], rtol=1e-7)
    zero = Embedding([0, 0])
    assert zero.normalized() == zero


def test_cosine_similarity_and_relevance_score() -> None:
    a = Embedding([1, 0])
    assert a.cosine_similarity(Embedding([2, 0])) == pytest.approx(1.0)
    assert a.cosine_similarity(Embedding([0, 5])) == 0.0
    assert a.cosine_similarity(Embedding([-1, 0])) == -1.0
    assert a.cosine_similarity(Embedding([0, 0])) == 0.0
    assert relevance_score(-1.0) == 0.0
    assert relevance_score(0.0) == 0.5
    with pytest.raises(ValueError, match="dimension"):
        a.cosine_similarity(Embedding([1, 0, 0]))


def test_numpy_interop() -> None:
    embedding = Embedding([1, 2])
    assert np.asarray(embedding).dtype == np.float32
    np.testing.assert_array_equal(np.asarray(embedding, dtype=np.float64), [1.0, 2.0])
    copied = np.array(embedding)
    copied[0] = 7.0
    assert embedding.to_list() == [1.0, 2.0]
    assert "dimension=2" in repr(embedding)


def test_token_usage_totals_and_addition() -> None:
    assert TokenUsage(3, 4).total_token_count == 7
    assert TokenUsage(3).total_token_count == 3
    assert TokenUsage().total_token_count is None
    assert TokenUsage(1, 2) + TokenUsage(10, None) == TokenUsage(11, 2, 13)
    assert TokenUsage(1) + None == TokenUsage(1)
    assert None + TokenUsage(1) == TokenUsage(1)
    assert sum([TokenUsage(1, 1), TokenUsage(2, 2)]) == TokenUsage(3, 3, 6)
    assert TokenUsage(input_token_count=5, total_token_count=9).total_token_count == 9


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_token_usage_rejects_bad_counts(bad: object) -> None:
    with pytest.raises(ValueError, match="input_token_count"):
        TokenUsage(bad)  # type: ignore[arg-type]


def test_embedding_result_single_embedding() -> None:
    one = EmbeddingResult([Embedding([1.0])], TokenUsage(1))
    assert one.embedding == Embedding([1.0])
    with pytest.raises(ValueError, match="2 embeddings"):
        _ = EmbeddingResult([Embedding([1.0]), Embedding([2.0])]).embedding


class _LengthModel(EmbeddingModel):
    """A minimal model: only embed_all is written, embed and dimension are inherited."""

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        lengths = [len(text_of(t)) for t in texts]
        return EmbeddingResult([Embedding([n, 1]) for n in lengths], TokenUsage(sum(lengths)))


def test_protocol_defaults_embed_and_dimension() -> None:
    model = _LengthModel()
    assert isinstance(model, EmbeddingModel)
    result = model.embed(TextSegment("abc"))
    assert result.embedding == Embedding([3, 1])
    assert result.token_usage == TokenUsage(3)
    assert model.dimension == 2


def test_text_of_rejects_other_types() -> None:
    assert text_of("x") == text_of(TextSegment("x")) == "x"
    with pytest.raises(TypeError, match="int"):
        text_of(3)  # type: ignore[arg-type]
