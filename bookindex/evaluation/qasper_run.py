"""Qasper as a `Benchmark`, and the run behind scripts/eval_qasper.py.

Each paper (sections, paragraphs, figure/table captions) becomes a Markdown document (written
under the index folder, then indexed through the library's Markdown parser); every question is
asked against its paper with each method. Scores: paragraph-level evidence recall@k (exact
paragraph match after normalization, max over annotators), and with an LLM answer accuracy
(normalized gold contained in the answer) and SQuAD token F1 (max over annotators).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from bookindex.core.atomic import write_text_atomic
from bookindex.core.errors import InputError
from bookindex.evaluation.benchmark import (
    Corpus,
    EvidenceScore,
    Group,
    Meta,
    Record,
    Retrieved,
)
from bookindex.evaluation.loop import RunResult, run_methods
from bookindex.evaluation.qasper import (
    FLOAT_PREFIX,
    evidence_recall_at_k,
    qasper_accuracy,
    qasper_gold_answers,
    qasper_token_f1,
)

_MD_SPECIAL = re.compile(r"^(\s*)([#>*+\-]|\d+[.)])(\s)")


def _escape(par: str) -> str:
    """Keep a paragraph a paragraph: escape a leading Markdown marker, join its lines."""
    par = " ".join(par.split())
    return _MD_SPECIAL.sub(lambda m: f"{m.group(1)}\\{m.group(2)}{m.group(3)}", par)


def paper_to_markdown(paper: dict[str, Any]) -> str:
    """Title (#), Abstract (##), sections (## / ### for "A ::: B" nesting), then a
    "Figures and tables" section with one paragraph per caption."""
    out = [f"# {paper.get('title', '').strip() or paper.get('id', 'paper')}", ""]
    if paper.get("abstract"):
        out += ["## Abstract", "", _escape(paper["abstract"]), ""]
    ft = paper.get("full_text") or {}
    last_path: list[str] = []
    for name, pars in zip(ft.get("section_name", []), ft.get("paragraphs", [])):
        path = [p.strip() for p in (name or "").split(":::") if p.strip()] or ["Untitled section"]
        for depth, part in enumerate(path):
            if last_path[: depth + 1] != path[: depth + 1]:
                out += [f"{'#' * min(depth + 2, 6)} {part}", ""]
        last_path = path
        for p in pars:
            if p and p.strip():
                out += [_escape(p), ""]
    caps = (paper.get("figures_and_tables") or {}).get("caption", [])
    if caps:
        out += ["## Figures and tables", ""]
        out += [x for c in caps if c and c.strip() for x in (_escape(c), "")]
    return "\n".join(out)


def load_papers(data_dir: Path) -> dict[str, Any]:
    """papers.json: paper id -> the HF allenai/qasper record (JSON as published)."""
    path = data_dir / "papers.json"
    if not path.is_file():
        raise InputError(f"{path}: not found; DATA_DIR must hold papers.json (HF allenai/qasper schema)")
    try:
        papers = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(papers, dict):
        raise InputError(f"{path}: expected an object keyed by paper id")
    return papers


@dataclass(frozen=True)
class QasperQuestion:
    """One question of a paper: `doc` is the paper's Markdown file, `evidence` one list of
    paragraphs per annotator, `golds` one answer per annotator."""

    qid: str
    paper: str
    doc: str
    text: str
    golds: list[str]
    evidence: list[list[str]]
    answer_type: str
    evidence_type: list[str]


def questions_of(papers: dict[str, Any], limit: int | None = None) -> list[QasperQuestion]:
    qs: list[QasperQuestion] = []
    for pid, paper in papers.items():
        qas = paper.get("qas") or {}
        for i, question in enumerate(qas.get("question", [])):
            answers = qas["answers"][i]["answer"]
            ev = [a.get("evidence", []) for a in answers]
            first = answers[0] if answers else {}
            kind = ("unanswerable" if first.get("unanswerable") else "extractive" if first.get("extractive_spans")
                    else "abstractive" if first.get("free_form_answer") else "yes/no")
            qs.append(QasperQuestion(
                qid=(qas.get("question_id") or [f"{pid}-{i}"] * (i + 1))[i], paper=pid, doc=f"{pid}.md",
                text=question, golds=qasper_gold_answers(answers), evidence=ev, answer_type=kind,
                evidence_type=sorted({"float" if e.startswith(FLOAT_PREFIX) else "text" for a in ev for e in a}),
            ))
    return qs[:limit] if limit else qs


def write_documents(papers: dict[str, Any], doc_dir: Path) -> None:
    """One Markdown file per paper under `doc_dir`/documents, rewritten only when it changed
    (so the library sees the same file and reuses its index)."""
    (doc_dir / "documents").mkdir(parents=True, exist_ok=True)
    for pid, paper in papers.items():
        p = doc_dir / "documents" / f"{pid}.md"
        text = paper_to_markdown({"id": pid, **paper})
        if not p.is_file() or p.read_text(encoding="utf-8") != text:
            write_text_atomic(p, text)


class Qasper:
    """The Qasper split in `data_dir` (papers.json in the HF allenai/qasper schema)."""

    name = "qasper"
    title = "Qasper"
    recall_label = "paragraph recall@k"
    breakdowns = (("evidence_type", "evidence type"), ("answer_type", "answer type"))

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.split = self.data_dir.name

    @cached_property
    def papers(self) -> dict[str, Any]:
        return load_papers(self.data_dir)

    def questions(self, limit: int | None = None) -> list[QasperQuestion]:
        return questions_of(self.papers, limit)

    def corpus(self, questions: Sequence[QasperQuestion], index_dir: Path) -> Corpus:
        """The asked papers as Markdown under <index>/markdown; the library in <index>/library."""
        write_documents({p: self.papers[p] for p in dict.fromkeys(q.paper for q in questions)}, index_dir / "markdown")
        return Corpus(folder=index_dir / "markdown" / "documents", files=list(dict.fromkeys(q.doc for q in questions)),
                      library=index_dir / "library")

    def asked_without_llm(self, question: QasperQuestion) -> bool:
        return True  # questions without evidence still count towards context size and time

    def record_fields(self, question: QasperQuestion) -> Record:
        return {"golds": question.golds}

    def groups(self, question: QasperQuestion) -> dict[str, Group]:
        return {"answer_type": question.answer_type, "evidence_type": question.evidence_type}

    def score_evidence(self, question: QasperQuestion, retrieved: Retrieved,
                       ks: Sequence[int]) -> EvidenceScore | None:
        """Paragraph recall@k over the passages' texts; None when no annotator gave evidence."""
        r = evidence_recall_at_k(question.evidence, retrieved.texts, ks)
        if r is None:
            return None
        return EvidenceScore(recall=r, hit={k: 1.0 if v > 0 else 0.0 for k, v in r.items()})

    def reader_passages(self, retrieved: Retrieved, k: int) -> list[tuple[str, str]]:
        """Every retrieved passage, labelled with its section (papers are read by section)."""
        return [(e.section or "paper", t) for e, t in zip(retrieved.evidence, retrieved.texts)]

    def score_answer(self, question: QasperQuestion, raw_answer: str, pred: str) -> dict[str, float]:
        """Accuracy on the raw reply (the gold may be a phrase inside it), F1 on the short answer."""
        return {"score": qasper_accuracy(question.golds, raw_answer), "f1": qasper_token_f1(question.golds, pred)}

    def answer_metrics(self, records: list[Record]) -> dict[str, float]:
        return {"accuracy": sum(r["score"] for r in records) / len(records),
                "f1": sum(r["f1"] for r in records) / len(records)}

    def describe(self, questions: Sequence[QasperQuestion], docs: Mapping[str, str]) -> Meta:
        return {"papers": len(docs), "with_evidence": sum(1 for q in questions if any(q.evidence))}

    def summary_lines(self, meta: Meta) -> list[str]:
        return [
            (f"- papers: {meta['papers']}; questions: {meta['questions']} ({meta['with_evidence']} with evidence "
             f"paragraphs); indexing {meta['index_seconds']:.0f} s; total {meta['total_seconds']:.0f} s"),
            ("- R@k: fraction of an annotator's evidence paragraphs among the top-k retrieved nodes "
             "(max over annotators)."),
        ]


def run(data_dir: Path, methods: Sequence[str], ks: Sequence[int], ablations: Sequence[str] = (),
        **options: Any) -> RunResult:
    """The whole evaluation; writes qasper.json/.md/_recall.png under `out_dir`.
    `options` are `run_methods`'s (limit, offset, only, index_dir, out_dir, settings, llm, ...)."""
    return run_methods(Qasper(data_dir), methods, ks, ablations, **options)
