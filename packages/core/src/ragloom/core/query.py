"""Query: the user's question as it flows through the retrieval pipeline."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from ragloom.core.chat.messages import ChatMessage, UserMessage
from ragloom.core.errors import InvalidArgumentTypeError

__all__ = [
    "QueryMetadata",
    "Query",
]


@dataclass(frozen=True, slots=True)
class QueryMetadata:
    """What retrieval components may need besides the text (the spec's ``Query.metadata``).

    ``user_message`` is the original message to augment; ``chat_memory_id`` identifies the
    user/conversation (e.g. to apply access filters); ``chat_memory`` holds the previous
    messages, for query compression.
    """

    user_message: UserMessage | None = None
    chat_memory_id: Hashable = None
    chat_memory: Sequence[ChatMessage] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Query:
    """A query text plus :class:`QueryMetadata` (empty by default)."""

    text: str
    metadata: QueryMetadata = field(default_factory=QueryMetadata)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise InvalidArgumentTypeError(
                f"Query text must be str, got {type(self.text).__name__}"
            )

    @classmethod
    def from_text(cls, text: str, metadata: QueryMetadata | None = None) -> Query:
        """The spec's ``Query.from(text[, metadata])``."""
        return cls(text, metadata or QueryMetadata())
