#!/usr/bin/env python
"""Evidence and CPU time of the no-LLM bench questions, dumped and compared across code versions.

    python scripts/check_evidence.py LIBRARY_DIR [--doc gnuplot.pdf] [--repeat 3]
                                     [--out evidence.json] [--compare before.json] [--profile DIR]

Asks every question of scripts/bench_query.py (method bookindex, no LLM) in one process and
records, per question, the evidence (node ids and scores, 4 decimals) and the CPU time of
`Engine.ask` (`time.process_time`: this process's threads, ONNX's included; best of --repeat
passes, so a loaded machine inflates it less than wall time). With --compare, the evidence must
be identical to an earlier dump's (exit 1 and the differences otherwise), and the CPU times are
printed side by side. --profile writes one cProfile file per question (the last pass).
A speed-up that changes a single score is a change of results, not an optimisation.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_query import QUESTIONS  # noqa: E402

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.engine import Engine  # noqa: E402
from bookindex.server.threads import limit_blas_threads  # noqa: E402


def evidence_of(answer: Any) -> list[list[Any]]:
    """Node ids and their scores (rounded to 4 decimals) in rank order."""
    return [[e.node_id, {k: round(float(v), 4) for k, v in sorted((e.scores or {}).items())}]
            for e in answer.evidence]


def measure(library: Path, doc: str, repeat: int, profile_dir: Path | None,
            blas_threads: int | None = None) -> dict[str, Any]:
    engine = Engine(library, load_settings(overrides={"llm.provider": "none"}))
    ctx = engine.open(doc)
    engine.ask(QUESTIONS[0], doc=ctx.tree.doc_id)  # warm-up: views, models, spaCy
    best: dict[str, float] = {}
    evidence: dict[str, Any] = {}
    for p in range(repeat):
        for k, q in enumerate(QUESTIONS):
            prof = cProfile.Profile() if profile_dir is not None and p == repeat - 1 else None
            t = time.process_time()
            if prof is not None:
                prof.enable()
            ans = engine.ask(q, doc=ctx.tree.doc_id)
            if prof is not None:
                prof.disable()
            ms = (time.process_time() - t) * 1000
            if prof is not None and profile_dir is not None:
                profile_dir.mkdir(parents=True, exist_ok=True)
                prof.dump_stats(str(profile_dir / f"q{k:02d}.prof"))
            best[q] = min(best.get(q, float("inf")), ms)
            ev = {"query_type": ans.query_type, "evidence": evidence_of(ans)}
            if q in evidence and evidence[q] != ev:
                raise SystemExit(f"evidence of {q!r} differs between passes: the ranking is not deterministic")
            evidence[q] = ev
    return {"doc": doc, "repeat": repeat, "load_avg_1m": round(os.getloadavg()[0], 2),
            "blas_threads": blas_threads,
            "questions": [{"question": q, "cpu_ms": round(best[q], 1), **evidence[q]} for q in QUESTIONS]}


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Differences in evidence (question, what differs); CPU times are not compared."""
    old = {r["question"]: r for r in before["questions"]}
    diffs = []
    for r in after["questions"]:
        o = old.get(r["question"])
        if o is None:
            diffs.append(f"{r['question']}: not in the earlier dump")
        elif (o["query_type"], o["evidence"]) != (r["query_type"], r["evidence"]):
            diffs.append(f"{r['question']}: evidence differs\n  before {o['evidence']}\n  after  {r['evidence']}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("library", type=Path)
    ap.add_argument("--doc", default="gnuplot.pdf")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("bench-out/evidence/evidence.json"))
    ap.add_argument("--compare", type=Path, default=None, help="an earlier dump whose evidence must match")
    ap.add_argument("--profile", type=Path, default=None, help="write q<NN>.prof per question here")
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="cap BLAS threads as a server process does (server.blas_threads; default: uncapped)")
    args = ap.parse_args()
    if args.blas_threads:
        limit_blas_threads(args.blas_threads)

    res = measure(args.library, args.doc, max(1, args.repeat), args.profile, args.blas_threads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1))
    before = json.loads(args.compare.read_text()) if args.compare else None
    old = {r["question"]: r for r in before["questions"]} if before else {}
    print("| # | type | question | CPU ms" + (" before | CPU ms after |" if before else " |"))
    print("|---|---|---|---|" + ("---|" if before else ""))
    for k, r in enumerate(res["questions"]):
        cells = [str(k), r["query_type"], r["question"]]
        cells += ([str(old[r["question"]]["cpu_ms"])] if r["question"] in old else []) + [str(r["cpu_ms"])]
        print("| " + " | ".join(cells) + " |")
    total = sum(r["cpu_ms"] for r in res["questions"])
    line = f"mean CPU ms per question: {total / len(res['questions']):.1f}"
    if before:
        line += f" (before {sum(r['cpu_ms'] for r in before['questions']) / len(before['questions']):.1f})"
    print(f"{line}; load average {res['load_avg_1m']} (1 min)")
    if before:
        diffs = compare(before, res)
        if diffs:
            print("EVIDENCE DIFFERS:\n" + "\n".join(diffs), file=sys.stderr)
            return 1
        print(f"evidence identical for all {len(res['questions'])} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
