"""Lexical answer metrics against a reference answer (Corpus2Skill's Table 1 protocol).

Token F1 is SQuAD's, shared with Qasper's scoring (lower-cased, punctuation and articles dropped, bag of words); ROUGE-1/2 are
the `rouge-score` package's F-measures (with Porter stemming, as ROUGE-1.5.5 is usually run);
BLEU is sacrebleu's sentence BLEU (0-1 here, smoothed with "exp" as sacrebleu does by default),
so none of them is re-implemented.
"""

from __future__ import annotations

import sacrebleu
from rouge_score import rouge_scorer

from bookindex.evaluation.qasper import token_f1 as squad_f1

_ROUGE = rouge_scorer.RougeScorer(["rouge1", "rouge2"], use_stemmer=True)


def token_f1(pred: str, gold: str) -> float:
    """SQuAD token F1 (the one Qasper is scored with)."""
    return squad_f1(gold, pred)


def rouge(pred: str, gold: str) -> tuple[float, float]:
    """(ROUGE-1, ROUGE-2) F-measures."""
    s = _ROUGE.score(gold, pred)
    return s["rouge1"].fmeasure, s["rouge2"].fmeasure


def bleu(pred: str, gold: str) -> float:
    return sacrebleu.sentence_bleu(pred, [gold]).score / 100.0


def answer_scores(pred: str, gold: str) -> dict[str, float]:
    r1, r2 = rouge(pred, gold)
    return {"f1": token_f1(pred, gold), "rouge1": r1, "rouge2": r2, "bleu": bleu(pred, gold)}
