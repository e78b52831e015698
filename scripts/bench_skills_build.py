"""Skill compilation benchmark: compile time, navigation files, incremental updates.

    python scripts/bench_skills_build.py DATA/scifact/corpus.jsonl [--out bench-out/skills-build]
        [--llm --sample 200] [--set llm.provider=llamacpp ...]

No-LLM mode (default), on the whole corpus:
  1. a full compile with the configured embedder, timed end to end (wall seconds, split into
     load / embed / compile / write), the number of navigation files and their median size;
  2. incremental: compile 90% of the corpus (a fixed random split), add the other 10% with
     `skills add` at each `--drifts` value (0.34 is the default; 0 re-summarises every touched
     cluster), and count the summaries recomputed against the full compile's. Document vectors
     from step 1 are reused (by text) so step 2 measures clustering and summaries, not
     re-embedding. `--vectors-cache FILE.npz` keeps them across runs (step 1 is then not cold).
With --llm: the same on a `--sample` of documents with the configured LLM (calls, tokens, minutes
per stage from the client's ledger); the incremental part then counts LLM calls.

Writes JSON and a Markdown table into --out and prints the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.config import load_settings
from bookindex.engine import Engine, SkillsAddRequest, SkillsBuildRequest
from bookindex.providers.embedding import get_corpus_embedder, get_embedder


class CachingEmbedder:
    """The configured embedder with a memo by text: repeated texts are not embedded twice."""

    def __init__(self, inner: Any, path: Path | None = None) -> None:
        self.inner = inner
        self.path = path
        self.memo: dict[str, np.ndarray] = {}
        self.saved: dict[str, np.ndarray] = {}
        if path is not None and path.is_file():
            with np.load(path) as z:
                self.saved = {k: z[k] for k in z.files}

    def save(self) -> None:
        if self.path is not None:
            arrays: dict[str, Any] = {**self.saved, **{_key(t): v for t, v in self.memo.items()}}
            np.savez(self.path, **arrays)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def quantized(self) -> bool:  # recorded in the tree's BuildParams, as the inner embedder's
        return bool(getattr(self.inner, "quantized", False))

    @property
    def max_tokens(self) -> int:
        return int(getattr(self.inner, "max_tokens", 0) or 0)

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        for t in texts:
            if t not in self.memo and _key(t) in self.saved:
                self.memo[t] = self.saved[_key(t)]
        todo = sorted({t for t in texts if t not in self.memo})
        if todo:
            for t, v in zip(todo, self.inner.encode(todo, progress=progress)):
                self.memo[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self.memo[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def _key(text: str) -> str:
    return "k" + hashlib.sha1(text.encode("utf-8")).hexdigest()


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")


def calls(usage: dict[str, Any]) -> int:
    return int(sum(u.get("calls", 0) for u in usage.values()))


def tokens(usage: dict[str, Any]) -> int:
    return int(sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for u in usage.values()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path, help="corpus.jsonl (id, title, text), e.g. DATA/scifact/corpus.jsonl")
    ap.add_argument("--out", type=Path, default=Path("bench-out/skills-build"))
    ap.add_argument("--llm", action="store_true", help="Summarise with the configured LLM (use with --sample).")
    ap.add_argument("--sample", type=int, default=0, help="Use this many documents (a fixed random sample).")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--drifts", default="0.2,0.34,0", help="Drift thresholds of the incremental runs.")
    ap.add_argument("--vectors-cache", type=Path, default=None, help="An .npz memo of document vectors across runs.")
    ap.add_argument("--skip-incremental", action="store_true",
                    help="Only the full compile (with a slow LLM: the incremental counts are the same in no-LLM mode, "
                         "one summary = one call).")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    if not args.corpus.is_file():
        print(f"{args.corpus}: no such file", file=sys.stderr)
        return 2
    settings = load_settings(None, dict(o.split("=", 1) for o in args.overrides))
    # the compiler's corpus embedder (int8, embedding.corpus_tokens); cold unless cached, reused after
    cached = CachingEmbedder(get_corpus_embedder(get_embedder(settings), settings), args.vectors_cache)
    engine = Engine(None, settings, embedder=cached)
    records = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(args.seed)
    if args.sample and args.sample < len(records):
        records = sorted(rng.sample(records, args.sample), key=lambda r: str(r.get("id")))
    no_llm = not args.llm
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="skills-bench-"))
    try:
        full_src = work / "full.jsonl"
        write_jsonl(full_src, records)
        # 1. full compile, real embedder, timed
        t0 = time.perf_counter()
        full = engine.skills.build(SkillsBuildRequest(sources=[str(full_src)], output=str(work / "full"), no_llm=no_llm),
                                   progress=True)
        wall = time.perf_counter() - t0
        cached.save()
        if args.skip_incremental:
            return report(args, full, wall, None)
        # 2. incremental: 90% + 10%, document vectors reused
        inc_engine = engine
        shuffled = list(records)
        rng.shuffle(shuffled)
        cut = int(round(len(shuffled) * 0.9))
        base, extra = shuffled[:cut], shuffled[cut:]
        write_jsonl(work / "base.jsonl", base)
        write_jsonl(work / "extra.jsonl", extra)
        part = inc_engine.skills.build(SkillsBuildRequest(sources=[str(work / "base.jsonl")], output=str(work / "inc"),
                                                          no_llm=no_llm))
        adds = []
        for i, drift in enumerate(float(x) for x in args.drifts.split(",")):
            shutil.copytree(work / "inc", work / f"inc{i}")
            adds.append((drift, inc_engine.skills.add(SkillsAddRequest(
                folder=str(work / f"inc{i}"), sources=[str(work / "extra.jsonl")], drift=drift, no_llm=no_llm))))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(args, full, wall, (part, extra, adds))


def report(args: argparse.Namespace, full: Any, wall: float, inc: tuple[Any, list[Any], list[tuple[float, Any]]] | None) -> int:
    """Print and save the JSON and the Markdown table."""
    mode = f"LLM {full.llm}" if full.llm else "no LLM"
    result = {
        "corpus": str(args.corpus), "documents": full.documents, "mode": mode, "sample": args.sample or None,
        "full": full.model_dump(mode="json"), "wall_seconds": round(wall, 1),
        "incremental": None,
    }
    unit = "LLM calls" if full.llm else "summaries"
    full_cost = calls(full.llm_usage) if full.llm else full.summaries
    def cost(r: Any) -> int:
        return calls(r.llm_usage) if full.llm else r.summaries
    rows = [
        "| measure | value |", "|---|---|",
        f"| corpus | {args.corpus.name}, {full.documents} documents ({mode}) |",
        f"| compile wall time | {wall:.1f} s (load {full.timings['load']:.1f}, embed {full.timings['embed']:.1f}, "
        f"cluster + summarise {full.timings['compile']:.1f}, write {full.timings['write']:.1f}) |",
        f"| hierarchy | {full.levels} levels, {full.roots} skills, {full.leaves} leaves, {full.clusters} clusters |",
        f"| navigation files | {full.files}, median {full.median_file_bytes:.0f} B, max {full.max_file_bytes} B |",
    ]
    if full.llm:
        rows.append(f"| LLM (full compile) | {calls(full.llm_usage)} calls, {tokens(full.llm_usage)} tokens, "
                    f"{sum(u.get('seconds', 0) for u in full.llm_usage.values()) / 60:.1f} min in the model |")
    rows.append(f"| full compile {unit} | {full_cost} |")
    if inc is not None:
        part, extra, adds = inc
        result["incremental"] = {
            "base_documents": part.documents, "added": len(extra), "base_build": part.model_dump(mode="json"),
            **{f"drift_{d:g}": r.model_dump(mode="json", exclude={"added"}) for d, r in adds},
        }
        rows.append(f"| incremental base: compile {part.documents} | {cost(part)} {unit}, {part.clusters} clusters |")
        rows += [f"| add {len(extra)}, drift {d:g} | {cost(r)} {unit} ({cost(r) / max(1, full_cost):.1%} of a full compile); "
                 f"{r.touched} clusters touched, {r.splits} splits, {r.seconds:.1f} s |" for d, r in adds]
    table = "\n".join(rows)
    tag = f"{'llm' if full.llm else 'nollm'}-{args.sample or 'all'}"
    (args.out / f"skills-build-{tag}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    (args.out / f"skills-build-{tag}.md").write_text(table + "\n", encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
