"""ExtractiveAssistant: answers with the best passages when no chat model is configured."""

from __future__ import annotations

from collections.abc import Hashable

from ragloom.core import Content, ContentRetriever, Query, QueryMetadata
from ragloom.core.assistant import Result
from ragloom.core.chat.messages import UserMessage
from ragloom.core.errors import InvalidArgumentError

__all__ = [
    "NO_CHAT_MODEL",
    "describe_source",
    "ExtractiveAssistant",
]

NO_CHAT_MODEL = (
    "No chat model is configured (set RAGLOOM_CHAT_BASE_URL and RAGLOOM_CHAT_MODEL_NAME, or "
    "OPENAI_API_KEY), so here are the most relevant passages from your documents:"
)


def describe_source(content: Content) -> str:
    """``file.md, chars 10-420, score 0.81``: where a passage comes from."""
    meta = content.text_segment.metadata
    where = str(meta.get("file_name") or meta.get("url") or meta.get("document_id") or "?")
    if "start" in meta and "end" in meta:
        where += f", chars {meta['start']}-{meta['end']}"
    if content.score is not None:
        where += f", score {content.score:.3f}"
    return where


class ExtractiveAssistant:
    """Same ``chat`` interface as :class:`~ragloom.core.RagAssistant`, without a model.

    The answer lists the retrieved passages with their sources and says that no chat
    model is configured; ``Result.sources`` holds the contents.
    """

    def __init__(self, content_retriever: ContentRetriever) -> None:
        self.content_retriever = content_retriever

    def chat(self, message: str, memory_id: Hashable = None) -> Result:
        """Retrieve for ``message`` and return the passages as the answer."""
        if not message.strip():
            raise InvalidArgumentError("message must not be blank")
        metadata = QueryMetadata(UserMessage(message), memory_id)
        contents = self.content_retriever.retrieve(Query(message, metadata))
        if not contents:
            return Result("No chat model is configured and no passage matched.", [])
        lines = [NO_CHAT_MODEL, ""]
        for number, content in enumerate(contents, 1):
            lines.append(f"[{number}] ({describe_source(content)})")
            lines.append(content.text.strip())
            lines.append("")
        return Result("\n".join(lines).rstrip(), contents)
