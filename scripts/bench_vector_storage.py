#!/usr/bin/env python
"""npz files vs LanceDB tables as the vector store: build time, open time, search latency.

    python scripts/bench_vector_storage.py HANDBOOK_DIR [--docs libtasn1.pdf gnuplot.pdf]
                                          [--repeat 1] [--work /tmp/bvs] [--out bench-out/vectors]

(a) build: `Engine.index` of each document (no LLM) with storage.vectors = npz and = lancedb, each
    in a fresh process, alternating; wall and process CPU seconds, and the seconds spent inside
    the vector writes themselves (save_mirror / lance_store.write_*, with the lancedb import), which load on a shared
    machine disturbs far less than the whole build.
(c) read, each in a fresh process: the import, opening the vectors of one document as a matrix,
    and the search latency of the 20 questions of scripts/bench_query.py (encoded once, up front):
    npz = np.load + numpy dot product; lancedb = import + connect + open_table, the matrix through
    to_arrow (what a query reads with that backend), and LanceDB's own `table.search(q).limit(10)`.
    Also library-wide: every document's nodes in one LanceDB table against the npz matrices stacked.
Query p50/p95 of the whole `ask` path are scripts/bench_query.py's. Writes JSON + Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

K = 10


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _timed(fn: Callable[..., Any], acc: dict[str, float], key: str) -> Callable[..., Any]:
    def wrapper(*args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            acc[key] = acc.get(key, 0.0) + time.perf_counter() - t
    return wrapper


def build_one(pdf: Path, lib: Path, backend: str) -> dict[str, Any]:
    """One `Engine.index` in this process, with the vector writes timed."""
    from bookindex.core.config import load_settings
    from bookindex.engine import Engine
    from bookindex.indexing import document_folder
    from bookindex.storage import lance_store

    writes: dict[str, float] = {}
    document_folder.save_mirror = _timed(document_folder.save_mirror, writes, "npz")
    lance_store.write_node_table = _timed(lance_store.write_node_table, writes, "lancedb")
    lance_store.write_graph_tables = _timed(lance_store.write_graph_tables, writes, "lancedb")
    lance_store.require = _timed(lance_store.require, writes, "lancedb")  # the import, before the build
    settings = load_settings(overrides={"llm.provider": "none", "storage.vectors": backend}, env={})
    shutil.rmtree(lib, ignore_errors=True)
    t0, c0 = time.perf_counter(), time.process_time()
    rep = Engine(lib, settings).index(pdf)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    doc_dir = next((lib / "docs").iterdir())
    store = [p for p in doc_dir.iterdir() if p.suffix in (".npz", ".lance")]
    size = sum(f.stat().st_size for p in store for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())
    return {"doc": pdf.name, "backend": backend, "nodes": rep.nodes, "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2), "vector_write_s": round(writes.get(backend, 0.0), 3),
            "store_mb": round(size / 2**20, 2), "timings": document_folder.read_build_report(doc_dir)["timings"]}


def read_one(doc_dirs: list[Path], backend: str, qfile: Path) -> dict[str, Any]:
    """Open the vectors of `doc_dirs` and search them with the query vectors in `qfile`."""
    queries = np.load(qfile)
    out: dict[str, Any] = {"backend": backend, "docs": len(doc_dirs)}
    t0 = time.perf_counter()
    if backend == "npz":
        from bookindex.storage.vector_mirror import load_mirror

        # document_folder.NODE_VECTORS_FILE, spelled here so that the timed open imports the npz reader only
        mats = [load_mirror(d / "node_vectors.npz") for d in doc_dirs]
        out["open_s"] = time.perf_counter() - t0
        ids = [i for m in mats for i in m[0]]
        mat = np.vstack([m[1] for m in mats])
        lat = []
        for q in queries:
            t = time.perf_counter()
            scores = mat @ q
            top = np.argpartition(-scores, K)[:K]
            hits = [ids[i] for i in top[np.argsort(-scores[top])]]
            lat.append(time.perf_counter() - t)
        out["first_hit"] = hits[0]
    else:
        import lancedb  # the cost a query process pays for this backend

        out["import_s"] = time.perf_counter() - t0
        # deferred: only this LanceDB branch reads them; the npz branch times its reads without them
        from bookindex.indexing.document_folder import NODE_VECTORS_DB
        from bookindex.storage import lance_store

        t1 = time.perf_counter()
        if len(doc_dirs) == 1:
            tbl = lancedb.connect(str(doc_dirs[0] / NODE_VECTORS_DB)).open_table(lance_store.NODE_TABLE)
            out["connect_open_table_s"] = time.perf_counter() - t1
            t2 = time.perf_counter()
            lance_store.read_node_table(doc_dirs[0] / NODE_VECTORS_DB)
            out["to_matrix_s"] = time.perf_counter() - t2
        else:  # library-wide: all documents' node rows in one table, as a cross-document search would
            tmp = Path(tempfile.mkdtemp(prefix="bvs-lib-"))
            db = lancedb.connect(str(tmp))
            tables = [lancedb.connect(str(d / NODE_VECTORS_DB)).open_table(lance_store.NODE_TABLE).to_arrow()
                      for d in doc_dirs]
            db.create_table("nodes", tables[0])
            for t in tables[1:]:
                db.open_table("nodes").add(t)
            t1 = time.perf_counter()
            tbl = lancedb.connect(str(tmp)).open_table("nodes")
            out["connect_open_table_s"] = time.perf_counter() - t1
        out["open_s"] = time.perf_counter() - t0
        lat = []
        for q in queries:
            t = time.perf_counter()
            rows = tbl.search(q).limit(K).select(["node_id"]).to_list()
            lat.append(time.perf_counter() - t)
        out["first_hit"] = rows[0]["node_id"]
    out.update({"search_p50_ms": statistics.median(lat) * 1000, "search_p95_ms": pct(lat, 0.95) * 1000,
                "queries": len(lat)})
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}


def child(*argv: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, env=env)
    if res.returncode:
        raise SystemExit(res.stderr[-3000:])
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_build":
        print(json.dumps(build_one(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4])))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "_read":
        print(json.dumps(read_one([Path(p) for p in sys.argv[4:]], sys.argv[2], Path(sys.argv[3]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("handbooks", type=Path)
    ap.add_argument("--docs", nargs="+", default=["libtasn1.pdf", "gnuplot.pdf"])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--reads", type=int, default=3, help="fresh read processes per case")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bvs"))
    ap.add_argument("--out", type=Path, default=Path("bench-out/vectors"))
    ap.add_argument("--builds", type=Path, default=None,
                    help="reuse the libraries under --work and the build rows of this bench_vectors.json")
    args = ap.parse_args()

    builds = json.loads(args.builds.read_text())["builds"] if args.builds else []
    for r in range(0 if args.builds else args.repeat):
        for name in args.docs:
            order = ("npz", "lancedb") if r % 2 == 0 else ("lancedb", "npz")
            for backend in order:
                b = child("_build", str(args.handbooks / name), str(args.work / backend / Path(name).stem), backend)
                print(json.dumps(b), file=sys.stderr)
                builds.append(b)

    from bench_query import QUESTIONS

    from bookindex.core.config import load_settings
    from bookindex.providers.embedding import get_embedder

    emb = get_embedder(load_settings(overrides={"llm.provider": "none"}, env={}))
    qfile = args.work / "queries.npy"
    np.save(qfile, np.asarray(emb.encode(QUESTIONS), dtype=np.float32))

    def dirs(backend: str, names: list[str]) -> list[str]:
        return [str(next((args.work / backend / Path(n).stem / "docs").iterdir())) for n in names]

    reads = []
    cases = [[n] for n in args.docs] + ([args.docs] if len(args.docs) > 1 else [])
    for names in cases:
        for _ in range(args.reads):
            for backend in ("npz", "lancedb"):
                r = child("_read", backend, str(qfile), *dirs(backend, names))
                r["case"] = "+".join(names)
                print(json.dumps(r), file=sys.stderr)
                reads.append(r)

    def best(rows: list[dict[str, Any]], key: str) -> float:
        return min(r[key] for r in rows if key in r)

    md = ["| document | backend | build wall s | build CPU s | vector writes s | store MiB |", "|---|---|---|---|---|---|"]
    for name in args.docs:
        for backend in ("npz", "lancedb"):
            rows = [b for b in builds if b["doc"] == name and b["backend"] == backend]
            md.append(f"| {name} ({rows[0]['nodes']} nodes) | {backend} | {best(rows, 'wall_s')} | "
                      f"{best(rows, 'cpu_s')} | {best(rows, 'vector_write_s')} | {rows[0]['store_mb']} |")
    md += ["", "| vectors of | backend | import s | open s (import incl.) | to matrix s | search p50 ms | "
           "search p95 ms |", "|---|---|---|---|---|---|---|"]
    for names in cases:
        for backend in ("npz", "lancedb"):
            rows = [r for r in reads if r["case"] == "+".join(names) and r["backend"] == backend]
            imp = f"{best(rows, 'import_s'):.3f}" if backend == "lancedb" else "0"
            tom = f"{best(rows, 'to_matrix_s'):.3f}" if any("to_matrix_s" in r for r in rows) else "–"
            md.append(f"| {'+'.join(names)} | {backend} | {imp} | {best(rows, 'open_s'):.3f} | {tom} | "
                      f"{statistics.median(r['search_p50_ms'] for r in rows):.2f} | "
                      f"{statistics.median(r['search_p95_ms'] for r in rows):.2f} |")
    text = "\n".join(md)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_vectors.json").write_text(json.dumps(
        {"builds": builds, "reads": reads, "load_avg_1m": os.getloadavg()[0], "cpus": os.cpu_count()}, indent=2))
    (args.out / "bench_vectors.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
