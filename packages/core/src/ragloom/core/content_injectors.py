"""Content injectors: put the retrieved contents into the user's message for the model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ragloom.core.chat.messages import UserMessage
from ragloom.core.content import Content
from ragloom.core.errors import InvalidArgumentTypeError
from ragloom.core.prompt_template import PromptTemplate

__all__ = [
    "ContentInjector",
    "DEFAULT_INJECTION_TEMPLATE",
    "DefaultContentInjector",
]


@runtime_checkable
class ContentInjector(Protocol):
    """Builds the message sent to the model from the user's message and the contents."""

    def inject(self, contents: Sequence[Content], chat_message: UserMessage) -> UserMessage:
        """``chat_message`` augmented with ``contents``."""
        ...


DEFAULT_INJECTION_TEMPLATE = PromptTemplate(
    "{user_message}\n\nAnswer using the following information:\n{contents}"
)


class DefaultContentInjector(ContentInjector):
    """Appends the contents to the user's message after "Answer using the following information:".

    ``prompt_template`` must contain ``{user_message}`` and ``{contents}``. With
    ``metadata_keys_to_include``, each content is rendered as ``content: <text>`` followed
    by one ``<key>: <value>`` line per key its segment has. Contents are separated by a
    blank line; with no contents the message is returned unchanged. Subclasses may
    override :meth:`format_content` or :meth:`format_contents`.
    """

    def __init__(
        self,
        prompt_template: str | PromptTemplate | None = None,
        *,
        metadata_keys_to_include: Sequence[str] | None = None,
    ) -> None:
        if isinstance(metadata_keys_to_include, str):
            raise InvalidArgumentTypeError(
                "metadata_keys_to_include must be a sequence of keys, not a str"
            )
        self.prompt_template = PromptTemplate.of(
            prompt_template or DEFAULT_INJECTION_TEMPLATE
        ).require({"user_message", "contents"}, used_by="DefaultContentInjector")
        self.metadata_keys_to_include = list(metadata_keys_to_include or ())

    def inject(self, contents: Sequence[Content], chat_message: UserMessage) -> UserMessage:
        if not contents:
            return chat_message
        text = self.prompt_template.render(
            user_message=chat_message.text, contents=self.format_contents(contents)
        )
        return UserMessage(text, name=chat_message.name)

    def format_contents(self, contents: Sequence[Content]) -> str:
        """Every content formatted, separated by a blank line."""
        return "\n\n".join(self.format_content(content) for content in contents)

    def format_content(self, content: Content) -> str:
        """One content: its text, or ``content: ...`` plus the chosen metadata lines."""
        if not self.metadata_keys_to_include:
            return content.text
        metadata = content.text_segment.metadata
        lines = [f"content: {content.text}"]
        lines.extend(
            f"{key}: {metadata[key]}" for key in self.metadata_keys_to_include if key in metadata
        )
        return "\n".join(lines)
