"""Corpus embedding speed vs recall: which ONNX settings embed a corpus fastest for
the least recall lost.

    python scripts/bench_corpus_embedding.py DATA/scifact --variants fp32:256,int8:256,fp32:128,int8:128 \
        [--sample 300] [--batch 32] [--cache DIR] [--unsorted]

Per variant (`precision:max tokens`):
  1. throughput on a fixed random `--sample` of documents: documents per second of wall time and
     of process CPU time (the machine is shared: CPU time is the steadier figure);
  2. flat dense recall@1/5/10 and all@10 over every question: the whole corpus embedded with the
     variant (cached by variant in --cache, so a re-run does not re-embed), the questions with the
     library's own embedder (fp32, the model's full length), as the skills navigators do.
Documents are embedded as the compiler embeds them: "title\\ntext" cut to 2,000 characters.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.config import cache_dir, load_settings  # noqa: E402
from bookindex.providers.embedding import default_model_path  # noqa: E402
from bookindex.providers.embedding_onnx import OnnxEmbedder  # noqa: E402

EMBED_CHARS = 2000


def load(data: Path) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    docs = [json.loads(x) for x in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    qs = [json.loads(x) for x in (data / "questions.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    ids = [str(d["id"]) for d in docs]
    texts = [f"{d.get('title', '')}\n{d.get('text', '')}"[:EMBED_CHARS] for d in docs]
    return ids, texts, qs


def embedder(spec: str, batch: int, threads: int | None) -> OnnxEmbedder:
    precision, _, tokens = spec.partition(":")
    return OnnxEmbedder(default_model_path(), cache_dir(load_settings(None)), "all-MiniLM-L6-v2", batch_size=batch,
                        threads=threads, quantize=precision == "int8", max_tokens=int(tokens) if tokens else None)


def timed(emb: OnnxEmbedder, texts: list[str], unsorted: bool) -> dict[str, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    if unsorted:  # the batches in input order: as much padding as the texts' length spread gives
        for s in range(0, len(texts), emb.batch_size):
            emb._encode_batch(texts[s:s + emb.batch_size])
    else:
        emb.encode(texts)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "docs_per_s_wall": round(len(texts) / wall, 2),
            "docs_per_cpu_s": round(len(texts) / cpu, 2)}


def recall(doc_vecs: np.ndarray, ids: list[str], q_vecs: np.ndarray, qs: list[dict[str, Any]]) -> dict[str, float]:
    top = np.argsort(-(q_vecs @ doc_vecs.T), axis=1)[:, :10]
    out: dict[str, float] = {}
    for k in (1, 5, 10):
        rec, hit = [], []
        for row, q in zip(top, qs):
            got = {ids[i] for i in row[:k]}
            gold = set(map(str, q["gold_doc_ids"]))
            rec.append(len(gold & got) / len(gold))
            hit.append(float(gold <= got))
        out[f"R@{k}"] = round(float(np.mean(rec)), 4)
        out[f"all@{k}"] = round(float(np.mean(hit)), 4)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path, help="folder with corpus.jsonl and questions.jsonl")
    ap.add_argument("--variants", default="fp32:256,int8:256,fp32:128,int8:128")
    ap.add_argument("--sample", type=int, default=300, help="documents timed per variant")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--unsorted", action="store_true", help="time batches in input order (no length sorting)")
    ap.add_argument("--no-recall", action="store_true", help="only the throughput")
    ap.add_argument("--cache", type=Path, default=Path("bench-out/corpus-embedding"))
    args = ap.parse_args(argv)
    if not (args.data / "corpus.jsonl").is_file():
        print(f"{args.data / 'corpus.jsonl'}: no such file", file=sys.stderr)
        return 2
    ids, texts, qs = load(args.data)
    sample = random.Random(0).sample(texts, min(args.sample, len(texts)))
    args.cache.mkdir(parents=True, exist_ok=True)
    qpath = args.cache / f"{args.data.name}-questions.npy"
    if not args.no_recall:
        if not qpath.exists():
            np.save(qpath, embedder("fp32", 32, args.threads).encode([q["question"] for q in qs]))
        q_vecs = np.load(qpath)
    results = []
    for spec in args.variants.split(","):
        emb = embedder(spec, args.batch, args.threads)
        emb.encode(sample[:8])  # warm-up: session arenas, first-call costs
        row: dict[str, Any] = {"variant": spec, "batch": args.batch, "sorted": not args.unsorted,
                               **timed(emb, sample, args.unsorted)}
        if not args.no_recall:
            vpath = args.cache / f"{args.data.name}-{spec.replace(':', '-')}.npy"
            if not vpath.exists():
                t0, c0 = time.perf_counter(), time.process_time()
                np.save(vpath, emb.encode(texts, progress=True))
                row["corpus_wall_s"], row["corpus_cpu_s"] = round(time.perf_counter() - t0, 1), round(time.process_time() - c0, 1)
            row.update(recall(np.load(vpath), ids, q_vecs, qs))
        results.append(row)
        print(json.dumps(row), flush=True)
    (args.cache / f"results-{int(time.time())}.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
