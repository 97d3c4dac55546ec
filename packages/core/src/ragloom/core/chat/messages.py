"""Chat messages: what a conversation with a chat model is made of.

Three kinds, as in the spec: :class:`SystemMessage` (instructions), :class:`UserMessage`
(the user's turn) and :class:`AiMessage` (the model's answer). Each is a small immutable
value with a ``role`` ("system", "user", "assistant" — the names chat APIs use on the
wire) and round-trips through :meth:`ChatMessage.to_dict` / :meth:`ChatMessage.from_dict`
so that a persistent :class:`~ragloom.core.chat.memory.ChatMemoryStore` can save it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "Role",
    "ChatMessage",
    "SystemMessage",
    "UserMessage",
    "AiMessage",
]

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """Base of the three message kinds; not instantiated directly."""

    text: str
    role: ClassVar[Role]

    def __post_init__(self) -> None:
        if type(self) is ChatMessage:
            raise InvalidArgumentTypeError(
                "ChatMessage is abstract; use SystemMessage, UserMessage or AiMessage"
            )
        if not isinstance(self.text, str):
            raise InvalidArgumentTypeError(
                f"{type(self).__name__} text must be str, got {type(self.text).__name__}"
            )

    def to_dict(self) -> dict[str, str]:
        """``{"role": ..., "text": ...}`` (plus ``"name"`` for a named user message)."""
        return {"role": self.role, "text": self.text}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> ChatMessage:
        """The message :meth:`to_dict` produced; InvalidArgumentError for an unknown role."""
        role = data.get("role")
        text = data.get("text")
        if role == "user":
            return UserMessage(text, name=data.get("name"))  # type: ignore[arg-type]
        if role == "assistant":
            return AiMessage(text)  # type: ignore[arg-type]
        if role == "system":
            return SystemMessage(text)  # type: ignore[arg-type]
        raise InvalidArgumentError(
            f"unknown chat message role {role!r}; expected system, user or assistant"
        )


@dataclass(frozen=True, slots=True)
class SystemMessage(ChatMessage):
    """Instructions for the model; a chat memory keeps at most one, first."""

    role: ClassVar[Role] = "system"


@dataclass(frozen=True, slots=True)
class UserMessage(ChatMessage):
    """The user's turn; ``name`` optionally tells users apart in a shared conversation."""

    name: str | None = None
    role: ClassVar[Role] = "user"

    def __post_init__(self) -> None:
        ChatMessage.__post_init__(self)  # explicit: zero-arg super() breaks in slotted dataclasses
        if self.name is not None and not isinstance(self.name, str):
            raise InvalidArgumentTypeError(
                f"UserMessage name must be str or None, got {type(self.name).__name__}"
            )

    def to_dict(self) -> dict[str, str]:
        data = {"role": self.role, "text": self.text}
        if self.name is not None:
            data["name"] = self.name
        return data


@dataclass(frozen=True, slots=True)
class AiMessage(ChatMessage):
    """The model's answer (role ``"assistant"``)."""

    role: ClassVar[Role] = "assistant"
