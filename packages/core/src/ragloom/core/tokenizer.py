"""Tokenizer: how splitters measure text in tokens instead of characters.

A :class:`Tokenizer` only has to count. Two optional extras make splitting fast:

- ``count_tokens_batch(texts) -> list[int]``: splitters count many pieces in one call,
  which is what makes real tokenizers (Rust, multi-threaded) fast.
- ``splits_on_whitespace: bool``: ``True`` promises that no token spans whitespace and
  whitespace itself counts nothing, so that the count of a text is the sum of the
  counts of its whitespace-separated parts (BERT's WordPiece, ``Whitespace``
  pre-tokenizers). Splitters then add up unit counts exactly and only count overlaps
  again, instead of recounting every segment.

:class:`HuggingFaceTokenizer` adapts a Hugging Face ``tokenizers.Tokenizer`` by duck
typing, so core never imports ``tokenizers``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Tokenizer",
    "count_tokens_batch",
    "HuggingFaceTokenizer",
]


@runtime_checkable
class Tokenizer(Protocol):
    """Counts the tokens of a text (the spec's ``TokenCountEstimator``).

    Implementations may also define ``count_tokens_batch(texts: Sequence[str]) ->
    list[int]`` and ``splits_on_whitespace`` (see the module documentation).
    """

    def count_tokens(self, text: str) -> int:
        """The number of tokens in ``text``."""
        ...


def count_tokens_batch(tokenizer: Tokenizer, texts: Sequence[str]) -> list[int]:
    """Count every text, in one call when ``tokenizer`` has ``count_tokens_batch``."""
    batch = getattr(tokenizer, "count_tokens_batch", None)
    if batch is not None:
        counts: list[int] = batch(texts)
        return counts
    return [tokenizer.count_tokens(text) for text in texts]


class HuggingFaceTokenizer:
    """A :class:`Tokenizer` over a Hugging Face ``tokenizers.Tokenizer``-like object.

    The object needs ``encode_batch(texts, add_special_tokens=False)`` returning
    encodings with ``.ids``. Special tokens are not counted. If the tokenizer truncates
    or pads (as ``tokenizer.json`` files for embedding models often do), counts would be
    capped or inflated, so a private copy with both turned off is used; the caller's
    object is left as it is. ``splits_on_whitespace`` is worked out from the
    pre-tokenizer and normalizer (true for BERT-style tokenizers).
    """

    __slots__ = ("_encode_batch", "splits_on_whitespace")

    def __init__(self, tokenizer: Any) -> None:
        if getattr(tokenizer, "truncation", None) or getattr(tokenizer, "padding", None):
            tokenizer = type(tokenizer).from_str(tokenizer.to_str())
            tokenizer.no_truncation()
            tokenizer.no_padding()
        # encode_batch_fast (tokenizers >= 0.20) skips computing character offsets.
        self._encode_batch = getattr(tokenizer, "encode_batch_fast", None) or (
            tokenizer.encode_batch
        )
        self.splits_on_whitespace = _splits_on_whitespace(tokenizer)

    @classmethod
    def from_file(cls, path: str) -> HuggingFaceTokenizer:
        """Load a ``tokenizer.json`` (needs the ``tokenizers`` package, imported here)."""
        from tokenizers import Tokenizer as _HfTokenizer

        return cls(_HfTokenizer.from_file(path))

    def count_tokens(self, text: str) -> int:
        """The number of tokens in ``text``, special tokens excluded."""
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``, encoded in (parallel) calls of about 1 MB each.

        An encoding costs far more memory than its text (ids, offsets, masks per token),
        so a huge batch, or one 50 MB line, is encoded a bounded slice at a time; a long
        text is cut at whitespace when tokens never span it (the counts add up exactly).
        """
        counts = [0] * len(texts)
        group: list[str] = []
        owners: list[int] = []
        size = 0
        for owner, text in enumerate(texts):
            for piece in self._pieces(text):
                group.append(piece)
                owners.append(owner)
                size += len(piece)
                if size >= _BATCH_CHARS:
                    self._count_into(counts, group, owners)
                    group, owners, size = [], [], 0
        if group:
            self._count_into(counts, group, owners)
        return counts

    def _count_into(self, counts: list[int], group: list[str], owners: list[int]) -> None:
        encodings = self._encode_batch(group, add_special_tokens=False)
        sized = bool(encodings) and hasattr(encodings[0], "__len__")  # no copy of the ids
        for owner, encoding in zip(owners, encodings, strict=True):
            counts[owner] += len(encoding) if sized else len(encoding.ids)

    def _pieces(self, text: str) -> Iterator[str]:
        """``text``, or when long and tokens never span whitespace, slices of it cut
        just after whitespace (a word is never cut)."""
        if len(text) <= _PIECE_CHARS or not self.splits_on_whitespace:
            yield text
            return
        start = 0
        while len(text) - start > _PIECE_CHARS:
            cut = _NEXT_SPACE.search(text, start + _PIECE_CHARS)
            if cut is None:
                break
            yield text[start : cut.end()]
            start = cut.end()
        yield text[start:]


_BATCH_CHARS = 1 << 20  # characters encoded per call
_PIECE_CHARS = 1 << 16  # longer texts are cut at whitespace (when counts are additive)
_NEXT_SPACE = re.compile(r"\s")

# Pre-tokenizers that cut at whitespace and drop it, and normalizers that never join
# words (BERT's removes control characters; splitters check texts for those).
_WHITESPACE_PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})
_SAFE_NORMALIZERS = frozenset(
    {"NoneType", "BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents"}
)


def _splits_on_whitespace(tokenizer: Any) -> bool:
    """Whether a Hugging Face tokenizer's tokens never span whitespace."""
    pre_tokenizer = type(getattr(tokenizer, "pre_tokenizer", None)).__name__
    normalizer = type(getattr(tokenizer, "normalizer", None)).__name__
    added: Iterable[Any] = getattr(tokenizer, "get_added_tokens_decoder", dict)().values()
    return (
        pre_tokenizer in _WHITESPACE_PRE_TOKENIZERS
        and normalizer in _SAFE_NORMALIZERS
        and not any(any(c.isspace() for c in str(getattr(t, "content", t))) for t in added)
    )
