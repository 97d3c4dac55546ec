"""RagloomRetriever: contents as documents, k, async, and a ragloom retriever in a chain."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document as LcDocument
from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from ragloom.core.content import Content
from ragloom.core.document import TextSegment
from ragloom.core.errors import InvalidArgumentError, RetrievalError
from ragloom.core.query import Query
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.langchain import LangChainContentRetriever, RagloomRetriever
from ragloom.testkit import FakeEmbeddingModel

TEXTS = [
    "Ragloom's in-memory store searches exactly.",
    "The ingestor splits, embeds and stores documents.",
    "Hybrid retrieval fuses dense and keyword rankings.",
]


@pytest.fixture
def ragloom_retriever() -> EmbeddingStoreContentRetriever:
    model = FakeEmbeddingModel()
    store = InMemoryEmbeddingStore()
    segments = [TextSegment(text, {"n": i}) for i, text in enumerate(TEXTS)]
    store.add_all(model.embed_all(segments).embeddings, segments, ids=["s0", "s1", "s2"])
    return EmbeddingStoreContentRetriever(store, model, max_results=3)


def test_contents_become_documents_with_retrieval_metadata(
    ragloom_retriever: EmbeddingStoreContentRetriever,
) -> None:
    documents = RagloomRetriever(retriever=ragloom_retriever).invoke("hybrid keyword rankings")
    assert len(documents) == 3
    first = documents[0]
    assert (first.id, first.page_content, first.metadata["n"]) == ("s2", TEXTS[2], 2)
    scores = [d.metadata["ragloom"]["score"] for d in documents]
    assert scores == sorted(scores, reverse=True)
    assert first.metadata["ragloom"]["embedding_id"] == "s2"


def test_k_caps_the_documents_per_retriever_and_per_call(
    ragloom_retriever: EmbeddingStoreContentRetriever,
) -> None:
    retriever = RagloomRetriever(retriever=ragloom_retriever, k=2)
    assert len(retriever.invoke("store")) == 2
    assert len(retriever.invoke("store", k=1)) == 1
    assert len(asyncio.run(retriever.ainvoke("store", k=1))) == 1
    with pytest.raises(InvalidArgumentError, match="k must be"):
        retriever.invoke("store", k=0)
    # pydantic reports a bad constructor argument as its ValidationError (a ValueError)
    with pytest.raises(ValueError, match="must be a ragloom ContentRetriever, got str"):
        RagloomRetriever(retriever="not a retriever")


def test_a_ragloom_retriever_runs_inside_a_langchain_chain(
    ragloom_retriever: EmbeddingStoreContentRetriever,
) -> None:
    def context(documents: list[LcDocument]) -> str:
        return "\n".join(d.page_content for d in documents)

    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    chain = (
        {
            "context": RagloomRetriever(retriever=ragloom_retriever, k=1) | context,
            "question": RunnablePassthrough(),
        }
        | prompt
        | ParrotFakeChatModel()  # answers with the prompt it got: shows what was retrieved
        | StrOutputParser()
    )
    answer = chain.invoke("how does hybrid retrieval fuse rankings?")
    assert answer == (f"Context:\n{TEXTS[2]}\n\nQuestion: how does hybrid retrieval fuse rankings?")


def test_a_langchain_retriever_serves_ragloom(
    ragloom_retriever: EmbeddingStoreContentRetriever,
) -> None:
    langchain_side = RagloomRetriever(retriever=ragloom_retriever)
    back = LangChainContentRetriever(langchain_side)
    [first, *_] = back.retrieve(Query("hybrid keyword rankings"))
    assert (first.text, first.text_segment.metadata["n"], first.metadata) == (
        TEXTS[2],
        2,
        {"segment_id": "s2"},
    )
    assert [c.text for c in asyncio.run(back.aretrieve(Query("ingestor")))] == [
        c.text for c in back.retrieve(Query("ingestor"))
    ]
    with pytest.raises(RetrievalError, match="RagloomRetriever.invoke failed"):
        LangChainContentRetriever(RagloomRetriever(retriever=_Failing())).retrieve(Query("x"))


class _Failing:
    def retrieve(self, query: Query) -> list[Content]:
        raise ConnectionError("index offline")
