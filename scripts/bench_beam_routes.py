"""No-LLM beam variants on one compiled skill folder: routes, beam widths, leaf
pooling and soft membership, against flat dense search over the same document vectors.

    python scripts/bench_beam_routes.py DATA SKILLS [--start 0 --end 200] \
        beam=4 beam=4,route=centroid beam=4,route=centroid,soft=2,margin=0.1 beam=2,leaf_pool=1 ...

DATA holds questions.jsonl (`question`, `gold_doc_ids`); SKILLS was compiled from its corpus.
Each configuration is `key=value` pairs: beam (width), route (members|leaves|centroid|summary|
both), lookahead (1|0), leaf_pool (1|0), rank (hybrid|dense: how the reached documents are ranked), soft and margin (soft membership recomputed in memory
from the folder's leaves and vectors: recall only, the files are not rewritten, so nav tokens
do not include the extra listing lines). Prints one JSON line per configuration: R@1/5/10,
all@10, documents fetched, beam pool, navigation tokens per question, and flat dense on the same
questions. Question vectors are embedded once with the configured embedder (`--qcache`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.providers.embedding import get_embedder  # noqa: E402
from bookindex.skills.compiler.cluster import soft_members  # noqa: E402
from bookindex.skills.navigator.beam import beam_search  # noqa: E402
from bookindex.skills.navigator.opened import OpenedSkills  # noqa: E402


class CachedQueries:
    """The question vectors, looked up by text (the beam embeds its question through this)."""

    def __init__(self, name: str, questions: list[str], vectors: np.ndarray) -> None:
        self.name, self.dim = name, int(vectors.shape[1])
        self.by_text = dict(zip(questions, vectors))

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        return np.stack([self.by_text[t] for t in texts])


def set_soft(opened: OpenedSkills, extra: int, margin: float) -> int:
    """Recompute every leaf's `also` in memory; returns the number of listings."""
    leaves = opened.tree.leaves()
    row = {d: i for i, d in enumerate(opened.vectors.doc_ids)}
    also = soft_members(opened.vectors.doc_vectors, [[row[d] for d in c.documents] for c in leaves], extra, margin)
    for c, rows in zip(leaves, also):
        c.also = [opened.vectors.doc_ids[r] for r in rows]
    opened.__dict__.pop("_listed", None)
    return sum(len(c.documents) + len(c.also) for c in leaves)


def scores(ranked: list[list[str]], gold: list[set[str]]) -> dict[str, float]:
    out = {f"R@{k}": round(float(np.mean([len(g & set(r[:k])) / len(g) for r, g in zip(ranked, gold)])), 3) for k in (1, 5, 10)}
    out["all@10"] = round(float(np.mean([float(g <= set(r[:10])) for r, g in zip(ranked, gold)])), 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("skills", type=Path)
    ap.add_argument("configs", nargs="+", help="e.g. beam=4,route=members")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--end", type=int, default=None)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--qcache", type=Path, default=None, help=".npy of the question vectors (all questions, file order)")
    args = ap.parse_args(argv)
    path = args.data / "questions.jsonl"
    if not path.is_file():
        print(f"{path}: no such file", file=sys.stderr)
        return 2
    qs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    texts = [q["question"] for q in qs]
    emb = get_embedder(load_settings(None))
    if args.qcache is not None and args.qcache.is_file():
        qv = np.load(args.qcache)
    else:
        qv = emb.encode(texts)
        if args.qcache is not None:
            np.save(args.qcache, qv)
    opened = OpenedSkills(args.skills)
    queries = CachedQueries(emb.name, texts, qv)
    sel = range(args.start, min(args.end or len(qs), len(qs)))
    gold = [set(map(str, qs[i]["gold_doc_ids"])) for i in sel]
    ids = opened.vectors.doc_ids
    top = np.argsort(-(qv[list(sel)] @ opened.vectors.doc_vectors.T), axis=1)[:, :args.k]
    print(json.dumps({"cfg": "flat dense (same vectors)", "n": len(sel), **scores([[ids[i] for i in t] for t in top], gold)}))
    base_also = {c.id: list(c.also) for c in opened.tree.leaves()}
    for spec in args.configs:
        cfg: dict[str, Any] = dict(kv.split("=", 1) for kv in spec.split(","))
        if "soft" in cfg:
            listed = set_soft(opened, int(cfg["soft"]), float(cfg.get("margin", 0)))
        else:  # the folder's own listings
            for c in opened.tree.leaves():
                c.also = list(base_also[c.id])
            opened.__dict__.pop("_listed", None)
            listed = sum(len(c.documents) + len(c.also) for c in opened.tree.leaves())
        t0 = time.process_time()
        ranked, pool, nav, fetched = [], [], [], []
        for i in sel:
            a = beam_search(opened, queries, texts[i], k=args.k, beam=int(cfg["beam"]) if "beam" in cfg else None,
                            route=cfg.get("route", "members"), lookahead=cfg.get("lookahead", "1") == "1",
                            leaf_pool=cfg.get("leaf_pool") == "1", rank=cfg.get("rank", "hybrid"))
            ranked.append([d.doc_id for d in a.documents])
            pool.append(a.usage.candidates)
            nav.append(a.usage.navigation_tokens)
            fetched.append(a.usage.documents_fetched)
        print(json.dumps({"cfg": spec, "n": len(sel), **scores(ranked, gold), "fetched": round(float(np.mean(fetched)), 1),
                          "pool": round(float(np.mean(pool))), "nav_tok": round(float(np.mean(nav))),
                          "listings": listed, "cpu_s_per_q": round((time.process_time() - t0) / max(1, len(sel)), 4)}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
