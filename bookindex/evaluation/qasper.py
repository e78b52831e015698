"""Qasper scoring: answer accuracy (normalized gold contained in the answer), SQuAD token F1
(max over annotators) and paragraph-level evidence recall@k.

Gold answers follow the Qasper conventions: extractive spans joined with ", ", a free-form
answer, "Yes"/"No", or "Unanswerable".
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
FLOAT_PREFIX = "FLOAT SELECTED:"


def normalize_answer(s: str) -> str:
    """SQuAD normalization: lowercase, drop punctuation and articles, collapse whitespace."""
    s = str(s).lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def token_f1(gold: str, pred: str) -> float:
    g, p = normalize_answer(gold).split(), normalize_answer(pred).split()
    if not g and not p:
        return 1.0
    common = Counter(g) & Counter(p)
    same = sum(common.values())
    if same == 0:
        return 0.0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


def qasper_gold_answers(answers: Sequence[dict[str, Any]]) -> list[str]:
    """One gold string per annotator from the HF `qas.answers[i].answer` records."""
    out: list[str] = []
    for a in answers:
        a = a.get("answer", a)
        if a.get("unanswerable"):
            out.append("Unanswerable")
        elif a.get("extractive_spans"):
            out.append(", ".join(a["extractive_spans"]))
        elif a.get("free_form_answer"):
            out.append(a["free_form_answer"])
        elif a.get("yes_no") is not None:
            out.append("Yes" if a["yes_no"] else "No")
    return out


_UNANSWERABLE = re.compile(r"^(not answerable|unanswerable|cannot be answered|no answer)\b")


def canonical_prediction(pred: str) -> str:
    """Map the answerer's "Not answerable" (and variants) to Qasper's "Unanswerable"."""
    return "Unanswerable" if _UNANSWERABLE.match(normalize_answer(pred)) else str(pred)


def qasper_token_f1(golds: Sequence[str], pred: str) -> float:
    """SQuAD token F1, max over annotators."""
    pred = canonical_prediction(pred)
    return max((token_f1(g, pred) for g in golds), default=0.0)


def qasper_accuracy(golds: Sequence[str], pred: str) -> float:
    """1 if any annotator's normalized gold answer occurs in the normalized prediction.

    Containment is over whole tokens ("no" is not found in "not answerable")."""
    p = f" {normalize_answer(canonical_prediction(pred))} "
    return 1.0 if any(normalize_answer(g) and f" {normalize_answer(g)} " in p for g in golds) else 0.0


def normalize_paragraph(s: str) -> str:
    s = str(s).strip()
    if s.startswith(FLOAT_PREFIX):
        s = s[len(FLOAT_PREFIX):]
    return " ".join(re.sub(r"[^\w\s]", " ", s.lower()).split())


def paragraph_matches(gold: str, retrieved: str, min_chars: int = 30) -> bool:
    """Exact paragraph match after normalization; containment covers a parser that splits or
    merges paragraphs (the shorter side must have `min_chars` characters)."""
    g, r = normalize_paragraph(gold), normalize_paragraph(retrieved)
    if not g or not r:
        return False
    if g == r:
        return True
    short, long_ = (g, r) if len(g) <= len(r) else (r, g)
    return len(short) >= min_chars and short in long_


def evidence_recall_at_k(annotator_evidence: Sequence[Sequence[str]], retrieved_texts: Sequence[str],
                         ks: Sequence[int]) -> dict[int, float] | None:
    """Max over annotators of the fraction of their evidence paragraphs found in the top-k texts.

    Annotators with no evidence are ignored; returns None when nobody gave evidence (the
    question is excluded from recall)."""
    sets = [list(dict.fromkeys(e)) for e in annotator_evidence if e]
    if not sets:
        return None
    out: dict[int, float] = {}
    for k in ks:
        top = retrieved_texts[:k]
        best = 0.0
        for ev in sets:
            found = sum(1 for g in ev if any(paragraph_matches(g, t) for t in top))
            best = max(best, found / len(ev))
        out[k] = best
    return out
