"""MMLongBench-Doc answer scoring, implemented from the benchmark's published rules.

Per `answer_format` of the gold answer:
- Int: the predicted number equals the gold integer exactly.
- Float: within 1% relative tolerance; a percentage may be given as a fraction or vice versa
  (gold 72.3% matches 72.3, 0.723 or 72.3%).
- Str (and None, whose gold is "Not answerable"): ANLS, the normalized Levenshtein similarity;
  a similarity below 0.5 scores 0, otherwise the score is the similarity itself (partial
  credit, as in the benchmark). URLs, e-mails, dates, times and file names need an exact match.
- List: same length required; elements compared after sorting, exactly when the gold elements
  are numbers or exact-match strings, otherwise the minimum element-wise ANLS.
F1 follows the benchmark: recall = mean score over answerable questions, precision = summed
score on answerable questions over the number of predictions that are not "Not answerable".
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any, Sequence

from rapidfuzz.distance import Levenshtein

NOT_ANSWERABLE = "not answerable"
ANLS_THRESHOLD = 0.5

_MONTHS = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*"
_EXACT_PATTERNS = [
    r"https?://", r"\bwww\.", r"\.(com|org|edu|gov|net|io)\b", r"\S+@\S+",
    r"\.(pdf|py|txt|json|csv|html?|docx?|xlsx?|png|jpe?g)\b",
    r"\b\d{4}-\d{1,2}(-\d{1,2})?\b", r"\b\d{1,2}/\d{1,2}/\d{2,4}\b",
    r"\b\d{1,2}:\d{2}\s*(am|pm)?\b", r"\b\d{1,2}\s*(am|pm)\b",
    rf"\b{_MONTHS}\s+\d{{1,2}}(st|nd|rd|th)?,?\s+\d{{4}}\b", rf"\b\d{{1,2}}\s+{_MONTHS}\s+\d{{4}}\b",
]
_NUM_RE = re.compile(r"[-+]?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|[-+]?\.\d+")


def clean_string(s: Any) -> str:
    """Lowercase, collapse whitespace, drop surrounding quotes/brackets and trailing punctuation."""
    s = " ".join(str(s).lower().split())
    s = s.strip().strip("\"'`“”‘’").strip()
    s = re.sub(r"[\s.;,!?]+$", "", s)
    return s.strip()


def is_exact_match_string(s: str) -> bool:
    """Strings that ANLS would wrongly give partial credit to (URLs, dates, times, files)."""
    s = s.lower()
    return any(re.search(p, s) for p in _EXACT_PATTERNS)


def anls(gold: str, pred: str, threshold: float = ANLS_THRESHOLD) -> float:
    """Normalized Levenshtein similarity, zeroed below `threshold` (ANLS >= 0.5 counts)."""
    g, p = clean_string(gold), clean_string(pred)
    length = max(len(g), len(p))
    if length == 0:
        return 1.0
    sim = 1.0 - Levenshtein.distance(g, p) / length
    return sim if sim >= threshold else 0.0


def parse_number(s: Any) -> float | None:
    """The number a (possibly wordy) answer states: '$1,234.5 million' -> 1234.5; None if none."""
    if isinstance(s, (int, float)) and not isinstance(s, bool):
        return float(s)
    text = clean_string(s).replace("$", "").replace("%", "")
    try:
        return float(text.replace(",", ""))
    except ValueError:
        pass
    m = _NUM_RE.search(text)
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", ""))
    except ValueError:
        return None


def float_equal(gold: float, pred: float, rel_tol: float = 0.01) -> bool:
    """Within 1% of the gold value, allowing a percentage/fraction scale mismatch."""
    return any(math.isclose(g, pred, rel_tol=rel_tol, abs_tol=1e-9) for g in (gold, gold / 100, gold * 100))


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        v = value.strip()
        if v.startswith("[") and v.endswith("]"):
            try:
                parsed = ast.literal_eval(v)
                if isinstance(parsed, (list, tuple)):
                    return list(parsed)
            except (ValueError, SyntaxError):
                inner = v[1:-1]
                return [x.strip().strip("'\"") for x in inner.split(",") if x.strip()]
        return [value]
    return [value]


def _is_numeric(s: str) -> bool:
    try:
        float(s.replace(",", "").replace("%", "").replace("$", ""))
        return True
    except ValueError:
        return False


def score_answer(gold: Any, pred: Any, answer_format: str) -> float:
    """Score one prediction against the gold answer in [0, 1] by the format's rule."""
    if pred is None:
        pred = ""
    fmt = (answer_format or "Str").strip()
    if fmt == "Int":
        g, p = parse_number(gold), parse_number(pred)
        if g is None or p is None:
            return 0.0
        return 1.0 if int(round(g)) == p else 0.0
    if fmt == "Float":
        g, p = parse_number(gold), parse_number(pred)
        if g is None or p is None:
            return 0.0
        return 1.0 if float_equal(g, p) else 0.0
    if fmt in ("Str", "None"):
        if isinstance(pred, (list, tuple)):
            pred = ", ".join(str(x) for x in pred)
        gs, ps = clean_string(gold), clean_string(pred)
        if is_exact_match_string(gs):
            return 1.0 if gs == ps else 0.0
        return anls(gs, ps)
    if fmt == "List":
        gl = [clean_string(x) for x in _as_list(gold)]
        pl = [clean_string(x) for x in _as_list(pred)]
        if len(pl) == 1 and len(gl) > 1:  # "a, b and c" written as one string
            pl = [clean_string(x) for x in re.split(r",|;|\band\b", pl[0]) if x.strip()]
        if len(gl) != len(pl) or not gl:
            return 0.0
        gl, pl = sorted(gl), sorted(pl)
        if _is_numeric(gl[0]) or is_exact_match_string(gl[0]):
            return 1.0 if gl == pl else 0.0
        return min(anls(g, p) for g, p in zip(gl, pl))
    raise ValueError(f"unknown answer_format {answer_format!r}")


def is_not_answerable(answer: Any) -> bool:
    return clean_string(answer) == NOT_ANSWERABLE


def f1_mmlongbench(golds: Sequence[Any], preds: Sequence[Any], scores: Sequence[float]) -> dict[str, float]:
    """Accuracy and the benchmark's F1 over a set of scored predictions."""
    n = len(scores)
    if n == 0:
        return {"accuracy": 0.0, "f1": 0.0, "recall": 0.0, "precision": 0.0}
    acc = sum(scores) / n
    ans_scores = [s for g, s in zip(golds, scores) if not is_not_answerable(g)]
    n_pred_ans = sum(1 for p in preds if not is_not_answerable(p))
    recall = sum(ans_scores) / len(ans_scores) if ans_scores else 0.0
    precision = sum(ans_scores) / n_pred_ans if n_pred_ans else 0.0
    f1 = 2 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0
    return {"accuracy": acc, "f1": f1, "recall": recall, "precision": precision}
