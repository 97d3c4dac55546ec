"""DefaultContentInjector: default format, metadata keys, custom templates."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragloom.core import (
    Content,
    ContentInjector,
    DefaultContentInjector,
    PromptTemplateError,
    TextSegment,
    UserMessage,
)

QUESTION = UserMessage("How can I cancel my reservation?", name="ann")
FOUND = [
    Content(
        TextSegment(
            "To cancel a reservation, go to ...",
            {"source": "./cancellation_procedure.html", "page": 2},
        )
    ),
    Content(
        TextSegment("Cancellation is allowed for ...", {"source": "./cancellation_policy.html"})
    ),
]


def test_default_injection_appends_the_contents() -> None:
    injector = DefaultContentInjector()
    assert isinstance(injector, ContentInjector)
    injected = injector.inject(FOUND, QUESTION)
    assert injected == UserMessage(
        "How can I cancel my reservation?\n"
        "\n"
        "Answer using the following information:\n"
        "To cancel a reservation, go to ...\n"
        "\n"
        "Cancellation is allowed for ...",
        name="ann",
    )


def test_metadata_keys_are_rendered_as_in_the_spec() -> None:
    injector = DefaultContentInjector(metadata_keys_to_include=["source", "page"])
    assert injector.inject(FOUND, QUESTION).text == (
        "How can I cancel my reservation?\n"
        "\n"
        "Answer using the following information:\n"
        "content: To cancel a reservation, go to ...\n"
        "source: ./cancellation_procedure.html\n"
        "page: 2\n"
        "\n"
        "content: Cancellation is allowed for ...\n"
        "source: ./cancellation_policy.html"
    )


def test_no_contents_leaves_the_message_unchanged() -> None:
    assert DefaultContentInjector().inject([], QUESTION) is QUESTION


def test_custom_template() -> None:
    injector = DefaultContentInjector("Context:\n{contents}\n---\nQuestion: {user_message}")
    assert injector.inject(FOUND[:1], QUESTION).text == (
        "Context:\nTo cancel a reservation, go to ...\n"
        "---\nQuestion: How can I cancel my reservation?"
    )


def test_content_with_braces_is_injected_verbatim() -> None:
    found = [Content.from_text('config = {"user_message": 1} and {contents}')]
    injected = DefaultContentInjector().inject(found, UserMessage("What is {x}?"))
    assert injected.text.endswith('config = {"user_message": 1} and {contents}')
    assert injected.text.startswith("What is {x}?")


@pytest.mark.parametrize(
    ("template", "missing"),
    [
        ("{user_message} only", r"\{contents\}"),
        ("{{userMessage}}\n{{contents}}", r"\{contents\}, \{user_message\}"),
    ],
)
def test_template_without_its_variables_is_rejected(template: str, missing: str) -> None:
    with pytest.raises(PromptTemplateError, match=f"DefaultContentInjector must contain {missing}"):
        DefaultContentInjector(template)


def test_format_methods_can_be_overridden() -> None:
    class Numbered(DefaultContentInjector):
        def format_contents(self, contents: Sequence[Content]) -> str:
            return "\n".join(f"[{i}] {self.format_content(c)}" for i, c in enumerate(contents, 1))

    text = Numbered().inject(FOUND, QUESTION).text
    assert text.endswith(
        "[1] To cancel a reservation, go to ...\n[2] Cancellation is allowed for ..."
    )


def test_metadata_keys_must_be_a_sequence_of_keys() -> None:
    with pytest.raises(TypeError, match="not a str"):
        DefaultContentInjector(metadata_keys_to_include="source")
