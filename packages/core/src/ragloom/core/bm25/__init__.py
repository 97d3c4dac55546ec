"""Full-text search: a numpy BM25 index, its analyzers and scoring variants."""

from typing import TYPE_CHECKING

from ragloom.core._lazy import lazy_exports

if TYPE_CHECKING:
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

_EXPORTS = {
    "ENGLISH_STOPWORDS": "analyzer",
    "LUCENE_STOPWORDS": "analyzer",
    "Analyzer": "analyzer",
    "StandardAnalyzer": "analyzer",
    "analyze": "analyzer",
    "snowball_stemmer": "analyzer",
    "RM3": "feedback",
    "BM25Index": "index",
    "BM25IndexError": "index",
    "BM25Match": "index",
    "BM25Parameters": "scoring",
    "BM25Variant": "scoring",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
