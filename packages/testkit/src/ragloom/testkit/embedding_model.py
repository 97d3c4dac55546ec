"""EmbeddingModelSuite: the contract every EmbeddingModel must pass unchanged.

Subclass it and provide one fixture, ``model``, returning the model to test::

    class TestMyModel(EmbeddingModelSuite):
        @pytest.fixture
        def model(self):
            return MyEmbeddingModel()
"""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding, EmbeddingModel, EmbeddingResult, TokenUsage
from ragloom.testkit.suite import ConformanceSuite, if_fails

__all__ = ["EmbeddingModelSuite"]

_TEXTS = [
    "The cat sits on the mat.",
    "Quarterly revenue grew by five percent.",
    "Photosynthesis turns light into chemical energy.",
]
_SAME_RESULT = 0.999  # cosine above which two embeddings of one text count as equal


def _check_usage(usage: TokenUsage | None) -> None:
    if usage is None:
        return
    assert isinstance(usage, TokenUsage)
    for count in (usage.input_token_count, usage.output_token_count, usage.total_token_count):
        assert count is None or (isinstance(count, int) and count >= 0)


class EmbeddingModelSuite(ConformanceSuite, standard=True):
    """Dimension, single and batch embedding, order, determinism, token usage."""

    integration_fixtures = frozenset({"model"})

    @pytest.fixture
    def model(self) -> EmbeddingModel:
        """Provided by the integration: the model under test."""
        raise NotImplementedError(
            f"{type(self).__name__} must define a `model` fixture returning an EmbeddingModel"
        )

    @if_fails(
        "dimension must be a positive int known without a network call (set it, or probe once)"
    )
    def test_dimension_is_a_positive_int(self, model: EmbeddingModel) -> None:
        assert isinstance(model.dimension, int)
        assert model.dimension > 0

    @if_fails("embed() must return EmbeddingResult with one finite, non-zero vector of `dimension`")
    def test_embed_returns_one_finite_embedding_of_the_dimension(
        self, model: EmbeddingModel
    ) -> None:
        result = model.embed(_TEXTS[0])
        assert isinstance(result, EmbeddingResult)
        assert isinstance(result.embedding, Embedding)
        assert result.embedding.dimension == model.dimension
        assert np.isfinite(result.embedding.vector).all()
        assert np.linalg.norm(result.embedding.vector) > 0
        _check_usage(result.token_usage)

    @if_fails("embed(TextSegment) must embed the segment's text only, not its metadata")
    def test_embed_segment_equals_embed_text(self, model: EmbeddingModel) -> None:
        from_text = model.embed(_TEXTS[1]).embedding
        from_segment = model.embed(TextSegment(_TEXTS[1], {"source": "x"})).embedding
        assert from_text.cosine_similarity(from_segment) > _SAME_RESULT

    @if_fails(
        "embed_all must return one embedding per input, in input order (sort responses by index)"
    )
    def test_embed_all_keeps_order_and_count(self, model: EmbeddingModel) -> None:
        result = model.embed_all([TextSegment(text) for text in _TEXTS])
        assert isinstance(result, EmbeddingResult)
        assert len(result.embeddings) == len(_TEXTS)
        for text, batched in zip(_TEXTS, result.embeddings, strict=True):
            assert batched.dimension == model.dimension
            assert model.embed(text).embedding.cosine_similarity(batched) > _SAME_RESULT
        _check_usage(result.token_usage)

    @if_fails("embed_all([]) must return [] without calling the backend")
    def test_embed_all_of_nothing_returns_no_embeddings(self, model: EmbeddingModel) -> None:
        assert model.embed_all([]).embeddings == []

    @if_fails("split large batches into the backend's maximum batch size")
    def test_embed_all_handles_a_larger_batch(self, model: EmbeddingModel) -> None:
        texts = [f"sentence number {i} about topic {i % 7}" for i in range(64)]
        embeddings = model.embed_all(texts).embeddings
        assert len(embeddings) == 64
        assert len({e.vector.tobytes() for e in embeddings}) > 1

    @if_fails("embedding must be deterministic: check pooling, dropout or caching")
    def test_same_text_gives_the_same_embedding(self, model: EmbeddingModel) -> None:
        first = model.embed(_TEXTS[2]).embedding
        second = model.embed(_TEXTS[2]).embedding
        assert first.cosine_similarity(second) > _SAME_RESULT

    @if_fails("vectors look unrelated to the text: check tokenization, pooling and normalization")
    def test_related_texts_are_closer_than_unrelated_ones(self, model: EmbeddingModel) -> None:
        cat = model.embed("The cat sits on the mat.").embedding
        kitten = model.embed("A cat is sitting on the mat.").embedding
        revenue = model.embed("Quarterly revenue grew by five percent.").embedding
        assert cat.cosine_similarity(kitten) > cat.cosine_similarity(revenue)
