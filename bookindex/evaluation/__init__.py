"""Evaluation scorers: page/paragraph evidence recall and benchmark answer scoring.

Pure functions with no model dependencies, so they can be unit-tested by hand and reused by
scripts/eval_mmlongbench.py and scripts/eval_qasper.py.
"""

from bookindex.evaluation.mmlongbench import anls, f1_mmlongbench, score_answer
from bookindex.evaluation.qasper import (
    qasper_accuracy,
    qasper_gold_answers,
    qasper_token_f1,
)
from bookindex.evaluation.recall import (
    context_size,
    evidence_page_set,
    page_recall_at_k,
    parse_gold_pages,
)

__all__ = [
    "anls", "f1_mmlongbench", "score_answer",
    "qasper_accuracy", "qasper_gold_answers", "qasper_token_f1",
    "context_size", "evidence_page_set", "page_recall_at_k", "parse_gold_pages",
]
