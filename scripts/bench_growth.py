#!/usr/bin/env python
"""How a library's cost grows with what it holds: build CPU per page, start-up, memory and latency.

    python scripts/bench_growth.py LIBRARY --sources DIR [DIR ...] --sizes 25,50,100
                                   --questions SPLIT [SPLIT ...] [--asks 50] [--workers 2]
                                   [--out bench-out/growth]

The PDFs of the --sources folders, in that order (each folder's files sorted by name), are indexed
into LIBRARY in stages: stage i adds the next documents until the library holds sizes[i] (no LLM,
`bookindex index NEW... -i LIBRARY --workers W`, as its own process). After each stage the library
is served (`bookindex serve`, one process, 127.0.0.1, no keys) and asked --asks questions without
a document, each for the first time in that process (pooled from the --questions splits'
questions.json, in order). Measured per stage:

- build: CPU seconds (user + sys of the index process and its workers) of the documents the stage
  added, their pages, CPU per page, the build's peak RSS;
- serve: seconds to the first answered /health and to "ready" (models loaded, router built),
  RSS after warm-up and after the questions, first-time ask latency p50/p95.

LIBRARY must not exist or be a library an earlier run of this script began (a stage whose size it
already holds is only served). Writes JSON + a Markdown table to --out and prints the table.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_library import REPO, serve_and_ask

sys.path.insert(0, str(REPO))

from bookindex.parsing.pdf_open import open_pdf  # noqa: E402


def ordered_pdfs(sources: list[Path]) -> list[Path]:
    """Every PDF of the source folders, folder by folder, each folder's files sorted by name."""
    out: list[Path] = []
    for folder in sources:
        if not folder.is_dir():
            raise SystemExit(f"{folder}: not a folder")
        out += sorted(p for p in folder.iterdir() if p.suffix.lower() == ".pdf")
    return out


def pooled_questions(splits: list[Path], count: int) -> list[dict[str, Any]]:
    """The first `count` questions of the splits' questions.json files, split after split."""
    rows: list[dict[str, Any]] = []
    for split in splits:
        path = split / "questions.json"
        if not path.is_file():
            raise SystemExit(f"{path}: no questions.json in the split folder")
        rows += [r for r in json.loads(path.read_text()) if str(r.get("question", "")).strip()]
    return rows[:count]


def held_names(library: Path) -> set[str]:
    path = library / "library.json"
    if not path.is_file():
        return set()
    return {d["name"] for d in json.loads(path.read_text())["documents"].values()}


def page_count(pdf: Path) -> int:
    doc = open_pdf(pdf)
    try:
        return int(doc.page_count)
    finally:
        doc.close()


def build_stage(library: Path, new: list[Path], workers: int, log: Path) -> dict[str, Any]:
    """Index `new` into `library` as its own process; CPU of it and its workers, pages, peak RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "bookindex.cli.app", "--set", "llm.provider=none", "index",
           *map(str, new), "-i", str(library), "--workers", str(workers), "--quiet"]
    with open(log, "ab") as fh:
        done = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"index exited {done.returncode}; see {log}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    pages = sum(page_count(p) for p in new)
    return {"added": len(new), "pages_added": pages, "build_wall_s": round(time.perf_counter() - t0, 1),
            "build_cpu_s": round(cpu, 1), "cpu_per_page_s": round(cpu / max(pages, 1), 3),
            "build_peak_rss_mb": round(after.ru_maxrss / 1024, 1)}


def stage_row(size: int, built: dict[str, Any], served: dict[str, Any]) -> dict[str, Any]:
    first = served["rounds"][0]
    return {"documents": served.get("documents", size), **built,
            "open_s": served["open_s"], "ready_s": served["ready_s"], "rss_ready_mb": served["rss_ready_mb"],
            "rss_after_asks_mb": first["rss_mb"], "asked": first["asked"], "errors": first["errors"],
            "first_ask_p50_ms": first["p50_ms"], "first_ask_p95_ms": first["p95_ms"]}


def markdown(rows: list[dict[str, Any]]) -> str:
    head = ("| documents | pages added | build CPU s | CPU per page s | build peak RSS MB | start: health / ready s "
            "| RSS ready MB | RSS after asks MB | first ask p50 / p95 ms |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['documents']} | {r.get('pages_added', 0)} | {r.get('build_cpu_s', '–')} | "
                     f"{r.get('cpu_per_page_s', '–')} | {r.get('build_peak_rss_mb', '–')} | {r['open_s']} / "
                     f"{r['ready_s']} | {r['rss_ready_mb']} | {r['rss_after_asks_mb']} | "
                     f"{r['first_ask_p50_ms']} / {r['first_ask_p95_ms']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", type=Path)
    ap.add_argument("--sources", type=Path, nargs="+", required=True)
    ap.add_argument("--sizes", required=True, help="comma-separated library sizes, e.g. 25,50,100")
    ap.add_argument("--questions", type=Path, nargs="+", required=True)
    ap.add_argument("--asks", type=int, default=50)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "bench-out" / "growth")
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    pdfs, qs = ordered_pdfs(args.sources), pooled_questions(args.questions, args.asks)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for size in sizes:
        held = held_names(args.library)
        new = [p for p in pdfs[:size] if p.name not in held]
        built = build_stage(args.library, new, args.workers, args.out / "build.log") if new else {}
        served = serve_and_ask(args.library, qs, 1, args.out / f"serve-{size}")
        rows.append(stage_row(size, built, served))
        print(json.dumps(rows[-1]), flush=True)
    md = markdown(rows)
    (args.out / "bench_growth.json").write_text(json.dumps({"library": str(args.library), "stages": rows,
                                                            "sources": list(map(str, args.sources))}, indent=2))
    (args.out / "bench_growth.md").write_text(md + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
