"""The compiled regexes that find unit boundaries (all scanning happens in C).

``re`` finds a pattern that starts with a literal character (``\\n``) at memchr speed,
but tries a pattern that starts with a character class one character at a time, several
times slower. Texts whose only line breaks are ``\\n`` and ``\\r\\n`` (almost all of
them) therefore use ``\\n``-anchored patterns; the others get patterns that know every
line break Java's ``\\R`` knows.
"""

from __future__ import annotations

import re

__all__ = [
    "plain_breaks",
    "PARAGRAPH_BREAK",
    "LINE_BREAK",
    "SPACE_RUN",
    "NON_SPACE",
    "WORD_START",
    "JOINING",
    "NEVER_FINAL",
    "MAYBE_FINAL",
    "SENTENCE_BOUNDARY",
    "BOUNDARY_FIRST",
    "WINDOW_END",
]

_BREAKS = "\n\r\x0b\x0c\x85\u2028\u2029"
_OTHER_BREAKS = "\x0b\x0c\x85\u2028\u2029"


def plain_breaks(text: str) -> bool:
    """Whether every line break in ``text`` is ``\\n`` or ``\\r\\n``."""
    if any(c in text for c in _OTHER_BREAKS):
        return False
    return "\r" not in text or text.count("\r") == text.count("\r\n")


# Two or more line breaks with whitespace between and after them; then any line break
# and the whitespace after it. Index 1: for texts with plain breaks (fast), 0: any text.
PARAGRAPH_BREAK = (
    re.compile(rf"[{_BREAKS}](?:(?<=\r)\n)?+[^\S{_BREAKS}]*+[{_BREAKS}]\s*+"),
    re.compile(r"\n[^\S\n]*+\n\s*+"),
)
LINE_BREAK = (re.compile(rf"[{_BREAKS}]\s*+"), re.compile(r"\n\s*+"))

#: A run of whitespace (word separator).
SPACE_RUN = re.compile(r"\s+")

#: The first non-whitespace character.
NON_SPACE = re.compile(r"\S")

#: A word start (non-whitespace after whitespace), matched from one character before it.
WORD_START = re.compile(r"\s\S")

# --- sentence boundaries (heuristics documented in ragloom.core.splitters.sentence) ---

_TERMINATORS = ".?!\u2026\u061f\u0964\u0965\u3002\uff01\uff1f\uff61\u203c\u2047\u2048\u2049"
_STRONG = "?!\u061f\u0964\u0965\u203c\u2047\u2048\u2049"  # ? ! and their relatives
_CJK = "\u3002\uff01\uff1f\uff61"  # ideographic full stop, fullwidth ! ?, halfwidth full stop
_CLOSERS = (
    "\"'\u201d\u2019\u00bb\u203a)\\]}"
    "\u300d\u300f\uff09\u3011\u3009\u300b\u3015\u3017\u3019\u301b\uff63"
)
#: Characters that make a junction between units other than whitespace to a tokenizer:
#: whitespace that tokenizers delete (BERT drops control characters, joining the words
#: around them) and ideographic sentence ends, which need no whitespace after them.
JOINING = "\x0b\x0c\x1c\x1d\x1e\x1f\x85" + _CJK
# A next word starting like this continues the sentence after ?, !, ... or some abbreviations.
_LOWER = r"[a-z0-9\u00df-\u00f6\u00f8-\u00ff]"

#: Abbreviations never followed by a sentence break (titles, "vs.", "cf.").
NEVER_FINAL = (  # noqa: SIM905 - a word list reads better as words
    "mr mrs ms mx dr prof st mt ft rev gen col capt lt sgt cmdr adm gov sen rep hon "
    "pres supt messrs mme mlle vs cf viz"
).split()
#: Abbreviations that end a sentence only when the next word is not lowercase or a number.
MAYBE_FINAL = (  # noqa: SIM905 - a word list reads better as words
    "etc inc ltd co corp jr sr bros no nos vol vols fig figs pp eq eqs ch sec art "
    "dept univ approx ca est al ed eds op jan feb mar apr jun jul aug sep sept oct "
    "nov dec mon tue tues wed thu thur thurs fri sat sun"
).split()


def _by_length(words: list[str]) -> list[str]:
    """Alternations of equal-length words (a look-behind must have a fixed width)."""
    return [
        "|".join(sorted(w for w in words if len(w) == n)) for n in sorted({len(w) for w in words})
    ]


_NOT_NEVER = "".join(rf"(?<!\b(?i:{alt})\.)" for alt in _by_length(NEVER_FINAL))
_IS_MAYBE = "|".join(rf"(?<=\b(?i:{alt})\.)" for alt in _by_length(MAYBE_FINAL))
# A lone letter after whitespace, a period or an opening bracket or quote, not after an
# apostrophe (so "Mary's." still ends a sentence): "J. R. R. Tolkien", "e.g.", "U.S.".
_NOT_INITIAL = r"(?<![\s.(\[{\"\u201c\u2018\u00ab][^\W\d_]\.)(?<!^[^\W\d_]\.)"


def _sentence_boundary(breaks: str) -> re.Pattern[str]:
    return re.compile(
        rf"[{_TERMINATORS}{breaks}](?<![{_TERMINATORS}][{_TERMINATORS}])"
        r"(?:"
        # ? ! (and runs like ?!): a break unless a lowercase word follows.
        rf"(?<=[{_STRONG}])[{_TERMINATORS}]*+(?=[{_CLOSERS}]*+\s++(?!{_LOWER}))"
        # Ideographic punctuation: always a break, whitespace optional.
        rf"|(?<=[{_CJK}])[{_TERMINATORS}]*+"
        # Ellipsis (... or …): a break unless a lowercase word follows.
        rf"|(?:(?<=\u2026)|(?<=\.)(?=\.))[{_TERMINATORS}]*+(?=[{_CLOSERS}]*+\s++(?!{_LOWER}))"
        # A single period: not after an initial or a title; some abbreviations need more.
        # (The cheap look-aheads come before the look-behinds that try every abbreviation:
        # zero-width assertions at one position commute, and most periods fail early.)
        rf"|(?<=\.)(?![{_TERMINATORS}])(?=[{_CLOSERS}]*+\s){_NOT_INITIAL}{_NOT_NEVER}"
        rf"(?!(?=[{_CLOSERS}]*+\s++{_LOWER})(?:{_IS_MAYBE}))"
        # A blank line ends a sentence too.
        rf"|(?<=[{breaks}])(?=(?:(?<=\r)\n)?+[^\S{breaks}]*+[{breaks}])"
        rf")[{_CLOSERS}]*+(\s*+)"
    )


#: A sentence boundary: group 1 is the whitespace between the two sentences (empty
#: after ideographic punctuation); the previous sentence ends where it starts.
SENTENCE_BOUNDARY = (_sentence_boundary(_BREAKS), _sentence_boundary("\n"))
#: The characters a sentence boundary can begin with (the class that opens the regex).
BOUNDARY_FIRST = (_TERMINATORS + _BREAKS, _TERMINATORS + "\n")

#: A character no unit boundary can begin with or take in, nor look past: a scan of a
#: window ending just after one finds the same boundaries before it as a scan of the
#: whole text (the boundaries all begin with whitespace or a terminator and consume or
#: look ahead through whitespace, terminators and closers only).
WINDOW_END = re.compile(rf"[^\s{_TERMINATORS}{_CLOSERS}]")
