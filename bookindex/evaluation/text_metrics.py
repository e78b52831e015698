"""Lexical answer metrics against a reference answer (Corpus2Skill's Table 1 protocol).

Token F1 is SQuAD's (lower-cased, punctuation and articles dropped, bag of words); ROUGE-1/2 are
the `rouge-score` package's F-measures (with Porter stemming, as ROUGE-1.5.5 is usually run);
BLEU is sacrebleu's sentence BLEU (0-1 here, smoothed with "exp" as sacrebleu does by default),
so none of them is re-implemented.
"""

from __future__ import annotations

import re
import string
from collections import Counter

import sacrebleu
from rouge_score import rouge_scorer

_ROUGE = rouge_scorer.RougeScorer(["rouge1", "rouge2"], use_stemmer=True)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalise(text: str) -> list[str]:
    t = text.lower()
    t = "".join(ch for ch in t if ch not in set(string.punctuation))
    return _ARTICLES.sub(" ", t).split()


def token_f1(pred: str, gold: str) -> float:
    p, g = normalise(pred), normalise(gold)
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def rouge(pred: str, gold: str) -> tuple[float, float]:
    """(ROUGE-1, ROUGE-2) F-measures."""
    s = _ROUGE.score(gold, pred)
    return s["rouge1"].fmeasure, s["rouge2"].fmeasure


def bleu(pred: str, gold: str) -> float:
    return sacrebleu.sentence_bleu(pred, [gold]).score / 100.0


def answer_scores(pred: str, gold: str) -> dict[str, float]:
    r1, r2 = rouge(pred, gold)
    return {"f1": token_f1(pred, gold), "rouge1": r1, "rouge2": r2, "bleu": bleu(pred, gold)}
