"""Rocchio pseudo-relevance feedback for the embedding-store retriever."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.core import (
    Embedding,
    EmbeddingStoreContentRetriever,
    InMemoryEmbeddingStore,
    Query,
    TextSegment,
)
from ragloom.core.retrievers.rocchio import Rocchio
from ragloom.testkit import FakeEmbeddingModel


def test_update_by_hand() -> None:
    query = Embedding([2.0, 0.0, 0.0])
    hits = [Embedding([0.0, 3.0, 0.0]), Embedding([0.0, 0.0, 0.0]), Embedding([0.0, 0.0, 5.0])]
    moved = Rocchio(documents=3, weight=0.5).update(query, hits)
    # unit query + 0.5 * mean of the non-zero unit hits ((0,1,0) and (0,0,1))
    np.testing.assert_allclose(np.asarray(moved), [1.0, 0.25, 0.25], atol=1e-6)
    first_only = Rocchio(documents=1, weight=1.0).update(query, hits)
    np.testing.assert_allclose(np.asarray(first_only), [1.0, 1.0, 0.0], atol=1e-6)
    assert Rocchio().update(query, []) is query


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"documents": 0}, "documents"), ({"weight": 0}, "weight"), ({"weight": True}, "weight")],
)
def test_settings_are_checked(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        Rocchio(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Rocchio"):
        EmbeddingStoreContentRetriever(InMemoryEmbeddingStore(), FakeEmbeddingModel(), feedback=3)  # type: ignore[arg-type]


class Fixed:
    """An embedding model with given vectors per text."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_all(self, texts):  # type: ignore[no-untyped-def]
        from ragloom.core import EmbeddingResult

        return EmbeddingResult([Embedding(self.vectors[str(t)]) for t in texts])

    def embed(self, text):  # type: ignore[no-untyped-def]
        return self.embed_all([text])


def test_retriever_searches_again_with_the_moved_query() -> None:
    store = InMemoryEmbeddingStore()
    vectors = {
        "a": [1.0, 0.2, 0.0],
        "b": [0.6, 0.8, 0.0],
        "c": [0.0, 1.0, 0.0],
        "q": [1.0, 0.0, 0.0],
    }
    for text in "abc":
        store.add(Embedding(vectors[text]), TextSegment(text))
    model = Fixed(vectors)
    plain = EmbeddingStoreContentRetriever(store, model, max_results=3)  # type: ignore[arg-type]
    assert [c.text for c in plain.retrieve(Query("q"))] == ["a", "b", "c"]
    moved = EmbeddingStoreContentRetriever(
        store,
        model,  # type: ignore[arg-type]
        max_results=3,
        feedback=Rocchio(documents=2, weight=2.0),
    )
    contents = moved.retrieve(Query("q"))
    q = np.array([1.0, 0.0, 0.0]) + 2.0 * np.mean(
        [np.array(vectors[t]) / np.linalg.norm(vectors[t]) for t in "ab"], axis=0
    )

    def relevance(text: str) -> float:
        v = np.array(vectors[text])
        return float((q @ v / np.linalg.norm(q) / np.linalg.norm(v) + 1) / 2)

    assert [(c.text, round(c.score or 0, 6)) for c in contents] == [
        (t, round(relevance(t), 6)) for t in "abc"
    ]
    before = {c.text: c.score or 0 for c in plain.retrieve(Query("q"))}
    assert contents[2].score > before["c"] + 0.1  # pulled towards the first two hits
