"""Analyzers: how text becomes the terms a keyword index counts.

An :class:`Analyzer` has two steps, split so that an index runs the costly one once per
distinct word instead of once per occurrence:

* ``tokenize(text)`` cuts a text into surface tokens (the one per-document step; the
  default is a single compiled-regex ``findall``);
* ``normalize(token)`` maps one surface token to its term (lowercased, stemmed, ...) or to
  ``None`` to drop it (a stopword). It must be a pure function of the token: indexes cache
  its result per distinct surface token.

:class:`StandardAnalyzer` is the default: Unicode word tokens, lowercase, English
possessive ``'s`` removed, one-character terms and the Snowball English stopwords dropped,
English Snowball stemming (PyStemmer). These defaults are the best configuration measured
on the evaluation sets of ``docs/evaluation.md`` (stemming +0.03 nDCG@10, the larger
stopword list +0.02, dropping one-character terms +0.002 on CISI). For another language
pass its stopwords and its Snowball language name (or any ``str -> str`` stemmer); a
saved index keeps the analyzer configuration it was built with.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "ENGLISH_STOPWORDS",
    "LUCENE_STOPWORDS",
    "Analyzer",
    "StandardAnalyzer",
    "analyze",
    "snowball_stemmer",
]

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    "a about above after again against ain all am an and any are aren aren't as at be "  # noqa: SIM905
    "because been before being below between both but by can couldn couldn't d did didn "
    "didn't do does doesn doesn't doing don don't down during each few for from further "
    "had hadn hadn't has hasn hasn't have haven haven't having he her here hers herself "
    "him himself his how i if in into is isn isn't it it's its itself just ll m ma me "
    "mightn mightn't more most mustn mustn't my myself needn needn't no nor not now o of "
    "off on once only or other our ours ourselves out over own re s same shan shan't she "
    "she's should should've shouldn shouldn't so some such t than that that'll the their "
    "theirs them themselves then there these they this those through to too under until "
    "up ve very was wasn wasn't we were weren weren't what when where which while who "
    "whom why will with won won't wouldn wouldn't y you you'd you'll you're you've your "
    "yours yourself yourselves".split()
)
"""The Snowball English stopword list as NLTK ships it (179 function words, contractions
included): the default; it beat Lucene's 33 words by +0.01 to +0.02 nDCG@10."""

LUCENE_STOPWORDS: frozenset[str] = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "  # noqa: SIM905
    "then there these they this to was will with".split()
)
"""Lucene's classic English stopword list (33 words): the default before stemming and
the larger list were measured better; what bm25s and Lucene use."""

# Word characters, kept together across an inner apostrophe or period as Unicode word
# boundaries (UAX #29) do: "don't", "e.g", "3.14", "v1.2", "example.com" are one token each.
WORD_PATTERN = r"\w+(?:['\u2019.]\w+)*"
_POSSESSIVE = re.compile(r"['\u2019]s$")


@runtime_checkable
class Analyzer(Protocol):
    """Turns text into index terms: ``tokenize`` then ``normalize`` each token."""

    def tokenize(self, text: str) -> list[str]:
        """The surface tokens of ``text``, in order."""
        ...

    def normalize(self, token: str) -> str | None:
        """The term for one surface token, or ``None`` to drop it; must be pure."""
        ...


def analyze(analyzer: Analyzer, text: str) -> list[str]:
    """The terms of ``text`` under ``analyzer``, in order (what an index counts)."""
    terms = map(analyzer.normalize, analyzer.tokenize(text))
    return [term for term in terms if term is not None]


def snowball_stemmer(language: str = "english") -> Callable[[str], str]:
    """A Snowball stemmer for ``language`` (a PyStemmer algorithm name, e.g. ``"german"``)."""
    import Stemmer  # type: ignore[import-not-found,unused-ignore]  # PyStemmer: no stubs

    try:
        stemmer = Stemmer.Stemmer(language)
    except (KeyError, TypeError) as exc:
        raise InvalidArgumentError(
            f"PyStemmer has no stemmer for {language!r}; "
            f"available: {', '.join(Stemmer.algorithms())}"
        ) from exc
    stem: Callable[[str], str] = stemmer.stemWord
    return stem


class StandardAnalyzer:
    """Unicode word tokens, lowercased, possessive ``'s`` stripped, stopwords dropped, stemmed.

    ``stemmer`` is a Snowball language name (default ``"english"``; PyStemmer), any
    ``str -> str`` function, or ``None`` for no stemming. ``min_length`` drops shorter
    terms (default 2: one-character terms such as a stray ``x`` only add noise).
    ``StandardAnalyzer(stopwords=LUCENE_STOPWORDS, stemmer=None, min_length=1)`` is the
    earlier default (and bm25s' default analysis).
    """

    __slots__ = ("_findall", "_stem", "min_length", "pattern", "stemmer", "stopwords")

    def __init__(
        self,
        *,
        stopwords: Iterable[str] = ENGLISH_STOPWORDS,
        stemmer: str | Callable[[str], str] | None = "english",
        pattern: str = WORD_PATTERN,
        min_length: int = 2,
    ) -> None:
        if isinstance(stopwords, str):
            raise InvalidArgumentTypeError("stopwords must be a collection of words, not one str")
        if type(min_length) is not int or min_length < 1:
            raise InvalidArgumentError(f"min_length must be a positive int, got {min_length!r}")
        self.stopwords = frozenset(word.lower() for word in stopwords)
        self.stemmer = stemmer
        self.pattern = pattern
        self.min_length = min_length
        self._findall = re.compile(pattern).findall
        self._stem = snowball_stemmer(stemmer) if isinstance(stemmer, str) else stemmer

    def tokenize(self, text: str) -> list[str]:
        """The word tokens of ``text`` (one compiled-regex ``findall``)."""
        tokens: list[str] = self._findall(text)
        return tokens

    def normalize(self, token: str) -> str | None:
        """``token`` lowercased, without a possessive ``'s``, stemmed; ``None`` if a stopword."""
        term = _POSSESSIVE.sub("", token.lower())
        if term in self.stopwords or len(term) < self.min_length:
            return None
        if self._stem is not None:
            term = self._stem(term)
        return term

    def analyze(self, text: str) -> list[str]:
        """The terms of ``text``, in order."""
        return analyze(self, text)

    def config(self) -> dict[str, Any] | None:
        """A JSON description that rebuilds this analyzer, or ``None`` with a custom stemmer."""
        if self.stemmer is not None and not isinstance(self.stemmer, str):
            return None
        return {
            "type": "standard",
            "stopwords": sorted(self.stopwords),
            "stemmer": self.stemmer,
            "pattern": self.pattern,
            "min_length": self.min_length,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> StandardAnalyzer:
        """The analyzer described by :meth:`config`."""
        return cls(
            stopwords=config["stopwords"],
            stemmer=config["stemmer"],
            pattern=config["pattern"],
            min_length=config["min_length"],
        )

    def __repr__(self) -> str:
        return (
            f"StandardAnalyzer(stopwords={len(self.stopwords)} words, "
            f"stemmer={self.stemmer!r}, min_length={self.min_length})"
        )
