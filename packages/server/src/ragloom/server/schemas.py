"""Request and response bodies of the HTTP API (pydantic: every field bounded)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragloom.core import Content

__all__ = [
    "MAX_FILTER_CHARS",
    "MAX_QUERY_CHARS",
    "RetrieveRequest",
    "RagloomOptions",
    "TextPart",
    "ChatMessageIn",
    "ChatRequest",
    "TextUpload",
    "citation",
]

MAX_QUERY_CHARS = 4000
MAX_FILTER_CHARS = 2000


class RetrieveRequest(BaseModel):
    """``POST /v1/retrieve``."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    max_results: int | None = Field(default=None, ge=1)
    min_score: float = Field(default=0.0, ge=0.0, le=1.0)
    filter: str | None = Field(default=None, max_length=MAX_FILTER_CHARS)
    mode: Literal["hybrid", "dense", "keyword"] = "hybrid"


class RagloomOptions(BaseModel):
    """The ``ragloom`` extension of a chat request (``extra_body={"ragloom": {...}}``)."""

    model_config = ConfigDict(extra="forbid")

    max_results: int | None = Field(default=None, ge=1)
    min_score: float = Field(default=0.0, ge=0.0, le=1.0)
    filter: str | None = Field(default=None, max_length=MAX_FILTER_CHARS)


class TextPart(BaseModel):
    """One part of a message's content list; only text parts are read."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(max_length=32)
    text: str | None = Field(default=None, max_length=MAX_QUERY_CHARS * 4)


class ChatMessageIn(BaseModel):
    """One OpenAI chat message."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = Field(default=None)

    def text(self) -> str:
        """The message's text (text parts joined)."""
        if isinstance(self.content, str):
            return self.content
        if self.content is None:
            return ""
        return "".join(part.text or "" for part in self.content if part.type == "text")


class ChatRequest(BaseModel):
    """``POST /v1/chat/completions``: the OpenAI fields ragloom reads; others are ignored."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=128)
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=200)
    stream: bool = False
    user: str | None = Field(default=None, min_length=1, max_length=128)
    ragloom: RagloomOptions = Field(default_factory=RagloomOptions)


class TextUpload(BaseModel):
    """``POST /v1/documents`` with a JSON body: one text document."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=256)
    text: str = Field(min_length=1)


def citation(number: int, content: Content) -> dict[str, Any]:
    """A retrieved passage as the API returns it: text, score, where it comes from."""
    meta = content.text_segment.metadata
    page = meta.get("page_number")
    return {
        "index": number,
        "text": content.text,
        "score": content.score,
        "source": meta.get("file_name") or meta.get("url") or meta.get("document_id"),
        "document_id": meta.get("document_id"),
        "start": meta.get("start"),
        "end": meta.get("end"),
        "page": page,
        "metadata": {
            k: v if isinstance(v, (str, int, float, bool)) else str(v)
            for k, v in meta.to_dict().items()
        },
    }
