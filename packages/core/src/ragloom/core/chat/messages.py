"""Chat messages: what a conversation with a chat model is made of.

The spec's kinds: :class:`SystemMessage` (instructions), :class:`UserMessage` (the user's
turn), :class:`AiMessage` (the model's answer, possibly requests to run tools) and
:class:`ToolExecutionResultMessage` (what a tool returned). Each is a small immutable
value with a ``role`` ("system", "user", "assistant", "tool" — the names chat APIs use on
the wire) and round-trips through :meth:`ChatMessage.to_dict` / :meth:`ChatMessage.from_dict`
so that a persistent :class:`~ragloom.core.chat.memory.ChatMemoryStore` can save it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ragloom.core.chat.tools import ToolExecutionRequest
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "Role",
    "ChatMessage",
    "SystemMessage",
    "UserMessage",
    "AiMessage",
    "ToolExecutionResultMessage",
]

Role = Literal["system", "user", "assistant", "tool"]


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

    def to_dict(self) -> dict[str, Any]:
        """``{"role": ..., "text": ...}`` plus the fields of the kind (a JSON-ready dict)."""
        return {"role": self.role, "text": self.text}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> ChatMessage:
        """The message :meth:`to_dict` produced; InvalidArgumentError for an unknown role."""
        role = data.get("role")
        text = data.get("text")
        if role == "user":
            return UserMessage(text, name=data.get("name"))  # type: ignore[arg-type]
        if role == "assistant":
            requests = tuple(
                ToolExecutionRequest(**request)
                for request in data.get("tool_execution_requests") or ()
            )
            return AiMessage(text, requests)  # type: ignore[arg-type]
        if role == "system":
            return SystemMessage(text)  # type: ignore[arg-type]
        if role == "tool":
            return ToolExecutionResultMessage(
                text,  # type: ignore[arg-type]
                id=data.get("id"),  # type: ignore[arg-type]
                tool_name=data.get("tool_name"),  # type: ignore[arg-type]
            )
        raise InvalidArgumentError(
            f"unknown chat message role {role!r}; expected system, user, assistant or tool"
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

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.name is not None:
            data["name"] = self.name
        return data


@dataclass(frozen=True, slots=True)
class AiMessage(ChatMessage):
    """The model's answer (role ``"assistant"``): text, and the tools it asks to run."""

    tool_execution_requests: tuple[ToolExecutionRequest, ...] = ()
    role: ClassVar[Role] = "assistant"

    def __post_init__(self) -> None:
        ChatMessage.__post_init__(self)
        requests = tuple(self.tool_execution_requests)
        for request in requests:
            if not isinstance(request, ToolExecutionRequest):
                raise InvalidArgumentTypeError(
                    f"AiMessage tool_execution_requests must hold ToolExecutionRequest, got "
                    f"{type(request).__name__}"
                )
        object.__setattr__(self, "tool_execution_requests", requests)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.tool_execution_requests:
            data["tool_execution_requests"] = [r.to_dict() for r in self.tool_execution_requests]
        return data


@dataclass(frozen=True, slots=True)
class ToolExecutionResultMessage(ChatMessage):
    """What tool ``tool_name`` returned for the request ``id`` (role ``"tool"``)."""

    id: str = field(kw_only=True)
    tool_name: str = field(kw_only=True)
    role: ClassVar[Role] = "tool"

    def __post_init__(self) -> None:
        ChatMessage.__post_init__(self)
        for attribute in ("id", "tool_name"):
            value = getattr(self, attribute)
            if not isinstance(value, str):
                raise InvalidArgumentTypeError(
                    f"ToolExecutionResultMessage {attribute} must be str, got "
                    f"{type(value).__name__}"
                )

    @classmethod
    def from_request(cls, request: ToolExecutionRequest, text: str) -> ToolExecutionResultMessage:
        """The result ``text`` of ``request``, paired with it by id."""
        return cls(text, id=request.id, tool_name=request.name)

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "text": self.text, "id": self.id, "tool_name": self.tool_name}
