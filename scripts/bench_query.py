#!/usr/bin/env python
"""Query latency and memory of the no-LLM `ask` path over one indexed document.

    python scripts/bench_query.py LIBRARY_DIR [--doc gnuplot.pdf] [--pdf /path/gnuplot.pdf]
                                  [--repeat 2] [--out bench-out/query]

With --pdf and a library that does not hold it yet, the document is indexed first (not timed).
Measures: open (library open + first-query preparation: tree, graph, vectors, BM25, models),
per-query latency p50/p95 over a fixed question set (single-hop, multi-hop and global questions
about the gnuplot manual), and peak resident memory. Targets: open <= 2 s,
p50 <= 300 ms, p95 <= 1 s, memory <= 1.5 GB. Prints a Markdown table; writes JSON + Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUESTIONS = [
    "How do I set the range of the x axis?",
    "What does the set logscale command do?",
    "How can I plot data from a file using columns 1 and 3?",
    "Which terminal produces PNG images?",
    "What is the default sampling rate of functions?",
    "How do I put a title on the plot?",
    "What does the splot command draw?",
    "How do I change the line width of a plot?",
    "What is the syntax of the fit command?",
    "How can I save the current settings to a file?",
    "What does the multiplot mode do?",
    "How are user-defined functions written?",
    "What is the difference between the pngcairo terminal and the png terminal?",
    "How does set xtics compare with set mxtics?",
    "How many tables are in the document?",
    "How many figures are in pages 1-50?",
    "How do I draw a histogram?",
    "What does the pause command do?",
    "How do I use a color palette with pm3d?",
    "Which variables does the stats command set?",
]


def rss_peak_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024 if platform.system() == "Linux" else r / (1024 * 1024)


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("library", type=Path)
    ap.add_argument("--doc", default="gnuplot.pdf")
    ap.add_argument("--pdf", type=Path, default=None, help="index this file first when missing")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("bench-out/query"))
    args = ap.parse_args()

    from bookindex.core.config import load_settings
    from bookindex.engine import Engine

    settings = load_settings(overrides={"llm.provider": "none"})
    if args.pdf is not None:
        builder = Engine(args.library, settings)
        if args.pdf.name not in {d.name for d in builder.documents()}:
            print(f"indexing {args.pdf} (not timed) ...", file=sys.stderr)
            builder.index(args.pdf, progress=True)
        del builder

    from bookindex.operators.formulator import noun_chunk_model
    from bookindex.operators.textscore import get_text_index

    stages: dict[str, float] = {}
    t0 = tl = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal tl
        now = time.perf_counter()
        stages[name] = round(now - tl, 3)
        tl = now

    engine = Engine(args.library, settings)
    _ = engine.providers.embedder
    lap("embedding model")
    ctx = engine.open(args.doc)  # reads the catalog and checks the stored vectors' dimension
    lap("catalog + vectors")
    _ = ctx.tree
    lap("tree")
    _ = ctx.graph.nx
    lap("graph")
    ctx.node_matrix()
    lap("context")
    get_text_index(ctx)
    lap("bm25 index")
    ctx.embed(["warm up"])
    noun_chunk_model()
    lap("spacy + first encode")
    open_s = time.perf_counter() - t0
    rss_open = rss_peak_mb()

    lat: list[float] = []
    per_type: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for q in QUESTIONS:
            t = time.perf_counter()
            ans = engine.ask(q, doc=ctx.tree.doc_id)
            ms = (time.perf_counter() - t) * 1000
            lat.append(ms)
            per_type.setdefault(ans.query_type, []).append(ms)

    res = {
        "doc": ctx.tree.name, "pages": ctx.manifest.get("pages"), "nodes": len(ctx.tree),
        "entities": len(ctx.graph.entities), "questions": len(QUESTIONS), "repeat": args.repeat,
        "open_s": round(open_s, 3), "open_stages_s": stages,
        "p50_ms": round(statistics.median(lat), 1), "p95_ms": round(percentile(lat, 0.95), 1),
        "max_ms": round(max(lat), 1), "mean_ms": round(statistics.mean(lat), 1),
        "by_type_p50_ms": {k: round(statistics.median(v), 1) for k, v in per_type.items()},
        "rss_after_open_mb": round(rss_open, 1), "peak_rss_mb": round(rss_peak_mb(), 1),
        "cpu_count": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
        "targets": {"open_s": 2.0, "p50_ms": 300, "p95_ms": 1000, "peak_rss_mb": 1536},
    }
    res["meets"] = {"open": res["open_s"] <= 2.0, "p50": res["p50_ms"] <= 300,
                    "p95": res["p95_ms"] <= 1000, "memory": res["peak_rss_mb"] <= 1536}
    rows = [("open (s)", res["open_s"], "<= 2"), ("p50 (ms)", res["p50_ms"], "<= 300"),
            ("p95 (ms)", res["p95_ms"], "<= 1000"), ("peak RSS (MiB)", res["peak_rss_mb"], "<= 1536")]
    md = [f"# Query benchmark: {res['doc']} ({res['pages']} pages, {res['nodes']} nodes, "
          f"{res['entities']} entities), no LLM", "",
          f"{len(lat)} queries ({len(QUESTIONS)} questions x {args.repeat}); load average at the end "
          f"{res['load_avg_1m']} on {res['cpu_count']} CPUs.", "",
          "| metric | measured | target |", "|---|---|---|"]
    md += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    md += ["", "p50 by query type (ms): " + ", ".join(f"{k} {v}" for k, v in res["by_type_p50_ms"].items()),
           "open stages (s): " + ", ".join(f"{k} {v}" for k, v in stages.items())]
    text = "\n".join(md)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_query.json").write_text(json.dumps(res, indent=2))
    (args.out / "bench_query.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
