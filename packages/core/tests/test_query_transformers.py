"""The query transformers: default, compressing, expanding, HyDE, step-back, rewriting."""

from __future__ import annotations

import asyncio

import pytest

from ragloom.core import (
    AiMessage,
    ChatMessage,
    CompressingQueryTransformer,
    DefaultQueryTransformer,
    ExpandingQueryTransformer,
    HydeQueryTransformer,
    InvalidArgumentError,
    PromptTemplateError,
    Query,
    QueryMetadata,
    QueryTransformer,
    RewritingQueryTransformer,
    StepBackQueryTransformer,
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


def test_expanding_keeps_at_most_n_queries_of_a_hostile_answer() -> None:
    answer = "\n".join(f"query {i}\x1b[2J" for i in range(1000)) + "\n" + "x" * 600
    queries = ExpandingQueryTransformer(ScriptedChatModel([answer]), n=3).transform(Query("q"))
    assert [q.text for q in queries] == ["query 0[2J", "query 1[2J", "query 2[2J"]


def test_compressing_bounds_a_hostile_answer() -> None:
    answer = "\x00Where did\x07 John Doe live? " + "and more " * 200
    [compressed] = CompressingQueryTransformer(ScriptedChatModel([answer])).transform(follow_up())
    assert compressed.text.startswith("Where did John Doe live? and more")
    assert len(compressed.text) <= 500
    assert "\x00" not in compressed.text
    assert "\x07" not in compressed.text


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


# --- HyDE -------------------------------------------------------------------------------


def test_hyde_retrieves_with_the_original_and_a_hypothetical_passage() -> None:
    model = ScriptedChatModel(["  John Doe lived in Paris, on the left bank.\n"])
    queries = HydeQueryTransformer(model).transform(follow_up())
    assert [q.text for q in queries] == [
        "Where did he live?",
        "John Doe lived in Paris, on the left bank.",
    ]
    assert all(q.metadata == follow_up().metadata for q in queries)
    assert model.prompts[0].startswith("Write a short passage that answers the question")
    assert model.prompts[0].endswith("Question: Where did he live?")


def test_hyde_without_the_original_and_async() -> None:
    model = ScriptedChatModel(["He lived in Paris."])
    transformer = HydeQueryTransformer(model, include_original=False, prompt_template="A: {query}")
    queries = asyncio.run(transformer.atransform(Query("q")))
    assert [q.text for q in queries] == ["He lived in Paris."]
    assert model.prompts == ["A: q"]


def test_hyde_bounds_the_passage_at_a_word_and_strips_control_characters() -> None:
    answer = "Paris\x00 is\x1b[31m " + "word " * 1000
    [_, hypothetical] = HydeQueryTransformer(ScriptedChatModel([answer]), max_chars=50).transform(
        Query("q")
    )
    assert hypothetical.text.startswith("Paris is[31m word")
    assert len(hypothetical.text) <= 50
    assert hypothetical.text.endswith("word")


@pytest.mark.parametrize("answer", ["", " \n\t ", "\x00\x07", "q"])
def test_hyde_keeps_only_the_query_when_the_answer_is_unusable(answer: str) -> None:
    query = Query("q")
    for include_original in (True, False):
        model = ScriptedChatModel([answer])
        transformer = HydeQueryTransformer(model, include_original=include_original)
        assert transformer.transform(query) == [query]


def test_hyde_rejects_bad_settings() -> None:
    with pytest.raises(InvalidArgumentError, match="max_chars must be a positive int, got 0"):
        HydeQueryTransformer(ScriptedChatModel(), max_chars=0)
    with pytest.raises(PromptTemplateError, match=r"HydeQueryTransformer must contain \{query\}"):
        HydeQueryTransformer(ScriptedChatModel(), prompt_template="Answer this")


# --- step-back --------------------------------------------------------------------------


def test_step_back_adds_a_more_general_question() -> None:
    model = ScriptedChatModel(['1. "What do we know about John Doe\'s life?"\nextra line'])
    queries = StepBackQueryTransformer(model).transform(follow_up())
    assert [q.text for q in queries] == [
        "Where did he live?",
        "What do we know about John Doe's life?",
    ]
    assert all(q.metadata == follow_up().metadata for q in queries)
    assert "step-back question" in model.prompts[0]
    assert model.prompts[0].endswith("Question: Where did he live?")


@pytest.mark.parametrize("answer", ["", "\n \n", "Where did he live?", "x" * 501, "\u201c\u201d"])
def test_step_back_keeps_only_the_query_when_the_answer_is_unusable(answer: str) -> None:
    query = follow_up()
    assert StepBackQueryTransformer(ScriptedChatModel([answer])).transform(query) == [query]


def test_step_back_async_and_custom_template() -> None:
    model = ScriptedChatModel(["General?"])
    transformer = StepBackQueryTransformer(model, prompt_template="Generalise: {query}")
    queries = asyncio.run(transformer.atransform(Query("Specific?")))
    assert [q.text for q in queries] == ["Specific?", "General?"]
    assert model.prompts == ["Generalise: Specific?"]
    assert model.requests[0].streamed is False


# --- rewriting --------------------------------------------------------------------------


def test_rewriting_makes_a_search_query_from_a_chatty_message() -> None:
    model = ScriptedChatModel(["`cancel hotel booking`\nThis query keeps the key terms."])
    query = Query("hi! could you tell me how I'd go about cancelling my booking? thanks")
    [rewritten] = RewritingQueryTransformer(model).transform(query)
    assert rewritten.text == "cancel hotel booking"
    assert "Conversation:\n(none)\n" in model.prompts[0]
    assert model.prompts[0].endswith(
        "It is very important that you provide only the search query and nothing else!"
    )


def test_rewriting_uses_the_conversation_when_there_is_one() -> None:
    model = ScriptedChatModel(["John Doe residence"])
    [rewritten] = asyncio.run(RewritingQueryTransformer(model).atransform(follow_up()))
    assert rewritten.text == "John Doe residence"
    assert rewritten.metadata == follow_up().metadata
    assert "User: Tell me about John Doe\nAI: John Doe was a painter." in model.prompts[0]
    assert "User message: Where did he live?" in model.prompts[0]


@pytest.mark.parametrize("answer", ["", "\x00 \x1f", "- ", "y" * 41])
def test_rewriting_keeps_the_query_when_the_answer_is_unusable(answer: str) -> None:
    query = Query("q")
    transformer = RewritingQueryTransformer(ScriptedChatModel([answer]), max_chars=40)
    assert transformer.transform(query) == [query]


def test_rewriting_template_needs_only_the_query() -> None:
    model = ScriptedChatModel(["short"])
    RewritingQueryTransformer(model, prompt_template="Search terms for: {query}").transform(
        Query("q")
    )
    assert model.prompts == ["Search terms for: q"]
    with pytest.raises(PromptTemplateError, match=r"must contain \{query\}"):
        RewritingQueryTransformer(model, prompt_template="{chat_memory}")
