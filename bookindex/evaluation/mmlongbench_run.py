"""The MMLongBench-Doc evaluation run behind scripts/eval_mmlongbench.py.

Indexes each PDF of the split once into a reusable library (a second run reuses it), asks
every question against its own document with each method (baselines, bookindex, bookindex
ablations), and scores page recall@k / hit@k, context size and, with an LLM, answer accuracy.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from bookindex.core.config import Settings, cache_dir, load_settings
from bookindex.core.errors import BookIndexError, InputError
from bookindex.core.model import Evidence
from bookindex.core.protocols import LLM, Embedder
from bookindex.engine import Engine
from bookindex.evaluation.answering import answer_question, extract_answer
from bookindex.evaluation.mmlongbench import f1_mmlongbench, score_answer
from bookindex.evaluation.recall import context_size, dedupe, page_recall_at_k, parse_gold_pages
from bookindex.evaluation.report import (
    breakdown,
    markdown_breakdown,
    markdown_main,
    plot_recall,
    summarize,
)

ABLATIONS = {
    "no_planning": "planning",
    "no_selector": "selector",
    "no_graph": "graph_reasoning",
    "no_text": "text_reasoning",
}
SOURCE_NAMES = {
    "pure-text (plain-text)": "text", "table": "table", "chart": "chart", "figure": "figure",
    "generalized-text (layout)": "layout",
}
ALL_METHODS = ("bm25", "dense", "hybrid", "chunks", "tree", "bookindex", "bm25-pages")


@dataclass
class Row:
    """One table row: a method, with the settings it runs under (ablations differ here), and
    the Engine that answers for it (bound by `bind_rows`: one per row, providers shared)."""

    name: str
    method: str
    settings: Settings
    engine: Engine = field(init=False, repr=False)


def bind_rows(rows: Sequence[Row], indexer: Engine, llm: LLM) -> None:
    """Give each row an Engine over the indexer's library with the row's settings, the
    indexer's embedder and reranker, and the answering LLM (one of each for the whole run)."""
    for row in rows:
        row.engine = Engine(indexer.root, row.settings, llm=llm, embedder=indexer.embedder,
                            reranker=indexer.reranker, vlm=indexer.vlm)


@dataclass
class RunResult:
    records: list[dict[str, Any]]
    summary: dict[str, dict[str, Any]]
    meta: dict[str, Any]
    markdown: str
    files: dict[str, str] = field(default_factory=dict)


def default_index_dir(settings: Any, data_dir: Path) -> Path:
    """<cache dir>/eval/<split>: never inside the (read-only, shared) data folder."""
    return cache_dir(settings) / "eval" / data_dir.name


def load_questions(data_dir: Path, limit: int | None = None) -> list[dict[str, Any]]:
    qpath = data_dir / "questions.json"
    if not qpath.is_file():
        raise InputError(f"{qpath}: not found; DATA_DIR must hold questions.json and documents/")
    try:
        questions = json.loads(qpath.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(f"{qpath}: not valid JSON ({e})") from e
    if not isinstance(questions, list) or not all(isinstance(q, dict) and "doc_id" in q for q in questions):
        raise InputError(f"{qpath}: expected a list of question objects with a doc_id")
    return questions[:limit] if limit else questions


def sources_of(q: dict[str, Any]) -> list[str]:
    raw = q.get("evidence_sources") or "[]"
    try:
        import ast

        items = ast.literal_eval(raw) if isinstance(raw, str) else list(raw)
    except (ValueError, SyntaxError):
        items = []
    return sorted({SOURCE_NAMES.get(str(s).strip().lower(), str(s).strip().lower()) for s in items})


def make_rows(methods: Sequence[str], ablations: Sequence[str], settings: Any) -> list[Row]:
    rows: list[Row] = []
    for m in methods:
        if m not in ALL_METHODS:
            raise InputError(f"--method: unknown method {m!r}; choose from {', '.join(ALL_METHODS)}")
        rows.append(Row(m, m, settings))
    for a in ablations:
        if a not in ABLATIONS:
            raise InputError(f"--ablation: unknown ablation {a!r}; choose from {', '.join(ABLATIONS)}")
        rows.append(Row(f"bookindex {a}", "bookindex", settings.with_overrides({f"retrieval.{ABLATIONS[a]}": False})))
    return rows


def open_documents(engine: Engine, data_dir: Path, names: Sequence[str],
                   progress: bool = True) -> tuple[dict[str, str], dict[str, Any]]:
    """Each needed file's document id, via `Engine.index`, which is a no-op (status "unchanged")
    for a file already indexed with the same options: a second run reuses it."""
    docs: dict[str, str] = {}
    timing: dict[str, Any] = {}
    todo = list(dict.fromkeys(names))
    iterator: Any = todo
    if progress:
        from tqdm import tqdm

        iterator = tqdm(todo, desc="index", unit="doc")
    for name in iterator:
        path = data_dir / "documents" / name
        if not path.is_file():
            raise InputError(f"{path}: document named by the questions not found")
        t0 = time.perf_counter()
        try:
            report = engine.index(path)
        except BookIndexError as e:  # one unparsable file must not end the run: its questions fail
            timing[name] = {"reused": False, "seconds": round(time.perf_counter() - t0, 2),
                            "error": f"{type(e).__name__}: {e}"}
            continue
        docs[name] = report.doc_id
        reused = report.status == "unchanged"
        timing[name] = {"reused": reused, "seconds": round(time.perf_counter() - t0, 2)}
    return docs, timing


def retrieve(row: Row, doc: str, question: str, k: int) -> tuple[list[Evidence], str | None]:
    """Ranked evidence for one question (and bookindex's own answer text, when it made one)."""
    if row.method == "bookindex":
        ans = row.engine.ask(question, doc=doc, method="bookindex")
        return list(ans.evidence), (ans.answer or None)
    return row.engine.search(question, doc=doc, method=row.method, k=k), None


def evaluate(questions: Sequence[dict[str, Any]], docs: dict[str, str], rows: Sequence[Row],
             ks: Sequence[int], llm: LLM | None = None, progress: bool = True) -> list[dict[str, Any]]:
    """One record per (question, row). Without an LLM only answerable questions are asked."""
    use_llm = llm is not None and getattr(llm, "available", False)
    kmax = max(ks)
    todo = [q for q in questions if use_llm or parse_gold_pages(q.get("evidence_pages"))]
    records: list[dict[str, Any]] = []
    iterator: Any = [(q, r) for q in todo for r in rows]
    if progress:
        from tqdm import tqdm

        iterator = tqdm(iterator, desc="ask", unit="q")
    for q, row in iterator:
        doc = docs.get(q["doc_id"])
        gold = parse_gold_pages(q.get("evidence_pages"))
        rec: dict[str, Any] = {
            "qid": q.get("qid"), "doc": q["doc_id"], "method": row.name, "question": q["question"],
            "gold_pages": gold, "answer_format": q.get("answer_format"), "gold_answer": q.get("answer"),
            "groups": {"source": sources_of(q), "doc_type": q.get("doc_type", "")},
            "recall": None, "hit": None, "error": None,
        }
        t0 = time.perf_counter()
        evidence: list[Evidence] = []
        raw_answer: str | None = None
        try:
            if doc is None:
                raise InputError(f"{q['doc_id']}: document could not be indexed")
            evidence, raw_answer = retrieve(row, doc, q["question"], kmax)
        except Exception as e:  # one failing question must not end a 20-minute run
            rec["error"] = f"{type(e).__name__}: {e}"
        rec["seconds"] = round(time.perf_counter() - t0, 4)
        tree = row.engine.tree(doc) if doc is not None else None
        rec["nodes"], rec["chars"] = context_size(evidence, tree)
        if gold:
            rk = page_recall_at_k(evidence, gold, ks, tree=tree)
            rec["recall"] = {k: v.recall for k, v in rk.items()}
            rec["hit"] = {k: v.hit for k, v in rk.items()}
        rec["evidence"] = [{"node_id": e.node_id, "page": e.page, "type": e.type, "rank": e.rank,
                            **({"chunk_index": int(e.scores["chunk_index"])} if "chunk_index" in e.scores else {})}
                           for e in dedupe(evidence)]
        if use_llm and not rec["error"]:
            try:
                if raw_answer is None:
                    passages = [(f"page {e.page}", row.engine.passage(doc, e)) for e in dedupe(evidence)[:kmax]]
                    raw_answer = answer_question(llm, q["question"], passages)
                pred = extract_answer(llm, q["question"], raw_answer)
                rec["raw_answer"], rec["pred"] = raw_answer, pred
                rec["score"] = score_answer(q.get("answer"), pred, q.get("answer_format") or "Str")
            except Exception as e:
                rec["error"] = f"answer: {type(e).__name__}: {e}"
        records.append(rec)
    return records


def answer_metrics(recs: list[dict[str, Any]]) -> dict[str, float]:
    return f1_mmlongbench([r["gold_answer"] for r in recs], [r["pred"] for r in recs], [r["score"] for r in recs])


def llm_label(llm: Any, settings: Any) -> str:
    cfg = getattr(llm, "settings", None) or settings.llm
    return f"{cfg.provider} {cfg.model}".strip()


def machine_info() -> str:
    cpus = os.cpu_count()
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    return f"{platform.system()} {platform.machine()}, {cpus} cores, Python {platform.python_version()}"


def render(summary: dict[str, dict[str, Any]], records: Sequence[dict[str, Any]], rows: Sequence[str],
           ks: Sequence[int], meta: dict[str, Any]) -> str:
    hit_k = 5 if 5 in ks else max(ks)
    bk = 5 if 5 in ks else max(ks)
    has_answers = any("answers" in s for s in summary.values())
    extra = [("acc", "accuracy"), ("F1", "f1")] if has_answers else []
    parts = [
        f"# MMLongBench-Doc ({meta['split']})",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; machine: {meta['machine']}; LLM: {meta['llm']}",
        f"- questions: {meta['questions']} ({meta['answerable']} with evidence pages); documents: "
        f"{meta['documents']} (indexed now: {meta['indexed']}, reused: {meta['reused']}, "
        f"indexing {meta['index_seconds']:.0f} s); total {meta['total_seconds']:.0f} s",
        "- k counts retrieved nodes; a section node counts only its heading's page. nodes/q and chars/q: "
        "everything a method returned (baselines: the top max(k)); errors count as recall 0.",
        *([f"- documents that failed to index: {', '.join(meta['index_failures'])}"] if meta.get("index_failures") else []),
        "",
        markdown_main(summary, ks, hit_k, extra),
        "",
        f"Recall@{bk} by evidence source:",
        "",
        markdown_breakdown(breakdown(records, rows, "source", bk), "method"),
        "",
        f"Recall@{bk} by document type:",
        "",
        markdown_breakdown(breakdown(records, rows, "doc_type", bk), "method"),
    ]
    return "\n".join(parts) + "\n"



def run_settings(ks: Sequence[int], settings: Any) -> tuple[list[int], Any]:
    """The k values, sorted and checked, and the settings (loaded when not given) of a run."""
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise InputError("--k: give positive integers, e.g. 1,3,5,10")
    if settings is None:
        settings = load_settings()
    return ks, settings


def open_engine(settings: Settings, index_dir: Path | None, *, llm: LLM | None = None,
                embedder: Embedder | None = None, index_without_llm: bool = False) -> tuple[Engine, LLM]:
    """The Engine an evaluation run indexes with, and the LLM that answers (shared by every row).

    With `index_without_llm` the library indexes in no-LLM mode, so one index serves both the
    retrieval-only and the answering runs; the LLM then only answers.
    """
    if index_dir is None:
        raise InputError("an evaluation run needs an index folder")
    if llm is None:
        llm = Engine(None, settings).llm
    index_settings = settings.with_overrides({"llm.provider": "none"}) if index_without_llm else settings
    engine = Engine(index_dir, index_settings, embedder=embedder,
                    llm=Engine(None, index_settings).llm if index_without_llm else llm)
    return engine, llm


@dataclass
class Asked:
    """What a benchmark run has once every question was asked of every row, scored and summed."""

    docs: dict[str, str]
    records: list[dict[str, Any]]
    names: list[str]
    summary: dict[str, Any]
    use_llm: bool
    meta: dict[str, Any]  # the fields both benchmarks report; each run adds its own


def index_and_ask(engine: Engine, doc_dir: Path, doc_names: Sequence[str], questions: Sequence[dict[str, Any]],
                  rows: Sequence[Row], ks: Sequence[int], evaluate_fn: Any, metrics_fn: Any, *, llm: LLM,
                  settings: Settings, split: str, command: str | None, progress: bool) -> Asked:
    """Open (index when needed) the documents, ask every question of every row, summarise."""
    t_idx = time.perf_counter()
    docs, timing = open_documents(engine, doc_dir, list(doc_names), progress)
    index_seconds = time.perf_counter() - t_idx
    bind_rows(rows, engine, llm)
    records = evaluate_fn(questions, docs, rows, ks, llm=llm, progress=progress)
    names = [r.name for r in rows]
    summary = summarize(records, names, ks, metrics_fn)
    use_llm = llm.available
    meta = {
        "split": split, "command": command or " ".join(sys.argv),
        "date": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"), "machine": machine_info(),
        "llm": llm_label(llm, settings) if use_llm else "none (retrieval only)",
        "questions": len(questions), "index_seconds": index_seconds, "index_timing": timing,
        "ks": list(ks), "rows": names,
    }
    return Asked(docs, records, names, summary, use_llm, meta)


def run(data_dir: Path, methods: Sequence[str], ks: Sequence[int], ablations: Sequence[str] = (),
        limit: int | None = None, index_dir: Path | None = None, out_dir: Path | None = None,
        settings: Settings | None = None, llm: LLM | None = None, embedder: Embedder | None = None,
        progress: bool = True, command: str | None = None, index_without_llm: bool = False) -> RunResult:
    """The whole evaluation; writes mmlongbench.json/.md/_recall.png under `out_dir`."""
    t_start = time.perf_counter()
    data_dir = Path(data_dir)
    ks, settings = run_settings(ks, settings)
    questions = load_questions(data_dir, limit)
    rows = make_rows(methods, ablations, settings)
    index_dir = Path(index_dir) if index_dir else default_index_dir(settings, data_dir)
    engine, llm = open_engine(settings, index_dir, llm=llm, embedder=embedder, index_without_llm=index_without_llm)
    asked = index_and_ask(engine, data_dir, [q["doc_id"] for q in questions], questions, rows, ks, evaluate,
                          answer_metrics, llm=llm, settings=settings, split=data_dir.name,
                          command=command, progress=progress)
    records, names, summary, use_llm = asked.records, asked.names, asked.summary, asked.use_llm
    timing = asked.meta["index_timing"]
    meta = {
        **asked.meta,
        "answerable": sum(1 for q in questions if parse_gold_pages(q.get("evidence_pages"))),
        "documents": len(timing), "indexed": sum(1 for t in timing.values() if not t["reused"] and "error" not in t),
        "reused": sum(1 for t in timing.values() if t["reused"]),
        "index_failures": {n: t["error"] for n, t in timing.items() if "error" in t},
    }
    if use_llm:
        meta["llm_usage"] = llm.ledger.snapshot()
    meta["total_seconds"] = time.perf_counter() - t_start
    md = render(summary, records, names, ks, meta)
    result = RunResult(records=records, summary=summary, meta=meta, markdown=md)
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        jpath, mpath, ppath = out_dir / "mmlongbench.json", out_dir / "mmlongbench.md", out_dir / "mmlongbench_recall.png"
        payload = {"meta": meta, "summary": summary,
                   "breakdown": {"source": breakdown(records, names, "source", 5 if 5 in ks else ks[-1]),
                                 "doc_type": breakdown(records, names, "doc_type", 5 if 5 in ks else ks[-1])},
                   "records": records}
        tmp = jpath.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")
        tmp.replace(jpath)
        mpath.write_text(md, encoding="utf-8")
        plot_recall(summary, ks, ppath, f"MMLongBench-Doc {data_dir.name}: recall@k")
        result.files = {"json": str(jpath), "markdown": str(mpath), "plot": str(ppath)}
    return result
