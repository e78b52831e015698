"""Heading detection quality against a PDF outline (numbering stripped, same page ±1).

Used by scripts/bench_parse.py and the tests: a predicted heading is a title block with a
level, except the reference-entry headings that parsing.entries made (a function's name: an
outline never lists those, and a manual has a hundred of them); a gold heading is an outline
entry. Matching is one-to-one, greedy by text similarity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rapidfuzz import fuzz

from bookindex.core.model import Block
from bookindex.parsing.base import OutlineEntry
from bookindex.parsing.entries import is_promoted
from bookindex.parsing.numbering import norm_title

MATCH_SCORE = 88.0


@dataclass
class HeadingScore:
    precision: float
    recall: float
    f1: float
    level_accuracy: float
    n_pred: int
    n_gold: int
    n_matched: int
    false_positives: list[str] = field(default_factory=list)
    false_negatives: list[str] = field(default_factory=list)
    level_errors: list[str] = field(default_factory=list)

    def to_dict(self, examples: int = 15) -> dict:
        return {"precision": round(self.precision, 4), "recall": round(self.recall, 4), "f1": round(self.f1, 4),
                "level_accuracy": round(self.level_accuracy, 4), "n_pred": self.n_pred, "n_gold": self.n_gold,
                "n_matched": self.n_matched, "false_positives": self.false_positives[:examples],
                "false_negatives": self.false_negatives[:examples], "level_errors": self.level_errors[:examples]}


def score_headings(blocks: list[Block], outline: list[OutlineEntry], tol: int = 1, *,
                   skip_entries: bool = True) -> HeadingScore:
    """Precision/recall/F1 of the leveled title blocks against the outline; `skip_entries=False`
    counts the entry headings too (what they would cost if they were taken for headings)."""
    pred = [b for b in blocks if b.type == "title" and b.level is not None and not (skip_entries and is_promoted(b))]
    gold = [e for e in outline if e.page_idx is not None]
    gold_page = [e.page_idx for e in outline if e.page_idx is not None]  # row-aligned with gold
    pn = [norm_title(b.content) for b in pred]
    by_page: dict[int, list[int]] = {}
    for i, b in enumerate(pred):
        by_page.setdefault(b.page_idx, []).append(i)
    used: set[int] = set()
    pairs: list[tuple[int, int]] = []
    for gi, g in enumerate(gold):
        gt = norm_title(g.title)
        best, best_s = None, MATCH_SCORE - 1e-9
        for p in range(gold_page[gi] - tol, gold_page[gi] + tol + 1):
            for i in by_page.get(p, ()):
                if i in used:
                    continue
                s = 100.0 if pn[i] == gt else fuzz.ratio(pn[i], gt)
                if s > best_s or (s == best_s and best is not None and p == gold_page[gi]):
                    best, best_s = i, s
        if best is not None:
            used.add(best)
            pairs.append((gi, best))
    m = len(pairs)
    prec = m / len(pred) if pred else 0.0
    rec = m / len(gold) if gold else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    lvl_ok = sum(1 for gi, pi in pairs if gold[gi].level == pred[pi].level)
    matched_g = {gi for gi, _ in pairs}
    return HeadingScore(
        precision=prec, recall=rec, f1=f1, level_accuracy=lvl_ok / m if m else 0.0,
        n_pred=len(pred), n_gold=len(gold), n_matched=m,
        false_positives=[f"p{pred[i].page_idx + 1} L{pred[i].level} {pred[i].content[:60]}" for i in range(len(pred)) if i not in used],
        false_negatives=[f"p{gold_page[gi] + 1} L{g.level} {g.title[:60]}" for gi, g in enumerate(gold) if gi not in matched_g],
        level_errors=[f"p{gold_page[gi] + 1} gold L{gold[gi].level} pred L{pred[pi].level} {gold[gi].title[:50]}"
                      for gi, pi in pairs if gold[gi].level != pred[pi].level],
    )
