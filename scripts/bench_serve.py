#!/usr/bin/env python
"""Load test of `bookindex serve`: concurrent clients asking no-LLM questions over HTTP.

    python scripts/bench_serve.py DATA_DIR [--library bench-out/serve/lib] [--seconds 60]
                                  [--clients 1,8,32] [--upload zoo.pdf] [--out bench-out/serve]
                                  [--libraries N]

DATA_DIR holds handbooks/gnuplot.pdf; it is indexed into --library once, without an LLM (not
timed), when the library does not hold it yet. The server runs as its own process
(`bookindex serve`, LLM provider none, no keys on 127.0.0.1); for each client count, that many
concurrent clients (asyncio, one keep-alive connection each) send POST /ask for --seconds, each
question drawn in turn from the fixed gnuplot set of scripts/bench_query.py. Then the same with
8 clients while an upload of DATA_DIR/handbooks/<--upload> is being indexed by the server's job
worker. Bounded: every phase stops at --seconds or --max-requests, the upload phase also when
its job ends. With `--libraries N` (N > 1) the server serves a folder of N copies of the library
(`bookindex serve ROOT`) and client i asks library i mod N at `/libraries/{name}/ask`. Reports throughput (answered questions/s), latency p50/p95/p99 and errors (non-200
or transport errors); writes JSON + a Markdown table to --out. Targets (2 cores):
>= 20 questions/s at 8 clients, p95 <= 500 ms, zero errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_query import QUESTIONS, percentile  # noqa: E402

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.engine import Engine  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_index(library: Path, pdf: Path) -> None:
    engine = Engine(library, load_settings(overrides={"llm.provider": "none"}))
    if pdf.name not in {d.name for d in engine.documents()}:
        print(f"indexing {pdf} without an LLM (not timed) ...", file=sys.stderr, flush=True)
        engine.index(pdf)


def library_copies(library: Path, root: Path, n: int) -> list[str]:
    """`n` copies of the built library under `root` (made once; the server state is left out)."""
    names = [f"lib{i}" for i in range(n)]
    for name in names:
        if not (root / name / "library.json").is_file():
            shutil.copytree(library, root / name, ignore=shutil.ignore_patterns(".server"))
    return names


def start_server(library: Path, port: int, log: Path, workers: int = 1) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("BOOKINDEX_API_KEYS", "BOOKINDEX_ADMIN_KEYS")}
    env.update(PYTHONPATH=str(REPO), BOOKINDEX_LLM__PROVIDER="none")
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "bookindex.cli.app", "serve", str(library), "--port", str(port),
                                 "--workers", str(workers)],
                                env=env, stdout=fh, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"server exited ({proc.returncode}); see {log}")
        try:
            ready = log.read_text(errors="replace").count("Application startup complete")
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200 and ready >= workers:
                return proc
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"server did not start in 120 s; see {log}")
        time.sleep(0.3)


async def load(base: str, doc: str, clients: int, seconds: float, max_requests: int,
               method: str, stop_when: Any = None, prefixes: tuple[str, ...] = ("",)) -> dict[str, Any]:
    """`clients` concurrent loops of POST /ask until the time, count or `stop_when()` bound;
    client i asks under `prefixes[i % len(prefixes)]` (a library's route prefix)."""
    lat: list[float] = []
    errors: list[str] = []
    sent = 0
    t_end = time.monotonic() + seconds

    async def client(i: int) -> None:
        nonlocal sent
        async with httpx.AsyncClient(base_url=base, timeout=60) as http:
            n = i
            while time.monotonic() < t_end and sent < max_requests and not (stop_when and stop_when()):
                sent += 1
                q = QUESTIONS[n % len(QUESTIONS)]
                n += clients
                t = time.perf_counter()
                try:
                    r = await http.post(f"{prefixes[i % len(prefixes)]}/ask",
                                        json={"question": q, "doc": doc, "method": method})
                    ok = r.status_code == 200 and "answer" in r.json()
                    if not ok:
                        errors.append(f"{r.status_code}: {r.text[:200]}")
                except httpx.HTTPError as e:
                    errors.append(f"{type(e).__name__}: {e}")
                    ok = False
                if ok:
                    lat.append((time.perf_counter() - t) * 1000)

    t0 = time.monotonic()
    await asyncio.gather(*(client(i) for i in range(clients)))
    wall = time.monotonic() - t0
    return {"clients": clients, "seconds": round(wall, 1), "answered": len(lat), "errors": len(errors),
            "error_samples": errors[:3], "qps": round(len(lat) / wall, 2) if wall else 0.0,
            "p50_ms": round(statistics.median(lat), 1) if lat else None,
            "p95_ms": round(percentile(lat, 0.95), 1) if lat else None,
            "p99_ms": round(percentile(lat, 0.99), 1) if lat else None}


async def warm_up(base: str, doc: str, workers: int, method: str, prefixes: tuple[str, ...] = ("",)) -> None:
    """Every server process opens the document and loads its models before anything is timed.

    A keep-alive connection stays with the process that accepted it, so the warm-up opens a new
    connection per request: 8 per server process, sent 2 x workers at a time, spread the accepts
    over every process (the kernel hands each to a waiting one).
    """
    async def one(i: int) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=120) as http:
            for prefix in prefixes:
                await http.post(f"{prefix}/ask", json={"question": QUESTIONS[i % len(QUESTIONS)], "doc": doc,
                                                       "method": method})

    for start in range(0, 8 * workers, 2 * workers):
        await asyncio.gather(*(one(i) for i in range(start, start + 2 * workers)))


def upload(base: str, pdf: Path) -> str:
    with open(pdf, "rb") as fh:
        r = httpx.post(f"{base}/documents", files={"file": (pdf.name, fh, "application/pdf")}, timeout=120)
    r.raise_for_status()
    return str(r.json()["id"])


def job_state(base: str, job_id: str) -> dict[str, Any]:
    return httpx.get(f"{base}/jobs/{job_id}", timeout=10).json()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="the data folder (holds handbooks/gnuplot.pdf)")
    ap.add_argument("--library", type=Path, default=Path("bench-out/serve/lib"))
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--clients", default="1,8,32")
    ap.add_argument("--max-requests", type=int, default=20000, help="per phase")
    ap.add_argument("--method", default="bookindex")
    ap.add_argument("--workers", type=int, default=1, help="server processes (`serve --workers`)")
    ap.add_argument("--upload", default="zoo.pdf", help="handbook uploaded during the last phase ('' to skip)")
    ap.add_argument("--out", type=Path, default=Path("bench-out/serve"))
    ap.add_argument("--libraries", type=int, default=1,
                    help="serve a folder of this many copies of the library; clients spread over them")
    args = ap.parse_args()

    pdf = args.data / "handbooks" / "gnuplot.pdf"
    if not pdf.is_file():
        raise SystemExit(f"{pdf}: not found")
    args.out.mkdir(parents=True, exist_ok=True)
    ensure_index(args.library, pdf)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    served, prefixes = args.library, ("",)
    if args.libraries > 1:
        served = args.out / "libraries"
        prefixes = tuple(f"/libraries/{name}" for name in library_copies(args.library, served, args.libraries))
    proc = start_server(served, port, args.out / "server.log", args.workers)
    rows: list[dict[str, Any]] = []
    try:
        asyncio.run(warm_up(base, pdf.name, args.workers, args.method, prefixes))
        for n in [int(x) for x in args.clients.split(",") if x.strip()]:
            row = asyncio.run(load(base, pdf.name, n, args.seconds, args.max_requests, args.method,
                                   prefixes=prefixes))
            row["phase"] = "idle server"
            rows.append(row)
            print(json.dumps(row), flush=True)
        if args.upload:
            up = args.data / "handbooks" / args.upload
            job_id = upload(base + prefixes[0], up)
            while job_state(base + prefixes[0], job_id)["state"] == "queued":
                time.sleep(0.1)
            t0 = time.monotonic()
            row = asyncio.run(load(base, pdf.name, 8, args.seconds, args.max_requests, args.method,
                                   stop_when=lambda: job_state(base + prefixes[0], job_id)["state"] != "running",
                                   prefixes=prefixes))
            job = job_state(base + prefixes[0], job_id)
            row.update(phase=f"while indexing {up.name}", job_state=job["state"],
                       job_progress=job["progress"], overlap_s=round(time.monotonic() - t0, 1))
            rows.append(row)
            print(json.dumps(row), flush=True)
            deadline = time.monotonic() + 600
            while job_state(base + prefixes[0], job_id)["state"] in ("queued", "running") and time.monotonic() < deadline:
                time.sleep(1)
            httpx.delete(f"{base}{prefixes[0]}/documents/{up.name}", timeout=60)  # leave the library as it was
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()

    res = {"doc": pdf.name, "method": args.method, "workers": args.workers, "seconds_per_phase": args.seconds,
           "libraries": args.libraries,
           "rows": rows,
           "cpu_count": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
           "python": platform.python_version(),
           "targets": {"qps_at_8": 20, "p95_ms": 500, "errors": 0}}
    at8 = next((r for r in rows if r["clients"] == 8 and r["phase"] == "idle server"), None)
    if at8:
        res["meets"] = {"qps_at_8": at8["qps"] >= 20, "p95_at_8": (at8["p95_ms"] or 1e9) <= 500,
                        "zero_errors": all(r["errors"] == 0 for r in rows)}
    lines = ["| phase | clients | s | answered | q/s | p50 ms | p95 ms | p99 ms | errors |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['phase']} | {r['clients']} | {r['seconds']} | {r['answered']} | {r['qps']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['errors']} |")
    table = "\n".join(lines)
    (args.out / "bench_serve.json").write_text(json.dumps(res, indent=2))
    (args.out / "bench_serve.md").write_text(table + "\n")
    print(table)
    print(f"server processes: {args.workers}; load average (1 min) at the end: {res['load_avg_1m']} on {res['cpu_count']} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
