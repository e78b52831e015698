"""Fitting the extractive reader's choice among its candidates, judged out of fold by document.

`ask` without an LLM answers with the candidate `operators.reader.best_candidate` puts first, a
hand-set order. This module measures the alternative the field uses: every candidate of every
development question described by `operators.candidate_features.FEATURES`, labelled by whether
the answer it renders is right, and a logistic regression fitted on those rows. The figure is
out of fold with folds grouped by document (no document's questions in both the fit and the
test), set by set, beside the hand-set order on the same questions.

The reader's inputs (the passages `ask` gave it) are recorded once per question by running the
real `Engine.ask` with the reader observed (`collect_cases`), so a fit reads exactly what the
reader read; they are cached, and a fit is then seconds.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from bookindex.evaluation.reference_run import names_entry
from bookindex.evaluation.short_answers import score_short, short_answer
from bookindex.operators import synthesizer
from bookindex.operators.candidate_features import FEATURES, feature_rows, hand_set_pool, rule_ranked
from bookindex.operators.candidate_scorer import CandidateWeights
from bookindex.operators.reader import asked, candidates, render_answer

SHOWN = 300  # the characters of an answer a reader takes in at a glance (`eval_manual_answers`)


@dataclass(frozen=True)
class Gold:
    """What makes an answer right: one of `accept` in its first SHOWN characters ("accept"),
    an entry's name named as a word ("entry"), or MMLongBench's score of its short form ("short")."""

    rule: str
    accept: tuple[str, ...] = ()
    answer: str = ""
    answer_format: str = ""

    def right(self, question: str, text: str) -> bool:
        if self.rule == "accept":
            head = text[:SHOWN].lower()
            return any(k.lower() in head for k in self.accept)
        if self.rule == "entry":
            return names_entry(text[:SHOWN], self.accept)
        return score_short(self.answer, self.answer_format, short_answer(question, text)) >= 0.5


@dataclass(frozen=True)
class Item:
    """One development question: its set, document, text and gold."""

    set: str
    doc: str
    question: str
    gold: Gold


@dataclass
class ReaderCase:
    """An item with what the reader read for it (the last `read` call of its `ask`) and the answer
    `ask` gave; `inputs` is None where the reader was not asked (a computed answer, say)."""

    item: Item
    answer: str
    inputs: tuple[Any, ...] | None = None


@dataclass
class Labelled:
    """A case's candidates: their feature rows, whether each renders a right answer, the rule's
    choice, and the case's own answer's verdict (what counts where there are no candidates)."""

    item: Item
    rows: np.ndarray
    right: np.ndarray
    rule_choice: int
    answer_right: bool
    texts: list[str] = field(default_factory=list)
    asked: Any = None  # the question as the reader read it, and its candidates: features can be
    cands: list[Any] = field(default_factory=list)  # recomputed from them (`relabel_rows`)
    # the rule's choice rendered is the answer `ask` gave: the reader decided it (not a computed
    # answer, a Map's merge or a later step)
    decides: bool = True


class _ObservedReader:
    """Stands in for `synthesizer.read` while a question is asked: records its arguments, then
    reads as it would."""

    def __init__(self, real: Callable[..., tuple[str, list[int]]]):
        self.real = real
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, question: str, passages: list[Any], numbers: list[int] | None = None,
                 furniture: frozenset[str] = frozenset(), entries: frozenset[str] = frozenset(),
                 page_labels: list[str] | None = None, *rest: Any) -> tuple[str, list[int]]:
        self.calls.append((question, passages, numbers, furniture, entries, page_labels))
        return self.real(question, passages, numbers, furniture, entries, page_labels, *rest)


def collect_cases(engine: Any, items: Sequence[Item], progress: Callable[[int, int], None] | None = None
                  ) -> list[ReaderCase]:
    """Ask each item of `engine` (no LLM) with the reader observed."""
    cases = []
    observed = _ObservedReader(synthesizer.read)
    with mock.patch.object(synthesizer, "read", observed):
        for i, item in enumerate(items):
            observed.calls.clear()
            answer = engine.ask(item.question, doc=item.doc).answer
            cases.append(ReaderCase(item, answer, observed.calls[-1] if observed.calls else None))
            if progress:
                progress(i + 1, len(items))
    return cases


def save_cases(cases: list[ReaderCase], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(cases))
    tmp.replace(path)


def load_cases(path: Path) -> list[ReaderCase]:
    """Cases saved by `save_cases` (this tool's own cache, never a file from elsewhere)."""
    return pickle.loads(path.read_bytes())  # noqa: S301 - written by save_cases above


def label(case: ReaderCase) -> Labelled | None:
    """The case's candidates, each rendered as the answer and judged; None without candidates."""
    if case.inputs is None:
        return None
    question, passages, numbers, furniture, entries, page_labels = case.inputs
    a = asked(question)
    cands = candidates(a, passages, numbers, furniture, entries)
    if not cands:
        return None
    texts = [render_answer(a, c, cands, page_labels, passages)[0] for c in cands]
    right = np.array([case.item.gold.right(question, t) for t in texts], dtype=bool)
    rule = rule_ranked(cands)[0]  # `best_candidate`'s answer
    return Labelled(case.item, feature_rows(a, cands), right, rule,
                    case.item.gold.right(question, case.answer), texts, a, cands, texts[rule] == case.answer)


def relabel_rows(labelled: Sequence[Labelled]) -> None:
    """Recompute each case's feature rows from its kept candidates (after FEATURES changed)."""
    for lab in labelled:
        lab.rows = feature_rows(lab.asked, lab.cands)


def _fit(rows: np.ndarray, right: np.ndarray, sample_weight: np.ndarray, c: float, top_k: int) -> CandidateWeights:
    """A logistic regression of rightness on standardised features (scikit-learn)."""
    from sklearn.linear_model import LogisticRegression

    mean = rows.mean(axis=0)
    scale = rows.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=3000)
    model.fit((rows - mean) / scale, right, sample_weight=sample_weight)
    return CandidateWeights(FEATURES, mean.tolist(), scale.tolist(), model.coef_[0].tolist(),
                            float(model.intercept_[0]), top_k)


def _question_weights(right: np.ndarray) -> np.ndarray:
    """Each question weighs the same whatever its number of candidates: its right candidates
    share one half, its wrong ones the other (a question with only one kind gives it all)."""
    n_right, n_wrong = int(right.sum()), int((~right).sum())
    if not n_right or not n_wrong:
        return np.full(len(right), 1.0 / len(right))
    return np.where(right, 0.5 / n_right, 0.5 / n_wrong)


def _pool(lab: Labelled, top_k: int) -> list[int]:
    """The candidates a fit with `top_k` chooses among (`CandidateWeights.pool`); a case made of
    rows alone (a test's fixture) has them in the hand-set order already."""
    if lab.cands:
        return hand_set_pool(lab.cands, top_k)
    return list(range(len(lab.right)))[:top_k or None]


def fit_weights(labelled: Sequence[Labelled], c: float = 0.03, top_k: int = 2,
                meta: dict[str, Any] | None = None) -> CandidateWeights:
    """Weights fitted on every labelled case (what ships), over each question's pool of
    candidates. Pools whose candidates are all right or all wrong teach no choice and are left out."""
    pools = [(lab, _pool(lab, top_k)) for lab in labelled]
    useful = [(lab.rows[p], lab.right[p]) for lab, p in pools if 0 < lab.right[p].sum() < len(p)]
    if not useful:
        useful = [(lab.rows[p], lab.right[p]) for lab, p in pools]
    rows = np.vstack([r for r, _ in useful])
    right = np.concatenate([y for _, y in useful])
    sample_weight = np.concatenate([_question_weights(y) for _, y in useful]) * len(useful)
    weights = _fit(rows, right, sample_weight, c, top_k)
    weights.meta = dict(meta or {})
    return weights


def out_of_fold(labelled: Sequence[Labelled], folds: int = 5, c: float = 0.03, top_k: int = 2) -> list[int]:
    """Each case's fitted choice, from weights fitted without its document's cases."""
    from sklearn.model_selection import GroupKFold

    groups = [f"{lab.item.set}/{lab.item.doc}" for lab in labelled]
    choice = [0] * len(labelled)
    for train, test in GroupKFold(n_splits=min(folds, len(set(groups)))).split(labelled, groups=groups):
        weights = fit_weights([labelled[i] for i in train], c, top_k)
        for i in test:
            pool = _pool(labelled[i], top_k)
            choice[i] = pool[int(np.argmax(weights.scores(labelled[i].rows[pool])))]
    return choice


def report(cases: Sequence[ReaderCase], labelled: dict[int, Labelled], choice: dict[int, int]) -> dict[str, Any]:
    """Per set: questions, right by `ask` today, by the rule's choice and by the fitted one (a
    question whose answer the reader did not decide counts `ask`'s answer for both), and the best
    any choice could do."""
    sets: dict[str, dict[str, int]] = {}
    for i, case in enumerate(cases):
        row = sets.setdefault(case.item.set, {"questions": 0, "today": 0, "rule": 0, "fitted": 0, "oracle": 0})
        today = case.item.gold.right(case.item.question, case.answer)
        lab = labelled.get(i)
        lab = lab if lab is not None and lab.decides else None
        row["questions"] += 1
        row["today"] += today
        row["rule"] += bool(lab.right[lab.rule_choice]) if lab else today
        row["fitted"] += bool(lab.right[choice[i]]) if lab else today
        row["oracle"] += bool(lab.right.any()) if lab else today
    total = {k: sum(r[k] for r in sets.values()) for k in ("questions", "today", "rule", "fitted", "oracle")}
    return {"sets": sets, "all": total}


def markdown(summary: dict[str, Any]) -> str:
    lines = ["| set | questions | ask today | rule's choice | fitted, out of fold | any candidate |",
             "|---|---|---|---|---|---|"]
    for name, r in [*summary["sets"].items(), ("all", summary["all"])]:
        n = max(1, r["questions"])
        lines.append(f"| {name} | {r['questions']} | {r['today']} ({r['today'] / n:.3f}) | {r['rule']} "
                     f"({r['rule'] / n:.3f}) | {r['fitted']} ({r['fitted'] / n:.3f}) | {r['oracle']} ({r['oracle'] / n:.3f}) |")
    return "\n".join(lines) + "\n"


def manual_items(path: Path, set_name: str | None, docs: Iterable[str]) -> list[Item]:
    """The questions of a JSON-lines file (`accept` strings, or a reference `entry` and its
    `aliases`) whose document is among `docs`."""
    have = set(docs)
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        if q["doc"] not in have:
            continue
        gold = Gold("accept", tuple(q["accept"])) if "accept" in q else \
            Gold("entry", (q["entry"], *q.get("aliases", ())))
        items.append(Item(set_name or q.get("set", path.stem), q["doc"], q["question"], gold))
    return items
