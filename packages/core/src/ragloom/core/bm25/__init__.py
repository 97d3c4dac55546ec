"""Full-text search: a numpy BM25 index, its analyzers and scoring variants."""

from ragloom.core.bm25.analyzer import (
    ENGLISH_STOPWORDS,
    LUCENE_STOPWORDS,
    Analyzer,
    StandardAnalyzer,
    analyze,
    snowball_stemmer,
)
from ragloom.core.bm25.feedback import RM3
from ragloom.core.bm25.index import BM25Index, BM25IndexError, BM25Match
from ragloom.core.bm25.scoring import BM25Parameters, BM25Variant

__all__ = [
    "ENGLISH_STOPWORDS",
    "LUCENE_STOPWORDS",
    "Analyzer",
    "BM25Index",
    "BM25IndexError",
    "BM25Match",
    "BM25Parameters",
    "BM25Variant",
    "RM3",
    "StandardAnalyzer",
    "analyze",
    "snowball_stemmer",
]
