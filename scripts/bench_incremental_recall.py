"""Incremental update vs full build, recall and cost, without an LLM.

    python scripts/bench_incremental_recall.py DATA/scifact [--seeds 0,1,2] [--out bench-out/incremental]
        [--vectors-cache FILE.npz]

A full compile of DATA/corpus.jsonl, then for each seed a compile of a random 90% of it (split
as `bench_skills_build.py` splits: `random.Random(seed)` shuffle) plus `skills add` of the other
10% at the default drift. Every build shares one memo of document vectors by text, so the trees
differ only in their clustering: the int8 corpus embedder scales activations per batch, and
separate builds would otherwise embed the same document slightly differently. Each tree is then
searched with the members beam at width 4 (and the centroid beam) for every question in
DATA/questions.jsonl; recall is compared with the full build's on the same questions.

Writes JSON and a Markdown table into --out and prints the table.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_beam_routes import CachedQueries, scores  # noqa: E402
from bench_skills_build import CachingEmbedder, write_jsonl  # noqa: E402

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.engine import Engine, SkillsAddRequest, SkillsBuildRequest  # noqa: E402
from bookindex.providers.embedding import get_corpus_embedder, get_embedder  # noqa: E402
from bookindex.skills.navigator.beam import beam_search  # noqa: E402
from bookindex.skills.navigator.opened import OpenedSkills  # noqa: E402

ROUTES = ("members", "centroid")


def recall(folder: Path, queries: CachedQueries, texts: list[str], gold: list[set[str]]) -> dict[str, Any]:
    """Flat dense on the folder's vectors, and the beam (width 4) by each route."""
    opened = OpenedSkills(folder)
    ids = opened.vectors.doc_ids
    qv = np.stack([queries.by_text[t] for t in texts])
    top = np.argsort(-(qv @ opened.vectors.doc_vectors.T), axis=1)[:, :10]
    out: dict[str, Any] = {"dense": scores([[ids[i] for i in t] for t in top], gold)}
    for route in ROUTES:
        ranked = [[d.doc_id for d in beam_search(opened, queries, t, k=10, beam=4, route=route).documents]
                  for t in texts]
        out[route] = scores(ranked, gold)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path, help="a folder with corpus.jsonl and questions.jsonl, e.g. DATA/scifact")
    ap.add_argument("--seeds", default="0,1,2", help="90/10 splits, one per seed")
    ap.add_argument("--out", type=Path, default=Path("bench-out/incremental"))
    ap.add_argument("--vectors-cache", type=Path, default=None, help="an .npz memo of document vectors across runs")
    args = ap.parse_args(argv)
    corpus, qpath = args.data / "corpus.jsonl", args.data / "questions.jsonl"
    for path in (corpus, qpath):
        if not path.is_file():
            print(f"{path}: no such file", file=sys.stderr)
            return 2
    settings = load_settings(None, overrides={"llm.provider": "none"})
    embedder = get_embedder(settings)
    memo = CachingEmbedder(get_corpus_embedder(embedder, settings), args.vectors_cache)
    engine = Engine(None, settings, embedder=memo)
    records = [json.loads(x) for x in corpus.read_text(encoding="utf-8").splitlines() if x.strip()]
    qs = [json.loads(x) for x in qpath.read_text(encoding="utf-8").splitlines() if x.strip()]
    texts = [q["question"] for q in qs]
    gold = [set(map(str, q["gold_doc_ids"])) for q in qs]
    queries = CachedQueries(embedder.name, texts, embedder.encode(texts))
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="incremental-") as tmp:
        work = Path(tmp)
        write_jsonl(work / "all.jsonl", records)
        full = engine.skills.build(SkillsBuildRequest(sources=[str(work / "all.jsonl")], output=str(work / "full"),
                                                      no_llm=True), progress=True)
        memo.save()
        base_row = {"build": "full", "clusters": full.clusters, "summaries": full.summaries,
                    **recall(work / "full", queries, texts, gold)}
        rows.append(base_row)
        print(json.dumps(base_row), flush=True)
        for seed in (int(s) for s in args.seeds.split(",")):
            shuffled = list(records)
            random.Random(seed).shuffle(shuffled)
            cut = int(round(len(shuffled) * 0.9))
            write_jsonl(work / f"base{seed}.jsonl", shuffled[:cut])
            write_jsonl(work / f"extra{seed}.jsonl", shuffled[cut:])
            folder = work / f"inc{seed}"
            engine.skills.build(SkillsBuildRequest(sources=[str(work / f"base{seed}.jsonl")], output=str(folder),
                                                   no_llm=True))
            t0 = time.process_time()
            add = engine.skills.add(SkillsAddRequest(folder=str(folder), sources=[str(work / f"extra{seed}.jsonl")],
                                                     no_llm=True))
            row = {"build": f"90% + add 10%, seed {seed}", "clusters": add.clusters, "summaries": add.summaries,
                   "touched": add.touched, "splits": add.splits, "add_cpu_s": round(time.process_time() - t0, 1),
                   **recall(folder, queries, texts, gold)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    table = ["| build | clusters | summaries recomputed | touched / splits | add CPU s | members beam 4 R@10 | Δ vs full "
             "| centroid beam 4 R@10 | flat dense R@10 |", "|---|---|---|---|---|---|---|---|---|"]
    ref = base_row["members"]["R@10"]
    for r in rows:
        share = "" if r is base_row else f" ({r['summaries'] / max(1, full.summaries):.1%})"
        delta = "" if r is base_row else f"{r['members']['R@10'] - ref:+.3f}"
        table.append(f"| {r['build']} | {r['clusters']} | {r['summaries']}{share} | "
                     f"{r.get('touched', '')}{' / ' + str(r['splits']) if 'splits' in r else ''} | "
                     f"{r.get('add_cpu_s', '')} | {r['members']['R@10']:.3f} | {delta} | "
                     f"{r['centroid']['R@10']:.3f} | {r['dense']['R@10']:.3f} |")
    text = "\n".join(table)
    result = {"data": str(args.data), "questions": len(qs), "documents": len(records), "rows": rows}
    (args.out / "incremental-recall.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    (args.out / "incremental-recall.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
