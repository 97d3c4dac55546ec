"""Document splitters: cut documents into segments that fit an embedding model."""

from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.splitters.character import DocumentByCharacterSplitter
from ragloom.core.splitters.line import DocumentByLineSplitter
from ragloom.core.splitters.paragraph import DocumentByParagraphSplitter
from ragloom.core.splitters.recursive import RecursiveDocumentSplitter
from ragloom.core.splitters.regex import DocumentByRegexSplitter
from ragloom.core.splitters.sentence import DocumentBySentenceSplitter
from ragloom.core.splitters.word import DocumentByWordSplitter

__all__ = [
    "DocumentByCharacterSplitter",
    "DocumentByLineSplitter",
    "DocumentByParagraphSplitter",
    "DocumentByRegexSplitter",
    "DocumentBySentenceSplitter",
    "DocumentByWordSplitter",
    "DocumentSplitter",
    "RecursiveDocumentSplitter",
]
