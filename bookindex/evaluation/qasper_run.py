"""The Qasper evaluation run behind scripts/eval_qasper.py.

Each paper (sections, paragraphs, figure/table captions) becomes a Markdown document indexed
through the library's Markdown parser; every question is asked against its paper with each
method. Scores: paragraph-level evidence recall@k (exact paragraph match after normalization,
max over annotators), and with an LLM answer accuracy (normalized gold contained in the
answer) and SQuAD token F1 (max over annotators).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any, Sequence

from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.core.protocols import LLM, Embedder
from bookindex.evaluation.answering import answer_question, extract_answer
from bookindex.evaluation.mmlongbench_run import (
    Row,
    RunResult,
    default_index_dir,
    index_and_ask,
    make_rows,
    open_engine,
    retrieve,
    run_settings,
)
from bookindex.evaluation.qasper import (
    FLOAT_PREFIX,
    evidence_recall_at_k,
    qasper_accuracy,
    qasper_gold_answers,
    qasper_token_f1,
)
from bookindex.evaluation.recall import context_size, dedupe
from bookindex.evaluation.report import breakdown, markdown_breakdown, markdown_main, plot_recall

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


def questions_of(papers: dict[str, Any], limit: int | None = None) -> list[dict[str, Any]]:
    qs: list[dict[str, Any]] = []
    for pid, paper in papers.items():
        qas = paper.get("qas") or {}
        for i, question in enumerate(qas.get("question", [])):
            answers = qas["answers"][i]["answer"]
            ev = [a.get("evidence", []) for a in answers]
            first = answers[0] if answers else {}
            kind = ("unanswerable" if first.get("unanswerable") else "extractive" if first.get("extractive_spans")
                    else "abstractive" if first.get("free_form_answer") else "yes/no")
            qs.append({
                "qid": (qas.get("question_id") or [f"{pid}-{i}"] * (i + 1))[i], "paper": pid,
                "doc": f"{pid}.md", "question": question, "golds": qasper_gold_answers(answers),
                "evidence": ev, "answer_type": kind,
                "evidence_type": sorted({"float" if e.startswith(FLOAT_PREFIX) else "text" for a in ev for e in a}),
            })
    return qs[:limit] if limit else qs


def write_documents(papers: dict[str, Any], doc_dir: Path) -> None:
    (doc_dir / "documents").mkdir(parents=True, exist_ok=True)
    for pid, paper in papers.items():
        p = doc_dir / "documents" / f"{pid}.md"
        text = paper_to_markdown({"id": pid, **paper})
        if not p.is_file() or p.read_text(encoding="utf-8") != text:
            p.write_text(text, encoding="utf-8")


def evaluate(questions: Sequence[dict[str, Any]], docs: dict[str, str], rows: Sequence[Row], ks: Sequence[int],
             llm: LLM | None = None, progress: bool = True) -> list[dict[str, Any]]:
    use_llm = llm is not None and llm.available
    kmax = max(ks)
    items: Any = [(q, r) for q in questions for r in rows]
    if progress:
        from tqdm import tqdm

        items = tqdm(items, desc="ask", unit="q")
    records: list[dict[str, Any]] = []
    for q, row in items:
        doc = docs.get(q["doc"])
        rec: dict[str, Any] = {"qid": q["qid"], "doc": q["doc"], "method": row.name, "question": q["question"],
                               "golds": q["golds"], "recall": None, "hit": None, "error": None,
                               "groups": {"answer_type": q["answer_type"], "evidence_type": q["evidence_type"]}}
        t0 = time.perf_counter()
        evidence, raw = [], None
        try:
            if doc is None:
                raise InputError(f"{q['doc']}: document could not be indexed")
            evidence, raw = retrieve(row, doc, q["question"], kmax)
        except Exception as e:
            rec["error"] = f"{type(e).__name__}: {e}"
        rec["seconds"] = round(time.perf_counter() - t0, 4)
        ranked = dedupe(evidence)
        rec["nodes"], rec["chars"] = context_size(ranked, row.engine.tree(doc) if doc is not None else None)
        texts = [row.engine.passage(doc, e) for e in ranked] if doc is not None else []
        r = evidence_recall_at_k(q["evidence"], texts, ks)
        if r is not None:
            rec["recall"] = r
            rec["hit"] = {k: 1.0 if v > 0 else 0.0 for k, v in r.items()}
        rec["evidence"] = [{"node_id": e.node_id, "type": e.type, "rank": e.rank} for e in ranked]
        if use_llm and not rec["error"]:
            try:
                if raw is None:
                    assert llm is not None
                    raw = answer_question(llm, q["question"], [(e.section or "paper", t) for e, t in zip(ranked, texts)])
                pred = extract_answer(llm, q["question"], raw)
                rec.update(raw_answer=raw, pred=pred, score=qasper_accuracy(q["golds"], raw),
                           f1=qasper_token_f1(q["golds"], pred))
            except Exception as e:
                rec["error"] = f"answer: {type(e).__name__}: {e}"
        records.append(rec)
    return records


def answer_metrics(recs: list[dict[str, Any]]) -> dict[str, float]:
    return {"accuracy": sum(r["score"] for r in recs) / len(recs), "f1": sum(r["f1"] for r in recs) / len(recs)}


def run(data_dir: Path, methods: Sequence[str], ks: Sequence[int], ablations: Sequence[str] = (),
        limit: int | None = None, index_dir: Path | None = None, out_dir: Path | None = None,
        settings: Settings | None = None, llm: LLM | None = None, embedder: Embedder | None = None,
        progress: bool = True, command: str | None = None, index_without_llm: bool = False) -> RunResult:
    t_start = time.perf_counter()
    data_dir = Path(data_dir)
    ks, settings = run_settings(ks, settings)
    papers = load_papers(data_dir)
    questions = questions_of(papers, limit)
    rows = make_rows(methods, ablations, settings)
    index_dir = Path(index_dir) if index_dir else default_index_dir(settings, data_dir)
    write_documents({p: papers[p] for p in dict.fromkeys(q["paper"] for q in questions)}, index_dir / "markdown")
    engine, llm = open_engine(settings, index_dir / "library", llm=llm, embedder=embedder,
                              index_without_llm=index_without_llm)
    asked = index_and_ask(engine, index_dir / "markdown", [q["doc"] for q in questions], questions, rows, ks,
                          evaluate, answer_metrics, llm=llm, settings=settings,
                          split=data_dir.name, command=command, progress=progress)
    records, names, summary, use_llm = asked.records, asked.names, asked.summary, asked.use_llm
    index_seconds = asked.meta["index_seconds"]
    meta = {**asked.meta, "papers": len(asked.docs),
            "with_evidence": sum(1 for q in questions if any(q["evidence"]))}
    meta["total_seconds"] = time.perf_counter() - t_start
    hit_k = 5 if 5 in ks else ks[-1]
    extra = [("acc", "accuracy"), ("F1", "f1")] if use_llm else []
    md = "\n".join([
        f"# Qasper ({meta['split']})", "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; machine: {meta['machine']}; LLM: {meta['llm']}",
        f"- papers: {meta['papers']}; questions: {meta['questions']} ({meta['with_evidence']} with evidence "
        f"paragraphs); indexing {index_seconds:.0f} s; total {meta['total_seconds']:.0f} s",
        "- R@k: fraction of an annotator's evidence paragraphs among the top-k retrieved nodes (max over annotators).",
        "", markdown_main(summary, ks, hit_k, extra), "",
        f"Recall@{hit_k} by evidence type:", "",
        markdown_breakdown(breakdown(records, names, "evidence_type", hit_k), "method"), "",
        f"Recall@{hit_k} by answer type:", "",
        markdown_breakdown(breakdown(records, names, "answer_type", hit_k), "method"),
    ]) + "\n"
    result = RunResult(records=records, summary=summary, meta=meta, markdown=md)
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        jpath, mpath, ppath = out_dir / "qasper.json", out_dir / "qasper.md", out_dir / "qasper_recall.png"
        jpath.write_text(json.dumps({"meta": meta, "summary": summary, "records": records}, indent=1, default=str),
                         encoding="utf-8")
        mpath.write_text(md, encoding="utf-8")
        plot_recall(summary, ks, ppath, f"Qasper {data_dir.name}: paragraph recall@k")
        result.files = {"json": str(jpath), "markdown": str(mpath), "plot": str(ppath)}
    return result
