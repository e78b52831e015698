#!/usr/bin/env python3
"""Distributed indexing benchmark: the same PDFs indexed serially, with `--workers N`
and on a local Ray instance, each through the real CLI in a fresh process and a fresh library;
wall time, per-document cost from build.json, and whether the content hashes equal the serial one.

    python3 scripts/bench_distributed.py /work/shared/data [--limit K] [--workers 2] [--out DIR]

Prints and writes bench_distributed.json + bench_distributed.md under --out. No LLM is used
(llm.provider=none); graph extraction runs without one. The machine's load average is recorded
before and after each run, since it is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bookindex.indexing.document_folder import BUILD_FILE, library_hash
from bookindex.storage.catalog import CATALOG


def _docs(data: Path, limit: int | None) -> list[Path]:
    folder = data / "mmlongbench-dev" / "documents"
    if not folder.is_dir():
        sys.exit(f"{folder}: not found (give the shared data folder)")
    files = sorted(folder.glob("*.pdf"), key=lambda p: (p.stat().st_size, p.name))
    return files[:limit] if limit else files


def _run(mode: str, args: list[str], files: list[Path], lib: Path) -> dict:
    cmd = [sys.executable, "-m", "bookindex.cli.app", "--set", "llm.provider=none", "index",
           *map(str, files), "-i", str(lib), "-q", *args]
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
    catalog = json.loads((lib / CATALOG).read_text())["documents"] if (lib / CATALOG).exists() else {}
    per_doc = []
    for entry in catalog.values():
        d = lib / "docs" / entry["dir"]
        build = json.loads((d / BUILD_FILE).read_text())
        per_doc.append({"name": entry["name"], "pages": build.get("pages"), **build.get("timings", {})})
    return {"mode": mode, "wall_s": round(wall, 1), "rc": proc.returncode, "documents": len(catalog),
            "hash": library_hash(lib) if catalog else None, "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in load1], "per_doc": per_doc}


def _markdown(rows: list[dict], files: list[Path], pages: int) -> str:
    serial = next((r for r in rows if r["mode"] == "serial"), None)
    lines = [f"{len(files)} PDFs, {pages} pages (mmlongbench-dev, smallest first), llm.provider=none, "
             "graph on; each run a fresh CLI process and library.", "",
             "| run | wall s | speed-up | documents | hash equals serial | load avg (1 min) before → after |",
             "|---|---:|---:|---:|---|---|"]
    for r in rows:
        speed = f"{serial['wall_s'] / r['wall_s']:.2f}x" if serial and r["wall_s"] else "-"
        same = "yes" if serial and r["hash"] == serial["hash"] else ("-" if r is serial else "NO")
        lines.append(f"| {r['mode']} | {r['wall_s']} | {speed} | {r['documents']} | {same} | "
                     f"{r['load_before'][0]} → {r['load_after'][0]} |")
    if serial and serial["per_doc"]:
        stages = ("parse_s", "tree_s", "embed_s", "graph_s")
        tot = {s: sum(float(d.get(s) or 0) for d in serial["per_doc"]) for s in stages}
        n = len(serial["per_doc"])
        lines += ["", "Serial per-document cost (build.json timings, mean over documents): " +
                  ", ".join(f"{s[:-2]} {tot[s] / n:.1f} s" for s in stages) +
                  f"; {sum(tot.values()) / max(1, pages):.2f} s per page."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, help="the shared data folder (holds mmlongbench-dev/)")
    ap.add_argument("--limit", type=int, default=None, help="only the K smallest PDFs")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--modes", default="serial,workers,ray")
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    a = ap.parse_args()
    files = _docs(a.data, a.limit)
    work = Path(tempfile.mkdtemp(prefix="bench-dist-"))
    rows = []
    try:
        for mode in a.modes.split(","):
            args = {"serial": [], "workers": ["--workers", str(a.workers)],
                    "ray": ["--ray", "local", "--ray-cpus", str(a.workers)]}[mode]
            label = {"serial": "serial", "workers": f"--workers {a.workers}",
                     "ray": f"Ray local (num_cpus={a.workers})"}[mode]
            row = _run(label, args, files, work / mode)
            print(json.dumps({k: v for k, v in row.items() if k != "per_doc"}), flush=True)
            rows.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    pages = sum(int(d.get("pages") or 0) for d in rows[0]["per_doc"]) if rows else 0
    md = _markdown(rows, files, pages)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "bench_distributed.json").write_text(json.dumps({"files": [f.name for f in files], "runs": rows},
                                                             indent=2))
    (a.out / "bench_distributed.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
