"""Reference lookup as a `Benchmark`: "which function / command / option does X?" over manuals.

Reference manuals are read differently from reports: a user knows what they want done and asks
for the entry (function, command, option) that does it. The questions (a JSONL file: `id`,
`doc`, `question`, `entry`, `aliases`, `gold_pages`) are asked against their own manual from a
folder of PDFs. Evidence scores page recall@k / hit@k as MMLongBench does; an answer scores 1
when it names the entry (or an alias) as a whole word, and the report adds whether it cites.
The sets shipped with the repository are tests/data/reference_lookup.jsonl (libtasn1 and gnuplot
from ../shared/data/handbooks) and tests/data/handbook_questions.jsonl (fhs-3.0 and zoo; there
`entry` is the short answer a reply should name, and `kind` says what the user asks for).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookindex.core.errors import InputError
from bookindex.evaluation.benchmark import Corpus, EvidenceScore, Group, Meta, Record, Retrieved
from bookindex.evaluation.loop import RunResult, run_methods
from bookindex.evaluation.recall import page_recall_at_k
from bookindex.operators.grounding import cited_numbers


@dataclass(frozen=True)
class ReferenceQuestion:
    qid: str
    doc: str
    text: str
    entry: str
    aliases: tuple[str, ...]
    gold_pages: list[int]

    @property
    def names(self) -> tuple[str, ...]:
        return (self.entry, *self.aliases)


def load_reference_questions(path: Path) -> list[ReferenceQuestion]:
    """The JSONL question set; an InputError names the file and line of a bad record."""
    if not path.is_file():
        raise InputError(f"{path}: question file not found")
    out: list[ReferenceQuestion] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            out.append(ReferenceQuestion(qid=str(r["id"]), doc=str(r["doc"]), text=str(r["question"]),
                                         entry=str(r["entry"]), aliases=tuple(r.get("aliases") or ()),
                                         gold_pages=[int(p) for p in r["gold_pages"]]))
        except (ValueError, KeyError, TypeError) as e:
            raise InputError(f"{path}:{n}: bad question record ({type(e).__name__}: {e})") from e
    return out


def names_entry(answer: str, names: Sequence[str]) -> bool:
    """Whether `answer` names one of `names` as a whole word (`asn1_der_decoding()` counts;
    `asn1_der_decoding2` does not name `asn1_der_decoding`). Underscores and spaces match each
    other, as manuals typeset names both ways."""
    text = answer.lower().replace("_", " ")
    for name in names:
        want = re.escape(name.lower().replace("_", " ")).replace(r"\ ", r"[\s_]+")
        if re.search(rf"(?<![\w-]){want}(?![\w-])", text):
            return True
    return False


class ReferenceLookup:
    """The reference-lookup questions in `questions_path` over the PDFs in `data_dir`."""

    name = "reference"
    title = "Reference lookup (which function / command / option does X)"
    recall_label = "page recall@k"
    breakdowns = (("manual", "manual"),)
    answer_columns = (("named", "accuracy"), ("cites", "cited"))

    def __init__(self, data_dir: Path, questions_path: Path) -> None:
        self.data_dir = Path(data_dir)
        self.questions_path = Path(questions_path)
        self.split = self.questions_path.stem

    def questions(self, limit: int | None = None) -> list[ReferenceQuestion]:
        qs = load_reference_questions(self.questions_path)
        return qs[:limit] if limit else qs

    def corpus(self, questions: Sequence[ReferenceQuestion], index_dir: Path) -> Corpus:
        return Corpus(folder=self.data_dir, files=list(dict.fromkeys(q.doc for q in questions)), library=index_dir)

    def asked_without_llm(self, question: ReferenceQuestion) -> bool:
        return True

    def record_fields(self, question: ReferenceQuestion) -> Record:
        return {"gold_pages": question.gold_pages, "entry": question.entry, "aliases": list(question.aliases)}

    def groups(self, question: ReferenceQuestion) -> dict[str, Group]:
        return {"manual": question.doc}

    def score_evidence(self, question: ReferenceQuestion, retrieved: Retrieved,
                       ks: Sequence[int]) -> EvidenceScore | None:
        rk = page_recall_at_k(retrieved.evidence, question.gold_pages, ks, tree=retrieved.tree)
        return EvidenceScore(recall={k: v.recall for k, v in rk.items()}, hit={k: v.hit for k, v in rk.items()})

    def reader_passages(self, retrieved: Retrieved, k: int) -> list[tuple[str, str]]:
        return [(f"page {e.page}", retrieved.read(e)) for e in retrieved.evidence[:k]]

    def score_answer(self, question: ReferenceQuestion, raw_answer: str, pred: str) -> dict[str, float]:
        return {"score": float(names_entry(raw_answer, question.names)),
                "cited": float(bool(cited_numbers(raw_answer)))}

    def answer_metrics(self, records: list[Record]) -> dict[str, float]:
        n = len(records)
        return {"accuracy": sum(r["score"] for r in records) / n, "cited": sum(r["cited"] for r in records) / n}

    def describe(self, questions: Sequence[ReferenceQuestion], docs: Mapping[str, str]) -> Meta:
        return {}

    def summary_lines(self, meta: Meta) -> list[str]:
        return [
            (f"- questions: {meta['questions']}; manuals: {meta['documents']} (indexed now: {meta['indexed']}, "
             f"reused: {meta['reused']}, indexing {meta['index_seconds']:.0f} s); total {meta['total_seconds']:.0f} s"),
            "- named = the answer names the entry (or an alias) as a whole word; cites = the answer cites [n].",
        ]


def run(data_dir: Path, methods: Sequence[str], ks: Sequence[int], ablations: Sequence[str] = (), *, questions: Path,
        **options: Any) -> RunResult:
    """The whole evaluation of the questions in `questions`; writes reference.json/.md/_recall.png under `out_dir`.
    `options` are `run_methods`'s (limit, offset, only, index_dir, out_dir, settings, llm, ...)."""
    return run_methods(ReferenceLookup(data_dir, questions), methods, ks, ablations, **options)
