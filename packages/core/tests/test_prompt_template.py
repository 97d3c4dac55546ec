"""PromptTemplate: named variables, literal braces, clear errors."""

from __future__ import annotations

import re

import pytest

from ragloom.core import PromptTemplate, PromptTemplateError


def test_renders_named_variables_and_literal_braces() -> None:
    template = PromptTemplate('{greeting}, {name}! JSON: {{"a": 1}}')
    assert template.variables == {"greeting", "name"}
    assert template.render(greeting="Hello", name="Ada", unused=1) == 'Hello, Ada! JSON: {"a": 1}'


def test_values_with_braces_are_inserted_verbatim() -> None:
    template = PromptTemplate("Q: {query}")
    assert template.render(query="what is {user_message}?") == "Q: what is {user_message}?"


def test_missing_value_names_the_variable() -> None:
    with pytest.raises(PromptTemplateError, match=r"variable\(s\) contents; given: user_message"):
        PromptTemplate("{user_message} {contents}").render(user_message="x")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("{}", "{}"),
        ("{0}", "{0}"),
        ("{user.name}", "{user.name}"),
        ("{items[0]}", "{items[0]}"),
        ("{x!r}", "{x!r}"),
        ("{x:>10}", "{x:>10}"),
    ],
)
def test_only_plain_names_are_variables(text: str, field: str) -> None:
    with pytest.raises(PromptTemplateError, match=f"field {re.escape(field)} is not a plain"):
        PromptTemplate(text)


def test_unbalanced_braces_are_a_template_error() -> None:
    with pytest.raises(PromptTemplateError, match="malformed prompt template"):
        PromptTemplate("{oops")
    with pytest.raises(PromptTemplateError, match="malformed"):
        PromptTemplate("oops}")


def test_require_names_the_missing_variable_and_hints_at_single_braces() -> None:
    spec_style = PromptTemplate("{{userMessage}}\n{{contents}}")
    with pytest.raises(
        PromptTemplateError,
        match=r"of MyInjector must contain \{contents\}, \{user_message\}.*single braces",
    ):
        spec_style.require({"user_message", "contents"}, used_by="MyInjector")


def test_of_accepts_text_or_a_template_and_templates_compare_by_text() -> None:
    template = PromptTemplate("{a}")
    assert PromptTemplate.of(template) is template
    assert PromptTemplate.of("{a}") == template
    assert hash(PromptTemplate("{a}")) == hash(template)
    with pytest.raises(TypeError, match="must be str"):
        PromptTemplate(3)  # type: ignore[arg-type]
