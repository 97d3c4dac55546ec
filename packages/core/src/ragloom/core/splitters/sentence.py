"""DocumentBySentenceSplitter: packs sentences into segments, found without NLP models.

Sentences are found by one regular expression (``_patterns.SENTENCE_BOUNDARY``) with
these heuristics instead of the spec's OpenNLP model:

- A sentence ends after ``.``, ``?``, ``!``, an ellipsis (``...`` or ``…``) or a run of
  them (``?!``), followed by optional closing quotes or brackets (``."``, ``?)``, ``.»``)
  and then whitespace. A period without whitespace after it never ends a sentence, which
  keeps decimal numbers (``3.14``), versions (``v2.0``), domains and ``e.g.x`` intact.
- The ideographic full stop and the fullwidth ``?`` and ``!`` end a sentence even with
  no whitespace after them (CJK text).
  ``؟`` and the Devanagari danda ``।`` work like ``?``.
- A period after a single letter is an initial or part of an abbreviation, not an end:
  ``J. R. R. Tolkien``, ``e.g.``, ``i.e.``, ``U.S.``, ``a.m.``. (So "Plan B. Then" is one
  sentence.)
- A period after a title or similar (``Mr.``, ``Mrs.``, ``Dr.``, ``Prof.``, ``St.``,
  ``Gen.``, ``vs.``, ``cf.``, ... see ``NEVER_FINAL``) never ends a sentence.
- A period after an abbreviation that may end one (``etc.``, ``Inc.``, ``Ltd.``, ``No.``,
  ``Fig.``, ``Jan.``, ... see ``MAYBE_FINAL``), and ``?``, ``!`` or an ellipsis, end a
  sentence unless the next word starts with a lowercase letter or a digit:
  ``etc. The`` is a boundary, ``etc. and`` and ``No. 7`` are not.
- A blank line always ends a sentence (a heading without a period, say).
Abbreviations match case-insensitively; everything else is Unicode-aware.
"""

from __future__ import annotations

from ragloom.core.splitters._hierarchical import HierarchicalSplitter
from ragloom.core.splitters._text import Source, sentence_units
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.splitters.word import DocumentByWordSplitter

__all__ = [
    "DocumentBySentenceSplitter",
]


class DocumentBySentenceSplitter(HierarchicalSplitter):
    """Packs as many sentences as fit into each segment; a sentence too long for a
    segment goes to ``sub_splitter`` (default: words)."""

    _units_are_sentences = True

    def _default_sub_splitter(self) -> DocumentSplitter:
        return DocumentByWordSplitter(self.max_segment_size, self.max_overlap, self.tokenizer)

    def _units(self, source: Source, lo: int, hi: int) -> tuple[list[int], list[int]]:
        return sentence_units(source, lo, hi)
