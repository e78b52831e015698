"""What one benchmark is to the evaluation loop: the `Benchmark` protocol and the values it trades.

The loop (`bookindex.evaluation.loop.run_benchmark`) does everything benchmarks share: index the
documents through the Engine, bind one Engine per table row, ask every question of every row,
time it, summarise, render and write the files. A benchmark supplies only what differs: its
questions, where its documents come from, how one question's evidence and answer are scored,
how reader passages are labelled, its breakdown groups and the lines its report adds. MMLongBench
(`mmlongbench_run.MMLongBench`) and Qasper (`qasper_run.Qasper`) are the two implementations.

A corpus benchmark (documents = a folder of .md/.jsonl records, gold = document ids, metric =
document recall@k) plugs in without touching the loop: its `corpus()` writes one file per record
(as Qasper writes its Markdown) and lists them all in `Corpus.files`; its questions name no
document (`doc=None`), so the loop asks the whole library and the Engine routes; its
`score_evidence` compares `Retrieved.documents` (the files the ranked evidence came from) with
the gold ids; `reader_passages` labels passages with their document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, TypeVar

from bookindex.core.model import DocumentTree, Evidence
from bookindex.operators.passages import Passage, format_passages

# One (question, row) record and a run's meta: JSON objects written as they are (recall and hit
# map k to a value; see report.py), so their values are whatever JSON holds.
Record = dict[str, Any]
Meta = dict[str, Any]
Summary = dict[str, dict[str, Any]]  # row name -> its means (report.summarize)
Group = str | list[str]  # a question may belong to several values of one group


class Question(Protocol):
    """What the loop itself reads of a question; a benchmark's own question type adds its gold."""

    @property
    def qid(self) -> str: ...

    @property
    def doc(self) -> str | None: ...  # a file in `Corpus.folder`; None: ask the whole library

    @property
    def text(self) -> str: ...


Q = TypeVar("Q", bound=Question)


@dataclass(frozen=True)
class Corpus:
    """Where a run's documents are (`folder`/name for each of `files`) and the library they go to."""

    folder: Path
    files: list[str]
    library: Path


@dataclass(frozen=True)
class EvidenceScore:
    """Recall@k and hit@k of one question for one row (k -> value); `extra` holds further
    per-record scores (e.g. "in_evidence"), copied into the record as they are."""

    recall: dict[int, float]
    hit: dict[int, float]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Retrieved:
    """What one row returned for one question, as a benchmark scores it.

    `evidence` is deduplicated, in rank order. Passage texts are read through the Engine only
    when a benchmark asks for them (page recall needs none), so they cost nothing otherwise.
    """

    evidence: list[Evidence]
    tree: DocumentTree | None  # the asked document's tree (None when the question named none)
    read: Callable[[Evidence], str] = field(repr=False)
    names: Mapping[str, str] = field(default_factory=dict, repr=False)  # doc_id -> file name
    # the passages `ask` would give its reader for this ranking at the default evidence budget
    # (evaluation.reader_text); built only when a benchmark reads `reader_text` or `reader_pages`
    prompt: Callable[[], list[Passage]] | None = field(default=None, repr=False)

    @cached_property
    def packed(self) -> list[Passage]:
        return self.prompt() if self.prompt is not None else []

    @property
    def reader_text(self) -> str:
        """The exact evidence text of the reader's prompt ("" when the row has no document)."""
        return format_passages(self.packed)

    @property
    def reader_pages(self) -> set[int]:
        """The 1-based pages the reader's passages show."""
        return {p for x in self.packed for p in range(x.first_page, x.last_page + 1)}

    @cached_property
    def texts(self) -> list[str]:
        """The text a reader gets for each evidence item (`Engine.passage`), row-aligned."""
        return [self.read(e) for e in self.evidence]

    @property
    def documents(self) -> list[str]:
        """The files the evidence came from, in rank order, each once (document-level recall)."""
        return list(dict.fromkeys(self.names.get(e.doc_id, e.doc_id) for e in self.evidence))


class Benchmark(Protocol[Q]):
    """One benchmark: everything the evaluation loop needs that is not the same for all of them.

    Attributes name the run: `name` is the stem of its output files, `title` heads the report,
    `split` is the data folder's name, `recall_label` labels the recall plot's title;
    `breakdowns` lists (group key, caption) pairs for the recall-by-group tables, the keys
    being those `groups` returns.
    """

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def split(self) -> str: ...

    @property
    def recall_label(self) -> str: ...

    @property
    def breakdowns(self) -> Sequence[tuple[str, str]]: ...

    def questions(self, limit: int | None = None) -> list[Q]:
        """The questions of the split (the first `limit`); raises InputError on bad data."""
        ...

    def corpus(self, questions: Sequence[Q], index_dir: Path) -> Corpus:
        """The files to index for these questions (written under `index_dir` first if needed)."""
        ...

    def asked_without_llm(self, question: Q) -> bool:
        """Whether a retrieval-only run (no LLM) asks this question at all."""
        ...

    def record_fields(self, question: Q) -> Record:
        """The gold fields copied into each of the question's records (for the JSON)."""
        ...

    def groups(self, question: Q) -> dict[str, Group]:
        """The question's value(s) for each breakdown group."""
        ...

    def score_evidence(self, question: Q, retrieved: Retrieved, ks: Sequence[int]) -> EvidenceScore | None:
        """Recall@k/hit@k of the retrieved evidence; None excludes the question from recall."""
        ...

    def reader_passages(self, retrieved: Retrieved, k: int) -> list[tuple[str, str]]:
        """(label, text) passages the reader LLM answers from for a row that made no answer."""
        ...

    def score_answer(self, question: Q, raw_answer: str, pred: str) -> dict[str, float]:
        """Scores of one answer (the raw reply and its extracted short form); "score" is required."""
        ...

    def answer_metrics(self, records: list[Record]) -> dict[str, float]:
        """A row's answer metrics over its answered records (keys "accuracy" and "f1" are tabled)."""
        ...

    def describe(self, questions: Sequence[Q], docs: Mapping[str, str]) -> Meta:
        """Counts the report adds to the run's meta (e.g. questions with gold evidence)."""
        ...

    def summary_lines(self, meta: Meta) -> list[str]:
        """The report's bullet lines after the date line: counts, timings, what the metric means."""
        ...
