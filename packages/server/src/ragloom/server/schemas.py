"""Request and response bodies of the HTTP API (pydantic: every field bounded)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
)

from ragloom.core import Content

__all__ = [
    "MAX_FILTER_CHARS",
    "MAX_METADATA_KEYS",
    "MAX_METADATA_VALUE_CHARS",
    "MAX_QUERY_CHARS",
    "RESERVED_METADATA",
    "UserMetadata",
    "user_metadata",
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
MAX_METADATA_KEYS = 32
MAX_METADATA_VALUE_CHARS = 1024
# Set by the server from the key and the upload; a client can neither set nor override them.
RESERVED_METADATA = frozenset({"tenant", "document_id", "file_name"})
_METADATA_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def _metadata_keys(metadata: dict[str, Any]) -> dict[str, Any]:
    for key in metadata:
        if not _METADATA_KEY.fullmatch(key):
            raise ValueError(
                f"key {key[:80]!r}: use 1-64 letters, digits, '_', '.', '-' (first a letter or '_')"
            )
        if key in RESERVED_METADATA:
            raise ValueError(f"key {key!r} is set by the server (from the API key and upload)")
    return metadata


MetadataValue = (
    Annotated[StrictStr, Field(max_length=MAX_METADATA_VALUE_CHARS)]
    | StrictBool
    | StrictInt
    | Annotated[StrictFloat, Field(allow_inf_nan=False)]
)
#: A client's own metadata on an upload: flat, typed scalars, bounded, no reserved key.
UserMetadata = Annotated[
    dict[str, MetadataValue],
    Field(max_length=MAX_METADATA_KEYS),
    AfterValidator(_metadata_keys),
]
_user_metadata: TypeAdapter[dict[str, str | bool | int | float]] = TypeAdapter(UserMetadata)


def user_metadata(raw: str | bytes) -> dict[str, str | bool | int | float]:
    """The metadata of a JSON object (a multipart ``metadata`` field); ``ValidationError``
    names what is wrong."""
    return _user_metadata.validate_json(raw)


class RetrieveRequest(BaseModel):
    """``POST /v1/retrieve``."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    max_results: int | None = Field(default=None, ge=1)
    min_score: float = Field(default=0.0, ge=0.0, le=1.0)
    filter: str | None = Field(default=None, max_length=MAX_FILTER_CHARS)
    mode: Literal["hybrid", "dense", "keyword"] = "hybrid"


class RagloomOptions(BaseModel):
    """The ``ragloom`` extension of a chat request (``extra_body={"ragloom": {...}}``);
    numbers strictly as its schema types them, as ``/v1/retrieve`` takes them."""

    model_config = ConfigDict(extra="forbid")

    max_results: StrictInt | None = Field(default=None, ge=1)
    min_score: StrictFloat = Field(default=0.0, ge=0.0, le=1.0)
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
    """``POST /v1/chat/completions``: the OpenAI fields ragloom reads; others are ignored.
    The numeric OpenAI fields are typed strictly (``"max_tokens": "5"`` is a 400 naming
    the field, as the schema says) and not applied: the server's assistant answers with
    its own configuration."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=128)
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=200)
    stream: StrictBool = False
    user: str | None = Field(default=None, min_length=1, max_length=128)
    ragloom: RagloomOptions = Field(default_factory=RagloomOptions)
    max_tokens: StrictInt | None = None
    max_completion_tokens: StrictInt | None = None
    n: StrictInt | None = None
    seed: StrictInt | None = None
    temperature: StrictFloat | None = None
    top_p: StrictFloat | None = None
    presence_penalty: StrictFloat | None = None
    frequency_penalty: StrictFloat | None = None


class TextUpload(BaseModel):
    """``POST /v1/documents`` with a JSON body: one text document."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=256)
    text: str = Field(min_length=1)
    metadata: UserMetadata = Field(default_factory=dict)


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
