"""Tokenizer: how splitters measure text in tokens instead of characters.

A :class:`Tokenizer` only has to count. Two optional extras make splitting fast:

- ``count_tokens_batch(texts) -> list[int]``: splitters count many pieces in one call,
  which is what makes real tokenizers (Rust, multi-threaded) fast.
- ``splits_on_whitespace: bool``: ``True`` promises that no token spans whitespace and
  whitespace itself counts nothing, so that the count of a text is the sum of the
  counts of its whitespace-separated parts (BERT's WordPiece, ``Whitespace``
  pre-tokenizers). Splitters then add up unit counts exactly and only count overlaps
  again, instead of recounting every segment.
- ``cuts(text, lo, hi) -> list[int]``: positions in ``text[lo:hi]`` where the count of
  any span across them is the sum of the counts of its two sides (where the
  pre-tokenizer always splits). Splitters count long spans without whitespace (base64,
  CSV, minified code) piece by piece with it.

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
    pre-tokenizer and normalizer (true for BERT-style tokenizers); so is where counts
    add up without whitespace (see :meth:`cuts`).
    """

    __slots__ = ("_added", "_cut", "_encode_batch", "splits_on_whitespace")

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
        self._cut, self._added = _cut_patterns(tokenizer, self.splits_on_whitespace)

    @classmethod
    def from_file(cls, path: str) -> HuggingFaceTokenizer:
        """Load a ``tokenizer.json`` (needs the ``tokenizers`` package, imported here)."""
        from tokenizers import Tokenizer as _HfTokenizer

        return cls(_HfTokenizer.from_file(path))

    def count_tokens(self, text: str) -> int:
        """The number of tokens in ``text``, special tokens excluded."""
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``, encoded in (parallel) calls of about 128 kB each.

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

    def cuts(self, text: str, lo: int, hi: int) -> list[int]:
        """The positions ``p`` with ``lo < p < hi`` where the count of any span of ``text``
        across ``p`` is the sum of the counts of its parts before and after ``p``.

        They are ends of whitespace ahead of a non-space, and (for the BERT and
        ``Whitespace`` pre-tokenizers) junctions of an ASCII letter or digit with ASCII
        punctuation: the pre-tokenizer always splits there, and the normalizer maps both
        characters on their own. None lies inside (a case-insensitive match of) an added
        token, which is matched before pre-tokenizing. ``[]`` when counts never add up.
        """
        if self._cut is None:
            return []
        found = [m.end() for m in self._cut.finditer(text, lo, hi)]
        if self._added is not None and found:
            reach = self._added[1]
            spans = [
                (m.start(), m.start() + len(m.group(1)))
                for m in self._added[0].finditer(text, max(lo - reach, 0), hi + reach)
            ]
            found = [p for p in found if not any(a < p < b for a, b in spans)]
        return found

    def _pieces(self, text: str) -> Iterator[str]:
        """``text``, or when long and counts add up across :meth:`cuts`, slices of about
        ``_PIECE_CHARS`` characters cut at them."""
        if len(text) <= _PIECE_CHARS or self._cut is None:
            yield text
            return
        start = 0
        while len(text) - start > _PIECE_CHARS:
            cut = self._next_cut(text, start + _PIECE_CHARS)
            if cut is None:
                break
            yield text[start:cut]
            start = cut
        yield text[start:]

    def _next_cut(self, text: str, pos: int) -> int | None:
        """The first of :meth:`cuts` after ``pos``, if any."""
        while True:
            found = self.cuts(text, pos, min(pos + _CUT_SCAN, len(text)))
            if found:
                return found[0]
            if pos + _CUT_SCAN >= len(text):
                return None
            pos += _CUT_SCAN - 1


# Characters encoded per call: an encoding takes some 100 bytes per character (of
# base64, say), so a call takes about 13 MB at most.
_BATCH_CHARS = 1 << 17
_PIECE_CHARS = 1 << 16  # longer texts are cut (when counts add up, see ``cuts``)
_CUT_SCAN = 1 << 12  # characters searched for a cut at a time

# Where counts add up: after whitespace ahead of a non-space (only the whitespace that
# BERT's normalizer keeps: it deletes other control characters, joining the words around
# them), and, for pre-tokenizers that split off punctuation, at a junction of an ASCII
# letter or digit with ASCII punctuation other than "_" (a word character for
# ``Whitespace``'s ``\w+|[^\w\s]+``); each match ends at the cut.
_SPACE_CUT = r"[ \t\n\r](?=[^ \t\n\r])"
_PUNCTUATION = r"!-/:-@\[-^`{-~"
_PUNCTUATION_CUT = rf"|[A-Za-z0-9](?=[{_PUNCTUATION}])|[{_PUNCTUATION}](?=[A-Za-z0-9])"
_PUNCTUATION_PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace"})

# Pre-tokenizers that cut at whitespace and drop it, and normalizers that never join
# words (BERT's removes control characters; splitters check texts for those).
_WHITESPACE_PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})
_SAFE_NORMALIZERS = frozenset(
    {"NoneType", "BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents"}
)


def _cut_patterns(
    tokenizer: Any, splits_on_whitespace: bool
) -> tuple[re.Pattern[str] | None, tuple[re.Pattern[str], int] | None]:
    """The pattern of :meth:`HuggingFaceTokenizer.cuts`, and one finding (overlapping,
    case-insensitive) occurrences of the added tokens with their longest length."""
    if not splits_on_whitespace:
        return None, None
    added = [
        str(getattr(t, "content", t))
        for t in getattr(tokenizer, "get_added_tokens_decoder", dict)().values()
    ]
    pre_tokenizer = type(getattr(tokenizer, "pre_tokenizer", None)).__name__
    # A non-ASCII added token may match only after normalization: cut at whitespace only.
    punctuation = pre_tokenizer in _PUNCTUATION_PRE_TOKENIZERS and all(a.isascii() for a in added)
    cut = re.compile(_SPACE_CUT + (_PUNCTUATION_CUT if punctuation else ""))
    if not added:
        return cut, None
    alternatives = "|".join(re.escape(a) for a in sorted(added, key=len, reverse=True))
    return cut, (re.compile(f"(?=({alternatives}))", re.IGNORECASE), max(map(len, added)))


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
