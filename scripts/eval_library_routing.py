#!/usr/bin/env python
"""Library questions without a document: document routing and pooled page recall.

    python scripts/eval_library_routing.py ../shared/data/mmlongbench-dev \
        --index /tmp/lib25 --skills /tmp/lib25-skills --out bench-out/library-routing

The split's PDFs, already indexed into --index (more documents may be there: distractors), are
one library; each question is asked without naming its document. For every route the script
reports document routing hit@1 / hit@3 (all questions) and page recall@5 / @10 (questions with
gold pages; evidence from another document finds nothing), next to the per-document figures
(bookindex retrieval in the gold document). Routes, none with an LLM:
- `hierarchy`: `engine.navigate_library` over the hierarchy (--skills; built with --documents
  and no LLM, timed, when the folder is absent), then the chosen document's bookindex retrieval;
- `router`: `engine.routing.rank` (what `ask` without a document uses), then the same;
- `flat`: `engine.routing.search`, one ranking over every block of the library;
- `best-node`: `engine.routing.best_node` (the best node's cosine per document: the routing before the library router).
Every figure is given twice: on all questions and on the questions that name their document, i.e.
all but those listed in --unroutable (tests/data/mmlongbench_unroutable.json and
mmlongbench_dev2_unroutable.json, by qid: questions such as "How many figures are in the entire
document?" that no router can place from the question alone). A pooled library of several splits
is evaluated with their questions in one questions.json (`scripts/rename_library.py` pools both).
Writes library_routing.json (per question) and library_routing.md (the tables).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.core.model import Evidence  # noqa: E402
from bookindex.engine import Engine, SkillsBuildRequest  # noqa: E402
from bookindex.evaluation.recall import page_recall_at_k  # noqa: E402

ROUTES = ("hierarchy", "router", "flat", "best-node")
KS = (5, 10)
UNROUTABLE = [Path(__file__).resolve().parents[1] / "tests" / "data" / name
              for name in ("mmlongbench_unroutable.json", "mmlongbench_dev2_unroutable.json")]


def load_unroutable(paths: list[Path]) -> set[str]:
    """The qids of questions that name nothing of their document, over all `paths` (none: empty)."""
    out: set[str] = set()
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            out |= {str(q["qid"]) for q in data["questions"]}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"error: {path}: not a list of unroutable questions ({exc})") from exc
    return out


def masked(evidence: list[Evidence], gold_doc: str, root_id: str) -> list[Evidence]:
    """Evidence from other documents keeps its rank slot but finds no page of the gold document."""
    out = []
    for i, e in enumerate(evidence):
        if e.doc_id == gold_doc:
            out.append(e)
        else:
            out.append(e.model_copy(update={"node_id": root_id, "scores": {"chunk_index": 10_000 + i}}))
    return out


def first_docs(evidence: list[Evidence]) -> list[str]:
    seen: list[str] = []
    for e in evidence:
        if e.doc_id not in seen:
            seen.append(e.doc_id)
    return seen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, help="split folder with questions.json (MMLongBench-Doc layout)")
    ap.add_argument("--index", type=Path, required=True, help="library holding the split's documents (read only)")
    ap.add_argument("--skills", type=Path, required=True, help="library hierarchy folder (built here when absent)")
    ap.add_argument("--out", type=Path, default=Path("bench-out/library-routing"))
    ap.add_argument("--limit", type=int, default=0, help="first N questions only")
    ap.add_argument("--unroutable", type=Path, nargs="+", default=UNROUTABLE,
                    help="JSON file(s) of qids that name nothing of their document (reported apart); 'none' for no subset")
    ap.add_argument("--signals", action="store_true",
                    help="only document routing by each router signal alone and by weightings of them (fast)")
    args = ap.parse_args(argv)

    settings = load_settings(overrides={"llm.provider": "none"})
    engine = Engine(args.index, settings, open_documents=64)
    engine.require_library()
    build: dict[str, Any] = {}
    if not (args.skills / "hierarchy.json").is_file():
        t0 = time.perf_counter()
        rep = engine.skills.build(SkillsBuildRequest(sources=[str(args.index)], output=str(args.skills),
                                                     documents=True, no_llm=True))
        build = {"seconds": round(time.perf_counter() - t0, 1), "files": rep.files,
                 "median_file_bytes": rep.median_file_bytes, "max_file_bytes": rep.max_file_bytes,
                 "clusters": rep.clusters, "timings": rep.timings}
        print(f"built {args.skills}: {rep.files} files in {build['seconds']} s", flush=True)
    docs = engine.documents()
    by_name = {d.name: d.doc_id for d in docs}
    questions = json.loads((args.data / "questions.json").read_text(encoding="utf-8"))
    no_subset = [str(p) for p in args.unroutable] == ["none"]
    unroutable = load_unroutable([] if no_subset else args.unroutable)
    if args.limit:
        questions = questions[:args.limit]
    if args.signals:
        md = "\n".join(f"{name} ({len(qs)} questions)\n\n{signal_table(engine, qs, by_name)}"
                       for name, qs in (("all", questions),
                                        ("naming their document", [q for q in questions if q["qid"] not in unroutable]))
                       if qs)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "router_signals.md").write_text(md, encoding="utf-8")
        print(md)
        return 0
    cache: dict[tuple[str, str], list[Evidence]] = {}

    def retrieve(doc_id: str, q: str) -> list[Evidence]:
        if (doc_id, q) not in cache:
            cache[(doc_id, q)] = engine.routing.access.search_document(doc_id, q, k=max(KS))
        return cache[(doc_id, q)]

    records = []
    t0 = time.perf_counter()
    for n, q in enumerate(questions, 1):
        gold = by_name[q["doc_id"]]
        text = q["question"]
        ranked: dict[str, list[str]] = {}
        evidence: dict[str, list[Evidence]] = {}
        ranked["hierarchy"] = [d.doc_id for d in engine.navigate_library(text, skills=str(args.skills), search=False).documents]
        ranked["router"] = [r.doc_id for r in engine.routing.rank(text)]
        ranked["best-node"] = [r.doc_id for r in engine.routing.best_node(text)]
        flat = engine.routing.search(text, k=max(KS))
        ranked["flat"] = first_docs(flat)
        for route in ("hierarchy", "router", "best-node"):
            evidence[route] = retrieve(ranked[route][0], text)
        evidence["flat"] = flat
        evidence["per-document"] = retrieve(gold, text)
        rec: dict[str, Any] = {"qid": q["qid"], "doc": q["doc_id"], "question": text,
                               "names_document": q["qid"] not in unroutable,
                               "routed": {r: ranked[r][:3] for r in ROUTES}}
        gold_pages = sorted({int(p) for p in ast.literal_eval(q.get("evidence_pages") or "[]")})
        if gold_pages:
            tree = engine.tree(gold)
            rec["recall"] = {}
            for route, ev in evidence.items():
                got = page_recall_at_k(masked(ev, gold, tree.root_id), gold_pages, KS, tree)
                rec["recall"][route] = {str(k): got[k].recall for k in KS}
        rec["hit"] = {r: [gold == (ranked[r][0] if ranked[r] else ""), gold in ranked[r][:3]] for r in ROUTES}
        records.append(rec)
        if n % 20 == 0:
            print(f"  {n}/{len(questions)} questions, {time.perf_counter() - t0:.0f} s", flush=True)
    named = [r for r in records if r["names_document"]]
    summary = {"all": summarise(records), "names_document": summarise(named)}
    meta = {"data": str(args.data), "index": str(args.index), "skills": str(args.skills), "documents": len(docs),
            "questions": len(records), "answerable": sum(1 for r in records if "recall" in r),
            "names_document": len(named), "names_document_answerable": sum(1 for r in named if "recall" in r),
            "unroutable_files": [] if no_subset else [str(p) for p in args.unroutable],
            "seconds": round(time.perf_counter() - t0, 1), "build": build}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "library_routing.json").write_text(json.dumps({"meta": meta, "summary": summary, "records": records},
                                                              indent=1, ensure_ascii=False), encoding="utf-8")
    md = table(summary, meta)
    (args.out / "library_routing.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


WEIGHTINGS = ({"nodes": 1.0}, {"lexical": 1.0}, {"vector": 1.0}, {"name": 1.0}, {"nodes": 1.0, "lexical": 1.0},
              {"nodes": 1.0, "lexical": 1.0, "vector": 1.0}, {"nodes": 1.0, "lexical": 1.0, "vector": 0.5},
              {"nodes": 2.0, "lexical": 1.0, "vector": 1.0},
              {"nodes": 1.0, "lexical": 1.0, "vector": 0.5, "name": 0.25},
              {"nodes": 1.0, "lexical": 1.0, "vector": 0.5, "name": 0.5},
              {"nodes": 1.0, "lexical": 1.0, "vector": 0.5, "name": 1.0})


def signal_table(engine: Engine, questions: list[dict[str, Any]], by_name: dict[str, str]) -> str:
    """hit@1 / hit@3 of each router signal alone and of weighted reciprocal-rank fusions (k = 60),
    ranked by the router itself with each weighting (a sparse signal ranks only what it matches)."""
    router = engine.routing.router()
    kept = dict(router.weights)
    hits = [[0, 0] for _ in WEIGHTINGS]
    try:
        for q in questions:
            gold = by_name[q["doc_id"]]
            qvec = engine.routing.query_vector(q["question"])
            for w, h in zip(WEIGHTINGS, hits):
                router.weights = dict(w)
                order = [r.doc_id for r in router.rank(q["question"], qvec)]
                h[0] += order[0] == gold
                h[1] += gold in order[:3]
    finally:
        router.weights = kept
    lines = ["| signals (weights) | hit@1 | hit@3 |", "|---|---|---|"]
    for w, (h1, h3) in zip(WEIGHTINGS, hits):
        lines.append(f"| {' + '.join(f'{v:g}·{n}' for n, v in w.items())} | {h1 / len(questions):.3f} | {h3 / len(questions):.3f} |")
    return "\n".join(lines) + "\n"


def summarise(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    answerable = [r for r in records if "recall" in r]
    for route in ROUTES + ("per-document",):
        row: dict[str, float] = {}
        if route in ROUTES:
            row["hit@1"] = sum(r["hit"][route][0] for r in records) / max(1, len(records))
            row["hit@3"] = sum(r["hit"][route][1] for r in records) / max(1, len(records))
        for k in KS:
            row[f"R@{k}"] = sum(r["recall"][route][str(k)] for r in answerable) / max(1, len(answerable))
        out[route] = {key: round(v, 3) for key, v in row.items()}
    base = out["per-document"]["R@5"]
    for route in ROUTES:
        out[route]["R@5 / per-doc"] = round(out[route]["R@5"] / base, 3) if base else 0.0
    return out


def table(summary: dict[str, dict[str, dict[str, float]]], meta: dict[str, Any]) -> str:
    lines = [f"{meta['documents']} documents, {meta['questions']} questions ({meta['answerable']} with gold pages), "
             f"{meta['seconds']} s"]
    subsets = (("all questions", "all", meta["questions"], meta["answerable"]),
               ("questions naming their document", "names_document", meta["names_document"],
                meta["names_document_answerable"]))
    for title, key, n, answerable in subsets:
        lines += ["", f"{title}: {n} ({answerable} with gold pages)", "",
                  "| route | hit@1 | hit@3 | R@5 | R@10 | R@5 / per-document R@5 |", "|---|---|---|---|---|---|"]
        for route, row in summary[key].items():
            lines.append(f"| {route} | {row.get('hit@1', '—')} | {row.get('hit@3', '—')} | {row['R@5']} | {row['R@10']} "
                         f"| {row.get('R@5 / per-doc', '—')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
