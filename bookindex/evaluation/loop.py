"""The one evaluation loop every benchmark runs through, calling only the Engine.

`run_benchmark` indexes a benchmark's documents (reused when unchanged), binds one Engine per
table row, asks every question of every row, scores the evidence (and, with an LLM, the answer)
through the benchmark, summarises, renders and writes the files. What differs per benchmark is
behind `bookindex.evaluation.benchmark.Benchmark`; nothing here knows MMLongBench or Qasper.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from bookindex.core.config import Settings, cache_dir, load_settings
from bookindex.core.errors import BookIndexError, InputError
from bookindex.core.model import Evidence
from bookindex.core.protocols import LLM, Embedder
from bookindex.engine import Engine
from bookindex.evaluation.answering import answer_question, extract_answer
from bookindex.evaluation.benchmark import (
    Benchmark,
    Corpus,
    Meta,
    Q,
    Record,
    Retrieved,
    Summary,
)
from bookindex.evaluation.reader_text import reader_passages
from bookindex.evaluation.recall import context_size, dedupe
from bookindex.evaluation.report import render_report, summarize, write_report
from bookindex.evaluation.rows import Row, bind_rows, make_rows, retrieve, retrieve_corpus

T = TypeVar("T")


# A method may fail on a handful of questions (one unparsable PDF, one timed-out LLM call) and its
# row still means something; past this many, its figures are mostly zeros from errors and the
# run must not pass for a measurement. More than max(MIN_ERRORS, ERROR_SHARE of its questions)
# errors fail the run (`method_failures`), after its report is written.
MIN_ERRORS = 2
ERROR_SHARE = 0.05


@dataclass
class RunResult:
    records: list[Record]
    summary: Summary
    meta: Meta
    markdown: str
    files: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # one line per method over the error limit


def error_limit(questions: int) -> float:
    """The most errors a method may have on `questions` questions and still pass."""
    return max(MIN_ERRORS, ERROR_SHARE * questions)


def method_failures(records: Sequence[Record], methods: Sequence[str]) -> list[str]:
    """One line per method that errored on more questions than `error_limit` allows, with its
    first error: what a command-line run prints before exiting non-zero."""
    out: list[str] = []
    for method in methods:
        recs = [r for r in records if r["method"] == method]
        errors = [r for r in recs if r.get("error")]
        if len(errors) > error_limit(len(recs)):
            first = errors[0]
            out.append(f"{method}: {len(errors)} of {len(recs)} questions failed (more than "
                       f"max({MIN_ERRORS}, {ERROR_SHARE:.0%})); first, {first['qid']}: {first['error']}")
    return out


def run_settings(ks: Sequence[int], settings: Settings | None) -> tuple[list[int], Settings]:
    """The k values, sorted and checked, and the settings (loaded when not given) of a run."""
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise InputError("--k: give positive integers, e.g. 1,3,5,10")
    return ks, settings if settings is not None else load_settings()


def default_index_dir(settings: Settings, split: str) -> Path:
    """<cache dir>/eval/<split>: never inside the (read-only, shared) data folder."""
    return cache_dir(settings) / "eval" / split


def open_engine(settings: Settings, index_dir: Path, *, llm: LLM | None = None,
                embedder: Embedder | None = None, index_without_llm: bool = False) -> tuple[Engine, LLM]:
    """The Engine an evaluation run indexes with, and the LLM that answers (shared by every row).

    With `index_without_llm` the library indexes in no-LLM mode, so one index serves both the
    retrieval-only and the answering runs; the LLM then only answers.
    """
    if llm is None:
        llm = Engine(None, settings).providers.llm
    index_settings = settings.with_overrides({"llm.provider": "none"}) if index_without_llm else settings
    engine = Engine(index_dir, index_settings, embedder=embedder,
                    llm=Engine(None, index_settings).providers.llm if index_without_llm else llm)
    return engine, llm


def _progress(items: Sequence[T], desc: str, unit: str, show: bool) -> Iterable[T]:
    if not show:
        return items
    from tqdm import tqdm  # optional progress bar: loaded only when shown

    return tqdm(items, desc=desc, unit=unit)


def open_documents(engine: Engine, corpus: Corpus, progress: bool = True) -> tuple[dict[str, str], Meta]:
    """Each file's document id, via `Engine.index`, which is a no-op (status "unchanged") for a
    file already indexed with the same options: a second run reuses it. A file that fails to
    index is timed with its error and left out, so only its questions fail."""
    docs: dict[str, str] = {}
    timing: Meta = {}
    for name in _progress(list(dict.fromkeys(corpus.files)), "index", "doc", progress):
        path = corpus.folder / name
        if not path.is_file():
            raise InputError(f"{path}: document named by the questions not found")
        t0 = time.perf_counter()
        try:
            report = engine.index(path)
        except BookIndexError as e:
            timing[name] = {"reused": False, "seconds": round(time.perf_counter() - t0, 2),
                            "error": f"{type(e).__name__}: {e}"}
            continue
        docs[name] = report.doc_id
        timing[name] = {"reused": report.status == "unchanged", "seconds": round(time.perf_counter() - t0, 2)}
    return docs, timing


def evidence_entry(ev: Evidence) -> Record:
    """How one retrieved unit is written into a record."""
    entry: Record = {"node_id": ev.node_id, "page": ev.page, "type": ev.type, "rank": ev.rank}
    if "chunk_index" in ev.scores:
        entry["chunk_index"] = int(ev.scores["chunk_index"])
    return entry


def ask_one(benchmark: Benchmark[Q], q: Q, row: Row, docs: Mapping[str, str], ks: Sequence[int],
            llm: LLM | None) -> Record:
    """One (question, row) record: retrieve through the row's Engine, score through the
    benchmark, and with an LLM answer (rows that made no answer read the top passages)."""
    kmax = max(ks)
    doc = docs.get(q.doc) if q.doc is not None else None
    rec: Record = {"qid": q.qid, "doc": q.doc, "method": row.name, "question": q.text,
                   **benchmark.record_fields(q), "groups": benchmark.groups(q),
                   "recall": None, "hit": None, "error": None, "citation_check": None}
    t0 = time.perf_counter()
    evidence: list[Evidence] = []
    raw: str | None = None
    try:
        if q.doc is not None and doc is None:
            raise InputError(f"{q.doc}: document could not be indexed")
        if row.corpus is not None:
            evidence, raw, cost = retrieve_corpus(row, q.text, kmax)
            rec.update(cost)
        else:
            evidence, raw, rec["citation_check"] = retrieve(row, doc, q.text, kmax)
    except Exception as e:  # one failing question must not end a 20-minute run: it scores 0
        rec["error"] = f"{type(e).__name__}: {e}"
    rec["seconds"] = round(time.perf_counter() - t0, 4)
    ranked = dedupe(evidence)
    tree = row.engine.tree(doc) if doc is not None else None
    rec["nodes"], rec["chars"] = context_size(ranked, tree)
    # baselines read their plain top-k units, as the papers' baselines do; bookindex rows read
    # passages (the node with its entry or paragraph), which is part of the method
    got = Retrieved(ranked, tree, read=lambda e: row.engine.passage(doc or e.doc_id, e, context=row.method == "bookindex"),
                    names={i: name for name, i in docs.items()},
                    prompt=(lambda: reader_passages(row.engine.open(doc), evidence, question=q.text,
                                                    computed=row.method == "bookindex")) if doc is not None else None)
    score = benchmark.score_evidence(q, got, ks)
    if score is not None:
        rec["recall"], rec["hit"] = score.recall, score.hit
        rec.update(score.extra)
    rec["evidence"] = [evidence_entry(e) for e in ranked]
    # a benchmark may skip answering a question it cannot score (a SciFact claim has no reference text)
    if llm is not None and not rec["error"] and getattr(benchmark, "wants_answer", lambda _q: True)(q):
        try:
            # a benchmark may answer and score in its own format (the corpus one: free answers)
            answer_fn = getattr(benchmark, "answer_question", answer_question)
            if raw is None:
                raw = answer_fn(llm, q.text, benchmark.reader_passages(got, kmax))
            pred = extract_answer(llm, q.text, raw) if getattr(benchmark, "extracts_answer", True) else raw
            rec["raw_answer"], rec["pred"] = raw, pred
            rec.update(benchmark.score_answer(q, raw, pred))
        except Exception as e:
            rec["error"] = f"answer: {type(e).__name__}: {e}"
    elif raw is not None:
        rec["raw_answer"] = raw  # the method's own answer, kept for reading though not scored
    return rec


def ask_all(benchmark: Benchmark[Q], questions: Sequence[Q], docs: Mapping[str, str], rows: Sequence[Row],
            ks: Sequence[int], llm: LLM | None = None, progress: bool = True) -> list[Record]:
    """One record per (question, row); a retrieval-only run skips what the benchmark says to."""
    answering = llm if llm is not None and llm.available else None
    todo = [q for q in questions if answering is not None or benchmark.asked_without_llm(q)]
    pairs = [(q, r) for q in todo for r in rows]
    records: list[Record] = []
    for q, row in _progress(pairs, "ask", "q", progress):
        records.append(ask_one(benchmark, q, row, docs, ks, answering))
    return records


def llm_label(llm: LLM, settings: Settings) -> str:
    cfg = getattr(llm, "settings", None) or settings.llm  # the client's own settings when it has them
    return f"{cfg.provider} {cfg.model}".strip()


def machine_info() -> str:
    cpus = os.cpu_count()
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    return f"{platform.system()} {platform.machine()}, {cpus} cores, Python {platform.python_version()}"


def select_questions(benchmark: Benchmark[Q], offset: int = 0, limit: int | None = None,
                     only: Mapping[str, str] | None = None) -> list[Q]:
    """The questions a run asks: those whose breakdown groups hold every `only` value (e.g.
    {"source": "text"}), then `limit` of them from `offset` (a long run split in parts)."""
    if offset < 0 or (limit is not None and limit < 1):
        raise InputError("--offset must be >= 0 and --limit >= 1")
    qs = benchmark.questions(None)
    for group, value in (only or {}).items():
        def has(q: Q, group: str = group, value: str = value) -> bool:
            g = benchmark.groups(q).get(group)
            return value in (g if isinstance(g, list) else [g])
        if group not in dict(benchmark.breakdowns):
            raise InputError(f"--only {group}=...: the groups are {', '.join(g for g, _ in benchmark.breakdowns)}")
        qs = [q for q in qs if has(q)]
    return qs[offset:offset + limit] if limit else qs[offset:]


def run_benchmark(benchmark: Benchmark[Q], rows: Sequence[Row], ks: Sequence[int], *, settings: Settings,
                  index_dir: Path, limit: int | None = None, offset: int = 0,
                  only: Mapping[str, str] | None = None, out_dir: Path | None = None,
                  llm: LLM | None = None, embedder: Embedder | None = None, index_without_llm: bool = False,
                  progress: bool = True, command: str | None = None) -> RunResult:
    """The whole evaluation of `benchmark` for `rows` (ks sorted); with `out_dir`, writes
    <name>.json, <name>.md and <name>_recall.png there."""
    t_start = time.perf_counter()
    questions = select_questions(benchmark, offset, limit, only)
    corpus = benchmark.corpus(questions, Path(index_dir))
    engine, llm = open_engine(settings, corpus.library, llm=llm, embedder=embedder,
                              index_without_llm=index_without_llm)
    t_idx = time.perf_counter()
    docs, timing = open_documents(engine, corpus, progress)
    index_seconds = time.perf_counter() - t_idx
    bind_rows(rows, engine, llm)
    records = ask_all(benchmark, questions, docs, rows, ks, llm=llm, progress=progress)
    names = [r.name for r in rows]
    summary = summarize(records, names, ks, benchmark.answer_metrics)
    use_llm = llm.available
    meta: Meta = {
        "split": benchmark.split, "command": command or " ".join(sys.argv),
        "date": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"), "machine": machine_info(),
        "llm": llm_label(llm, settings) if use_llm else "none (retrieval only)",
        "questions": len(questions), "index_seconds": index_seconds, "index_timing": timing,
        "ks": list(ks), "rows": names, "evidence_tokens": settings.retrieval.evidence_tokens,
        **benchmark.describe(questions, docs),
        "documents": len(timing),
        "indexed": sum(1 for t in timing.values() if not t["reused"] and "error" not in t),
        "reused": sum(1 for t in timing.values() if t["reused"]),
        "index_failures": {n: t["error"] for n, t in timing.items() if "error" in t},
    }
    if use_llm:
        meta["llm_usage"] = llm.ledger.snapshot()
    meta["total_seconds"] = time.perf_counter() - t_start
    md = render_report(benchmark, summary, records, names, ks, meta)
    result = RunResult(records=records, summary=summary, meta=meta, markdown=md,
                       failures=method_failures(records, names))
    if out_dir is not None:
        result.files = write_report(benchmark, Path(out_dir), summary, records, names, ks, meta, md)
    return result


def run_methods(benchmark: Benchmark[Q], methods: Sequence[str], ks: Sequence[int], ablations: Sequence[str] = (),
                limit: int | None = None, index_dir: Path | None = None, out_dir: Path | None = None,
                offset: int = 0, only: Mapping[str, str] | None = None, settings: Settings | None = None,
                llm: LLM | None = None, embedder: Embedder | None = None,
                progress: bool = True, command: str | None = None, index_without_llm: bool = False) -> RunResult:
    """`run_benchmark` from the command line's words: method and ablation names, the k values,
    the index folder defaulting to <cache dir>/eval/<split>. Each benchmark's `run` is this."""
    ks, settings = run_settings(ks, settings)
    rows = make_rows(methods, ablations, settings)
    index_dir = Path(index_dir) if index_dir else default_index_dir(settings, benchmark.split)
    return run_benchmark(benchmark, rows, ks, settings=settings, index_dir=index_dir, limit=limit,
                         offset=offset, only=only,
                         out_dir=out_dir, llm=llm, embedder=embedder, index_without_llm=index_without_llm,
                         progress=progress, command=command)
