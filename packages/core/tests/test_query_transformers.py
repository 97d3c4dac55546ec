"""DefaultQueryTransformer, CompressingQueryTransformer, ExpandingQueryTransformer."""

from __future__ import annotations

import asyncio

import pytest

from ragloom.core import (
    AiMessage,
    ChatMessage,
    CompressingQueryTransformer,
    DefaultQueryTransformer,
    ExpandingQueryTransformer,
    PromptTemplateError,
    Query,
    QueryMetadata,
    QueryTransformer,
    SystemMessage,
    UserMessage,
)
from ragloom.testkit import ScriptedChatModel

HISTORY: tuple[ChatMessage, ...] = (
    SystemMessage("You are a biographer."),
    UserMessage("Tell me about John Doe"),
    AiMessage("John Doe was a painter."),
)


def follow_up(history: tuple[ChatMessage, ...] = HISTORY) -> Query:
    message = UserMessage("Where did he live?")
    return Query(message.text, QueryMetadata(message, "user-1", history))


def test_default_transformer_passes_the_query_through() -> None:
    query = follow_up()
    transformer = DefaultQueryTransformer()
    assert isinstance(transformer, QueryTransformer)
    assert transformer.transform(query) == [query]
    assert asyncio.run(transformer.atransform(query)) == [query]


# --- compressing ------------------------------------------------------------------------


def test_compressing_rewrites_a_follow_up_from_the_conversation() -> None:
    model = ScriptedChatModel(["  Where did John Doe live?\n"])
    [compressed] = CompressingQueryTransformer(model).transform(follow_up())
    assert compressed.text == "Where did John Doe live?"
    assert compressed.metadata == follow_up().metadata
    prompt = model.prompts[0]
    assert "Conversation:\nUser: Tell me about John Doe\nAI: John Doe was a painter.\n" in prompt
    assert "User query: Where did he live?" in prompt
    assert "biographer" not in prompt  # system messages are not part of the conversation


@pytest.mark.parametrize("history", [(), (SystemMessage("rules only"),)])
def test_compressing_without_history_does_not_call_the_model(
    history: tuple[ChatMessage, ...],
) -> None:
    model = ScriptedChatModel([])
    query = follow_up(history)
    assert CompressingQueryTransformer(model).transform(query) == [query]
    assert asyncio.run(CompressingQueryTransformer(model).atransform(query)) == [query]
    assert model.requests == []


def test_compressing_keeps_the_query_when_the_answer_is_blank() -> None:
    query = follow_up()
    assert CompressingQueryTransformer(ScriptedChatModel([" \n"])).transform(query) == [query]


def test_compressing_async_uses_achat() -> None:
    model = ScriptedChatModel(["Where did John Doe live?"])
    [compressed] = asyncio.run(CompressingQueryTransformer(model).atransform(follow_up()))
    assert compressed.text == "Where did John Doe live?"
    assert len(model.requests) == 1


def test_compressing_custom_template_must_have_its_variables() -> None:
    model = ScriptedChatModel(["rewritten"])
    transformer = CompressingQueryTransformer(
        model, prompt_template="History:\n{chat_memory}\nRewrite: {query}"
    )
    transformer.transform(follow_up())
    assert model.prompts[0].startswith("History:\nUser: Tell me about John Doe")
    with pytest.raises(PromptTemplateError, match=r"must contain \{chat_memory\}"):
        CompressingQueryTransformer(model, prompt_template="Rewrite {query}")


# --- expanding --------------------------------------------------------------------------


def test_expanding_makes_one_query_per_line_with_the_same_metadata() -> None:
    answer = (
        "Where was John Doe's home?\n\nIn which city did John Doe reside?\nJohn Doe's residence"
    )
    model = ScriptedChatModel([answer])
    queries = ExpandingQueryTransformer(model).transform(follow_up())
    assert [q.text for q in queries] == [
        "Where was John Doe's home?",
        "In which city did John Doe reside?",
        "John Doe's residence",
    ]
    assert all(q.metadata == follow_up().metadata for q in queries)
    assert model.prompts[0].startswith("Generate 3 different versions of a provided user query.")
    assert model.prompts[0].endswith("User query: Where did he live?")


def test_expanding_drops_list_markers_blanks_and_repeats() -> None:
    model = ScriptedChatModel(
        lambda messages: "1. alpha\n2) beta\n- gamma\n* alpha\n•  delta\n   \n"
    )
    queries = ExpandingQueryTransformer(model, n=4).transform(Query("q"))
    assert [q.text for q in queries] == ["alpha", "beta", "gamma", "delta"]
    assert "Generate 4 different versions" in model.prompts[0]


def test_expanding_keeps_the_query_when_no_line_is_usable() -> None:
    query = Query("q")
    assert ExpandingQueryTransformer(ScriptedChatModel(["\n - \n"])).transform(query) == [query]


def test_expanding_custom_template_and_async() -> None:
    model = ScriptedChatModel(["a\nb"])
    transformer = ExpandingQueryTransformer(model, prompt_template="Rephrase twice: {query}")
    queries = asyncio.run(transformer.atransform(Query("original")))
    assert [q.text for q in queries] == ["a", "b"]
    assert model.prompts == ["Rephrase twice: original"]


def test_expanding_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="n must be a positive int"):
        ExpandingQueryTransformer(ScriptedChatModel(), n=0)
    with pytest.raises(PromptTemplateError, match=r"must contain \{query\}"):
        ExpandingQueryTransformer(ScriptedChatModel(), prompt_template="Give {n} versions")
