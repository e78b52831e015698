"""MMLongBench-Doc as a `Benchmark`, and the run behind scripts/eval_mmlongbench.py.

Each PDF of the split (`<data>/documents/`) is indexed once into a reusable library; every
question is asked against its own document. Evidence scores page recall@k / hit@k (k counts
retrieved nodes, see recall.py); answers are scored by the benchmark's answer_format rules and
summed into accuracy and its F1. A retrieval-only run asks only questions with evidence pages.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from bookindex.core.errors import InputError
from bookindex.evaluation.answer_match import answer_in_text, is_short_answer
from bookindex.evaluation.benchmark import (
    Corpus,
    EvidenceScore,
    Group,
    Meta,
    Record,
    Retrieved,
)
from bookindex.evaluation.loop import RunResult, run_methods
from bookindex.evaluation.mmlongbench import f1_mmlongbench, score_answer
from bookindex.evaluation.recall import page_recall_at_k, parse_gold_pages
from bookindex.parsing.pdf_open import open_pdf

SOURCE_NAMES = {
    "pure-text (plain-text)": "text", "table": "table", "chart": "chart", "figure": "figure",
    "generalized-text (layout)": "layout",
}


@dataclass(frozen=True)
class MMLongBenchQuestion:
    """One question of questions.json: `doc` is its PDF's file name, `answer` the gold answer."""

    qid: str
    doc: str
    text: str
    gold_pages: list[int]
    answer: str | None
    answer_format: str | None
    sources: list[str]
    doc_type: str


def sources_of(raw: str | Sequence[str] | None) -> list[str]:
    """The evidence sources ("['Pure-text (Plain-text)', 'Table']") as short group names."""
    try:
        items = ast.literal_eval(raw) if isinstance(raw, str) else list(raw or [])
    except (ValueError, SyntaxError):
        items = []
    return sorted({SOURCE_NAMES.get(str(s).strip().lower(), str(s).strip().lower()) for s in items})


def load_questions(data_dir: Path, limit: int | None = None) -> list[MMLongBenchQuestion]:
    qpath = data_dir / "questions.json"
    if not qpath.is_file():
        raise InputError(f"{qpath}: not found; DATA_DIR must hold questions.json and documents/")
    try:
        items = json.loads(qpath.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(f"{qpath}: not valid JSON ({e})") from e
    if not isinstance(items, list) or not all(isinstance(q, dict) and "doc_id" in q for q in items):
        raise InputError(f"{qpath}: expected a list of question objects with a doc_id")
    items = items[:limit] if limit else items
    docs = data_dir / "documents"
    return [MMLongBenchQuestion(
        qid=str(q.get("qid", f"{q['doc_id']}-{i}")), doc=q["doc_id"], text=q["question"],
        gold_pages=physical_pages(docs / q["doc_id"], tuple(parse_gold_pages(q.get("evidence_pages")))),
        answer=q.get("answer"),
        answer_format=q.get("answer_format"), sources=sources_of(q.get("evidence_sources") or "[]"),
        doc_type=q.get("doc_type", "")) for i, q in enumerate(items)]


@lru_cache(maxsize=256)
def _page_count_and_labels(pdf: Path) -> tuple[int, tuple[str, ...]]:
    try:
        with open_pdf(pdf) as d:
            return d.page_count, tuple(d[i].get_label() or "" for i in range(d.page_count))
    except InputError:
        return 0, ()


def physical_pages(pdf: Path, pages: tuple[int, ...]) -> list[int]:
    """Gold pages as 1-based physical pages. A few questions give the page number the PDF's page
    labels print (a 40-sheet excerpt of a guidebook labelled 287-321 has gold page 310): a page
    beyond the document that a label names is the sheet with that label. Every other page is
    kept as given (a page the PDF cannot have and no label names stays, and scores nothing)."""
    if not pages:
        return []
    count, labels = _page_count_and_labels(pdf)
    if not count or all(1 <= p <= count for p in pages):
        return list(pages)
    by_label = {lab.strip(): i + 1 for i, lab in reversed(list(enumerate(labels))) if lab.strip()}
    return sorted({by_label.get(str(p), p) if not 1 <= p <= count else p for p in pages})


@lru_cache(maxsize=512)
def gold_pages_text(pdf: Path, pages: tuple[int, ...]) -> str:
    """The PDF text layer of the 1-based `pages` of `pdf` (PyMuPDF), "" for an unreadable file."""
    try:
        with open_pdf(pdf) as d:
            return "\n".join(d[p - 1].get_text() for p in pages if 1 <= p <= d.page_count)
    except InputError:
        return ""


class MMLongBench:
    """The MMLongBench-Doc split in `data_dir` (questions.json + documents/*.pdf)."""

    name = "mmlongbench"
    title = "MMLongBench-Doc"
    recall_label = "recall@k"
    breakdowns = (("source", "evidence source"), ("doc_type", "document type"))

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.split = self.data_dir.name

    def questions(self, limit: int | None = None) -> list[MMLongBenchQuestion]:
        return load_questions(self.data_dir, limit)

    def corpus(self, questions: Sequence[MMLongBenchQuestion], index_dir: Path) -> Corpus:
        """The PDFs as they are; the library is the index folder itself."""
        return Corpus(folder=self.data_dir / "documents", files=list(dict.fromkeys(q.doc for q in questions)),
                      library=index_dir)

    def asked_without_llm(self, question: MMLongBenchQuestion) -> bool:
        return bool(question.gold_pages)

    def short_answer(self, question: MMLongBenchQuestion) -> bool:
        """Whether answer-in-evidence applies: a short Str/Int/Float answer with gold pages."""
        return is_short_answer(question.answer, question.answer_format, answerable=bool(question.gold_pages))

    def text_answerable(self, question: MMLongBenchQuestion) -> bool:
        """Whether the gold pages' PDF text layer prints the answer (by the same matcher): what
        retrieval alone decides, as opposed to answers only a chart, figure or scan shows."""
        text = gold_pages_text(self.data_dir / "documents" / question.doc, tuple(question.gold_pages))
        return answer_in_text(str(question.answer), text)

    def record_fields(self, question: MMLongBenchQuestion) -> Record:
        fields: Record = {"gold_pages": question.gold_pages, "answer_format": question.answer_format,
                          "gold_answer": question.answer}
        if self.short_answer(question):
            fields["text_answerable"] = self.text_answerable(question)
        return fields

    def groups(self, question: MMLongBenchQuestion) -> dict[str, Group]:
        return {"source": question.sources, "doc_type": question.doc_type}

    def score_evidence(self, question: MMLongBenchQuestion, retrieved: Retrieved,
                       ks: Sequence[int]) -> EvidenceScore | None:
        """Page recall@k: a leaf counts its pages, a section node only its heading's page."""
        if not question.gold_pages:
            return None
        rk = page_recall_at_k(retrieved.evidence, question.gold_pages, ks, tree=retrieved.tree)
        extra = {"in_evidence": answer_in_text(str(question.answer), retrieved.reader_text),
                 "page_shown": bool(retrieved.reader_pages & set(question.gold_pages))} \
            if self.short_answer(question) else {}
        return EvidenceScore(recall={k: v.recall for k, v in rk.items()}, hit={k: v.hit for k, v in rk.items()},
                             extra=extra)

    def reader_passages(self, retrieved: Retrieved, k: int) -> list[tuple[str, str]]:
        """The top k passages, labelled with their page (MMLongBench questions cite pages)."""
        return [(f"page {e.page}", retrieved.read(e)) for e in retrieved.evidence[:k]]

    def score_answer(self, question: MMLongBenchQuestion, raw_answer: str, pred: str) -> dict[str, float]:
        return {"score": score_answer(question.answer, pred, question.answer_format or "Str")}

    def answer_metrics(self, records: list[Record]) -> dict[str, float]:
        return f1_mmlongbench([r["gold_answer"] for r in records], [r["pred"] for r in records],
                              [r["score"] for r in records])

    def describe(self, questions: Sequence[MMLongBenchQuestion], docs: Mapping[str, str]) -> Meta:
        return {"answerable": sum(1 for q in questions if q.gold_pages)}

    def summary_lines(self, meta: Meta) -> list[str]:
        return [
            (f"- questions: {meta['questions']} ({meta['answerable']} with evidence pages); documents: "
             f"{meta['documents']} (indexed now: {meta['indexed']}, reused: {meta['reused']}, "
             f"indexing {meta['index_seconds']:.0f} s); total {meta['total_seconds']:.0f} s"),
            ("- k counts retrieved nodes; a section node counts only its heading's page. nodes/q and chars/q: "
             "everything a method returned (baselines: the top max(k)); errors count as recall 0."),
            (f"- answer in evidence: a short gold answer (Str/Int/Float, at most 60 characters, with evidence pages) "
             f"occurs in the passages the reader gets at the default budget ({meta.get('evidence_tokens')} tokens, "
             "packed as `ask` packs them); text-answerable: the gold pages' PDF text prints the answer; page shown: "
             "a gold page is among the pages those passages show (what a computed answer needs)."),
        ]


def run(data_dir: Path, methods: Sequence[str], ks: Sequence[int], ablations: Sequence[str] = (),
        **options: Any) -> RunResult:
    """The whole evaluation; writes mmlongbench.json/.md/_recall.png under `out_dir`.
    `options` are `run_methods`'s (limit, offset, only, index_dir, out_dir, settings, llm, ...)."""
    return run_methods(MMLongBench(data_dir), methods, ks, ablations, **options)
