"""Fitting the evidence selector's weights (`operators.evidence_select`) and measuring it out of fold.

Behind scripts/fit_evidence.py. For every development question with a short gold answer
(`MMLongBench.short_answer`: MMLongBench and FinanceBench splits), bookindex ranks its document's
nodes as `ask` does without a model (`collect`: the ranked ids `ask` would pack, cached as JSON,
so a refit does not retrieve again). Every candidate unit of those ids (`evidence_units`) gets
its feature record and a label: whether the gold answer occurs in it by the matcher behind
answer-in-evidence (`answer_match.answer_in_text`). A logistic regression (scikit-learn, on
standardised features) is fitted on the units; `cross_validate` fits it again per fold of
documents (GroupKFold: no document in both a fold's training and its test questions) and packs
each test question's evidence at the default budget with its fold's weights, beside today's
rules on the same question, so the figures compared are answer-in-evidence (all, and the
text-answerable questions) and page-shown, out of fold.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.config import load_settings
from bookindex.core.model import DocumentTree
from bookindex.engine import Engine
from bookindex.evaluation.answer_match import answer_in_text
from bookindex.evaluation.mmlongbench_run import MMLongBench
from bookindex.evaluation.reader_text import reader_ids
from bookindex.operators.context import IndexContext
from bookindex.operators.evidence_select import EvidenceWeights
from bookindex.operators.evidence_units import FEATURES, candidate_units, unit_features
from bookindex.operators.passages import Passage, format_passages, pack_passages, question_terms
from bookindex.operators.synthesizer import evidence_tokens, prompt_passages

# Hand-set: the regularisation of the logistic regression (scikit-learn's default) and the
# number of document folds; no data of this size decides them better than the defaults
C = 1.0
FOLDS = 5
BUDGET = 1000  # retrieval.evidence_tokens' default: the budget the units are labelled and measured at


@dataclass
class Case:
    """One development question as the fit sees it: the ranked ids `ask` packs for it."""

    set: str
    qid: str
    doc: str
    doc_id: str
    question: str
    answer: str
    text_answerable: bool
    gold_pages: list[int]
    ids: list[str] = field(default_factory=list)


def collect(data_dir: Path, index_dir: Path, on_case: Callable[[int, int], None] | None = None) -> list[Case]:
    """The short-answer questions of the split in `data_dir`, each with the node ids bookindex
    ranks for it (no LLM) in the library `index_dir` built for the split."""
    bench = MMLongBench(data_dir)
    engine = Engine(index_dir, load_settings(overrides={"llm.provider": "none"}))
    names = {d.name: d.doc_id for d in engine.documents()}
    questions = [q for q in bench.questions() if bench.short_answer(q) and q.doc in names]
    out = []
    for k, q in enumerate(questions):
        doc_id = names[q.doc]
        ans = engine.ask(q.text, doc=doc_id, method="bookindex")
        out.append(Case(set=data_dir.name, qid=q.qid, doc=q.doc, doc_id=doc_id, question=q.text,
                        answer=str(q.answer), text_answerable=bench.text_answerable(q), gold_pages=list(q.gold_pages),
                        ids=reader_ids(engine.open(doc_id), list(ans.evidence))))
        if on_case is not None:
            on_case(k + 1, len(questions))
    return out


def save_cases(cases: Sequence[Case], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([asdict(c) for c in cases], indent=0), encoding="utf-8")


def load_cases(path: Path) -> list[Case]:
    return [Case(**c) for c in json.loads(path.read_text(encoding="utf-8"))]


def labelled_units(tree: DocumentTree, case: Case, budget: int = BUDGET) -> tuple[np.ndarray, np.ndarray]:
    """The feature matrix of a case's candidate units (the rules' items packed at `budget`
    tokens, as the selector sees them) and whether each holds the gold answer on a gold page: a
    short answer ("2", "10%") is printed by many units that do not answer the question, and
    those labels would teach the scorer to prefer units full of numbers (measured: out of fold,
    labels without the page held the answer for 0.554 of mmlongbench-dev, with it 0.576)."""
    units = candidate_units(tree, case.ids)
    shown = [p.text for p in pack_passages(tree, case.ids, budget, question=case.question)]
    x = unit_features(units, question_terms(case.question), shown)
    gold = set(case.gold_pages)
    y = np.array([answer_in_text(case.answer, u.text) and u.block.node.page_idx + 1 in gold for u in units], dtype=int)
    return x, y


def fit_weights(x: np.ndarray, y: np.ndarray, meta: dict[str, Any] | None = None) -> EvidenceWeights:
    """A logistic regression on standardised features, as `EvidenceWeights`."""
    from sklearn.linear_model import LogisticRegression  # scikit-learn: only a fit needs it
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x)
    model = LogisticRegression(C=C, max_iter=2000).fit(scaler.transform(x), y)
    return EvidenceWeights(FEATURES, scaler.mean_.copy(), np.where(scaler.scale_ > 0, scaler.scale_, 1.0),
                           model.coef_[0].copy(), float(model.intercept_[0]), dict(meta or {}))


@dataclass
class Outcome:
    """One case packed one way: whether the answer is in the passages, and a gold page shown."""

    in_evidence: bool
    page_shown: bool


def packed_outcome(ctx: IndexContext, case: Case, weights: EvidenceWeights | None) -> Outcome:
    """The case's evidence packed as `ask` packs it at the default budget: by today's rules
    (`weights` None, settings "rules") or by `weights`."""
    passages: list[Passage] = prompt_passages(ctx, case.ids, case.question, evidence_tokens(ctx), weights) \
        if case.ids else []
    pages = {p for x in passages for p in range(x.first_page, x.last_page + 1)}
    return Outcome(answer_in_text(case.answer, format_passages(passages)), bool(pages & set(case.gold_pages)))


def _stack(data: Sequence[tuple[np.ndarray, np.ndarray]], rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    xs = [data[i][0] for i in rows if len(data[i][0])]
    ys = [data[i][1] for i in rows if len(data[i][0])]
    return np.vstack(xs), np.concatenate(ys)


def cross_validate(cases: Sequence[Case], context: Callable[[Case], IndexContext],
                   folds: int = FOLDS) -> dict[str, list[Outcome]]:
    """Each case packed by today's rules, by weights fitted on the other folds' documents
    (GroupKFold over documents) and by weights fitted on every case (in sample)."""
    from sklearn.model_selection import GroupKFold  # scikit-learn: only a fit needs it

    data = [labelled_units(context(c).tree, c) for c in cases]
    groups = [c.doc for c in cases]
    oof: list[Outcome | None] = [None] * len(cases)
    for train, test in GroupKFold(n_splits=min(folds, len(set(groups)))).split(cases, groups=groups):
        w = fit_weights(*_stack(data, train))
        for i in test:
            oof[i] = packed_outcome(context(cases[i]), cases[i], w)
    full = fit_weights(*_stack(data, range(len(cases))))
    return {"rules": [packed_outcome(context(c), c, None) for c in cases],
            "fitted (out of fold)": [o if o is not None else Outcome(False, False) for o in oof],
            "fitted (in sample)": [packed_outcome(context(c), c, full) for c in cases]}


def summary(cases: Sequence[Case], outcomes: dict[str, list[Outcome]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per set and way of packing: questions, answer-in-evidence (all, text-answerable), page shown."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name in dict.fromkeys(c.set for c in cases):
        rows = [i for i, c in enumerate(cases) if c.set == name]
        text = [i for i in rows if cases[i].text_answerable]
        out[name] = {way: {"n": len(rows), "all": _mean([got[i].in_evidence for i in rows]), "n_text": len(text),
                           "text": _mean([got[i].in_evidence for i in text]),
                           "page_shown": _mean([got[i].page_shown for i in rows])}
                     for way, got in outcomes.items()}
    return out


def _mean(xs: Sequence[bool]) -> float:
    return round(sum(xs) / len(xs), 3) if xs else 0.0


def markdown(table: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The summary as one Markdown table."""
    lines = ["| set | packing | questions | answer in evidence | text-answerable | answer in evidence (text) | page shown |",
             "|---|---|---|---|---|---|---|"]
    for name, ways in table.items():
        for way, s in ways.items():
            lines.append(f"| {name} | {way} | {s['n']} | {s['all']:.3f} | {s['n_text']} | {s['text']:.3f} | "
                         f"{s['page_shown']:.3f} |")
    return "\n".join(lines)


def fit_all(cases: Sequence[Case], context: Callable[[Case], IndexContext], meta: dict[str, Any]) -> EvidenceWeights:
    """The weights fitted on every case's units (what the package ships), with `meta`."""
    data = [labelled_units(context(c).tree, c) for c in cases]
    return fit_weights(*_stack(data, range(len(cases))), meta=meta)
