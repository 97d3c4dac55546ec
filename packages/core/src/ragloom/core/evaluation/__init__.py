"""Retrieval evaluation: BEIR-layout data sets, recall@k / MRR@10 / nDCG@10, a runner.

>>> from ragloom.core.evaluation import evaluate, load_beir
>>> report = evaluate(my_retriever, load_beir("data/scifact"))  # doctest: +SKIP
>>> print(report.format())  # doctest: +SKIP

``python -m ragloom.core.evaluation DATA_DIR --mode keyword|dense|hybrid`` does the same
from the command line.
"""

from typing import TYPE_CHECKING

from ragloom.core._lazy import lazy_exports

if TYPE_CHECKING:
    from ragloom.core.evaluation.beir import (
        DOC_ID,
        BeirDataset,
        CorpusEntry,
        EvaluationDataError,
        load_beir,
    )
    from ragloom.core.evaluation.metrics import mrr_at_k, ndcg_at_k, recall_at_k
    from ragloom.core.evaluation.runner import EvaluationReport, QueryResult, evaluate

__all__ = [
    "DOC_ID",
    "BeirDataset",
    "CorpusEntry",
    "EvaluationDataError",
    "EvaluationReport",
    "QueryResult",
    "evaluate",
    "load_beir",
    "mrr_at_k",
    "ndcg_at_k",
    "recall_at_k",
]

_EXPORTS = {
    "DOC_ID": "beir",
    "BeirDataset": "beir",
    "CorpusEntry": "beir",
    "EvaluationDataError": "beir",
    "load_beir": "beir",
    "mrr_at_k": "metrics",
    "ndcg_at_k": "metrics",
    "recall_at_k": "metrics",
    "EvaluationReport": "runner",
    "QueryResult": "runner",
    "evaluate": "runner",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
