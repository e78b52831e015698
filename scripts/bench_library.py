#!/usr/bin/env python
"""A large library behind `bookindex serve`: open time, memory, and library-wide ask latency.

    python scripts/bench_library.py LIBRARY SPLIT_DIR [--limit 43] [--rounds 2] [--out bench-out/library]

LIBRARY is a built library (`bookindex index ...`, read only here); SPLIT_DIR holds the
questions.json of the questions to ask (MMLongBench-Doc layout: financebench-dev, an MMLongBench
split). The server runs as its own process (`bookindex serve LIBRARY`, one process, LLM provider
none, no keys, 127.0.0.1). Measured:

- open: from the process start to its first answered `GET /health`, then to its log's "ready"
  (the library warmed up: models loaded, router built), and the server's resident memory (RSS,
  with its children) at each;
- ask: every question sent as `POST /ask` **without a document**, so the library's router picks
  it, one at a time, `--rounds` times over (the first round is what a user asking a fresh
  question gets; later rounds repeat questions); latency p50/p95 per round and the server's RSS
  after each round (read from /proc; the peak over the run is the high-water mark `VmHWM`).

Bounded: at most `--limit` questions a round, and each request times out after 120 s. Writes
JSON + a Markdown table to --out and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from bench_serve import free_port

REPO = Path(__file__).resolve().parents[1]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def tree_pids(pid: int) -> list[int]:
    """`pid` and its descendants (a server with job workers or a resource tracker)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            kids = []
        todo += [int(k) for k in kids]
    return out


def status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_mb(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) of the server and its children, in MB."""
    pids = tree_pids(pid)
    return (sum(status_kb(p, "VmRSS") for p in pids) / 1024, sum(status_kb(p, "VmHWM") for p in pids) / 1024)


def questions_of(split: Path, limit: int) -> list[dict[str, Any]]:
    path = split / "questions.json"
    if not path.is_file():
        raise SystemExit(f"{path}: no questions.json in the split folder")
    rows = json.loads(path.read_text())
    return [r for r in rows if str(r.get("question", "")).strip()][:limit]


def wait_until_ready(proc: subprocess.Popen[bytes], base: str, log: Path, t0: float) -> dict[str, float]:
    """Seconds to the first answered `GET /health` and to the log's "ready", with the RSS at each."""
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"server exited ({proc.returncode}); see {log}")
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.perf_counter() - t0 > 300:
            raise SystemExit(f"server did not answer /health in 300 s; see {log}")
        time.sleep(0.2)
    out = {"open_s": round(time.perf_counter() - t0, 2), "rss_open_mb": round(rss_mb(proc.pid)[0], 1)}
    # the server warms the library up in the background (models, router): asked once it says so
    while time.perf_counter() - t0 < 600 and proc.poll() is None:
        said = log.read_text(errors="replace")
        if "ready in" in said or "warm-up failed" in said:
            break
        time.sleep(0.2)
    out.update(ready_s=round(time.perf_counter() - t0, 2), rss_ready_mb=round(rss_mb(proc.pid)[0], 1))
    return out


def ask_round(http: httpx.Client, qs: list[dict[str, Any]], pid: int, number: int) -> dict[str, Any]:
    """Every question once, without a document; latency percentiles and the RSS after it."""
    lat, errors, routed = [], 0, 0
    for q in qs:
        t = time.perf_counter()
        r = http.post("/ask", json={"question": q["question"], "method": "bookindex"})
        lat.append((time.perf_counter() - t) * 1000)
        if r.status_code != 200:
            errors += 1
            continue
        routed += 1
    now, peak = rss_mb(pid)
    return {"round": number, "asked": len(qs), "answered": routed, "errors": errors,
            "p50_ms": round(statistics.median(lat), 1), "p95_ms": round(percentile(lat, 95), 1),
            "max_ms": round(max(lat), 1), "rss_mb": round(now, 1), "peak_rss_mb": round(peak, 1)}


def serve_and_ask(library: Path, qs: list[dict[str, Any]], rounds: int, out: Path) -> dict[str, Any]:
    """Start `bookindex serve LIBRARY` as its own process, time its start, ask `rounds` rounds."""
    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("BOOKINDEX_API_KEYS", "BOOKINDEX_ADMIN_KEYS")}
    env.update(PYTHONPATH=str(REPO), BOOKINDEX_LLM__PROVIDER="none")
    log = out / "server.log"
    t0 = time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "bookindex.cli.app", "serve", str(library),
                                 "--port", str(port)], env=env, stdout=fh, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    result: dict[str, Any] = {"library": str(library), "questions": len(qs),
                              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}
    try:
        result.update(wait_until_ready(proc, base, log, t0))
        docs = httpx.get(f"{base}/documents", timeout=60).json()
        result["documents"] = len(docs) if isinstance(docs, list) else len(docs.get("documents", []))
        result["rounds"] = []
        with httpx.Client(base_url=base, timeout=120) as http:
            for rnd in range(rounds):
                result["rounds"].append(ask_round(http, qs, proc.pid, rnd + 1))
                print(json.dumps(result["rounds"][-1]), flush=True)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", type=Path)
    ap.add_argument("split", type=Path)
    ap.add_argument("--limit", type=int, default=43)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "bench-out" / "library")
    args = ap.parse_args()
    if not (args.library / "library.json").is_file():
        print(f"{args.library}: not a bookindex library (no library.json)", file=sys.stderr)
        return 2
    qs = questions_of(args.split, args.limit)
    result = serve_and_ask(args.library, qs, args.rounds, args.out)
    result["split"] = str(args.split)
    lines = [f"library {args.library} ({result['documents']} documents), {len(qs)} questions from {args.split}, "
             f"asked without a document; server answering in {result['open_s']} s (RSS {result['rss_open_mb']} MB), "
             f"warmed up in {result['ready_s']} s (RSS {result['rss_ready_mb']} MB)",
             "", "| round | answered | errors | p50 ms | p95 ms | max ms | RSS MB | peak RSS MB |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['round']} | {r['answered']} | {r['errors']} | {r['p50_ms']} | {r['p95_ms']} | {r['max_ms']} | "
              f"{r['rss_mb']} | {r['peak_rss_mb']} |" for r in result["rounds"]]
    md = "\n".join(lines)
    (args.out / "bench_library.json").write_text(json.dumps(result, indent=2))
    (args.out / "bench_library.md").write_text(md + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
