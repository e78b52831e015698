"""Running the corpus benchmark: the rows over one skill folder, then the navigation-cost table.

`run` takes a data folder and a compiled skill folder (`--skills`). Without one, the flat
methods (bm25, dense, hybrid) still run and the methods that need a tree are refused at start:
`flat_store` writes a skill folder with no clusters (the document store and the document
vectors, embedded once and reused) under the cache dir, through the model's own writers, so the
flat baselines are measured before and independently of any compile.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.atomic import write_json_atomic, write_text_atomic
from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.core.protocols import LLM, Embedder
from bookindex.engine import Engine
from bookindex.evaluation.benchmark import Record
from bookindex.evaluation.corpus import CorpusBenchmark, load_corpus
from bookindex.evaluation.loop import RunResult, default_index_dir, run_benchmark, run_settings
from bookindex.evaluation.rows import CORPUS_METHODS, make_rows
from bookindex.skills.model import (
    BuildParams,
    CorpusDocument,
    SkillTree,
    TreeVectors,
    is_skill_dir,
    load_tree,
    save_documents,
    save_tree,
    save_vectors,
)

EMBED_CHARS = 2000  # as the compiler's default `embed_chars`
# the methods that need a compiled tree's clusters (the flat store has none: every question would
# fail), refused at start without --skills
SKILL_TREE_METHODS = ("raptor", "skills-embedding", "skills-llm", "skills-llm-plain")
FLAT_DEFAULT = "bm25,dense,hybrid"  # the methods a run without --skills makes by default
TREE_DEFAULT = "bm25,dense,hybrid,raptor,skills-embedding"  # and with one


def flat_store(data_dir: Path, folder: Path, embedder: Embedder, progress: bool = True) -> Path:
    """A cluster-less skill folder for `data_dir`'s corpus (reused when it holds the same
    documents embedded by the same embedder)."""
    docs = load_corpus(data_dir)
    if is_skill_dir(folder):
        tree = load_tree(folder)
        if tree.params.embedder == embedder.name and len(tree.documents) == len(docs):
            return folder
    folder.mkdir(parents=True, exist_ok=True)
    texts = [f"{title}\n{text}"[:EMBED_CHARS] for _, title, text in docs]
    vecs = np.asarray(embedder.encode(texts, progress=progress), dtype=np.float32)
    save_documents(folder, {d: CorpusDocument(d, title, text, source=f"{data_dir / 'corpus.jsonl'}")
                            for d, title, text in docs})
    save_vectors(folder, TreeVectors([d for d, _, _ in docs], vecs, [], np.zeros((0, vecs.shape[1]), np.float32)))
    # skills.json last: its presence marks the folder complete
    save_tree(folder, SkillTree(roots=[], clusters={}, documents={},
                                params=BuildParams(embedder=embedder.name, embed_chars=EMBED_CHARS)))
    return folder


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _read_recall(r: Record, k: int) -> float:
    gold = set(r.get("gold_doc_ids") or [])
    return len(gold & set((r.get("read_docs") or [])[:k])) / len(gold) if gold else 0.0


def cost_summary(records: Sequence[Record], rows: Sequence[str], ks: Sequence[int]) -> dict[str, dict[str, Any]]:
    """Per row: R@k and all@k, and what a question cost (documents, tokens, LLM calls, rounds).
    The LLM navigator's rows also get R@k over the documents it read (`read_recall`): its
    ranking goes on with documents it only saw listed, which the answer cannot cite."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        recs = [r for r in records if r["method"] == row]
        scored = [r for r in recs if r.get("recall") is not None]
        out[row] = {
            "questions": len(recs), "errors": sum(1 for r in recs if r.get("error")),
            "recall": {k: _mean([r["recall"][k] for r in scored]) for k in ks},
            "all": {k: _mean([r["hit"][k] for r in scored]) for k in ks},
            "read_recall": ({k: _mean([_read_recall(r, k) for r in scored]) for k in ks}
                            if any("read_docs" in r for r in recs) and row.startswith("skills-llm") else None),
            **{key: _mean([float(r.get(key) or 0) for r in recs])
               for key in ("fetched", "listed", "trimmed", "candidates", "nav_tokens", "doc_tokens", "llm_calls",
                           "prompt_tokens", "rounds", "seconds")},
        }
    return out


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def cost_table(summary: dict[str, dict[str, Any]], ks: Sequence[int]) -> str:
    head = (["method", "n"] + [f"R@{k}" for k in ks] + [f"all@{k}" for k in ks]
            + ["docs fetched/q", "beam pool/q", "nav tok/q", "doc tok/q", "LLM calls/q", "prompt tok/q", "s/q", "errors"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row, s in summary.items():
        cells = [row, str(s["questions"])] + [_f(s["recall"][k]) for k in ks] + [_f(s["all"][k]) for k in ks]
        cells += [_f(s["fetched"], 1), _f(s["candidates"], 0), _f(s["nav_tokens"], 0), _f(s["doc_tokens"], 0), _f(s["llm_calls"], 1),
                  _f(s["prompt_tokens"], 0), _f(s["seconds"], 2), str(s["errors"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def read_recall_table(summary: dict[str, dict[str, Any]], ks: Sequence[int]) -> str:
    """The LLM navigator's recall split: over the documents it read, and with the ones it only
    saw listed ("" when no row is an LLM navigator)."""
    rows = {name: s for name, s in summary.items() if s.get("read_recall")}
    if not rows:
        return ""
    head = ["method", "n"] + [f"R@{k} read" for k in ks] + [f"R@{k} read+listed" for k in ks] + [
        "docs read/q", "listed only/q", "results cut/q"]
    lines = ["", "The LLM navigator: recall over the documents it read, and with those it only saw listed:", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in rows.items():
        cells = [name, str(s["questions"])] + [_f(s["read_recall"][k]) for k in ks] + [_f(s["recall"][k]) for k in ks]
        cells += [_f(s["fetched"], 1), _f(s["listed"], 1), _f(s["trimmed"], 1)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run(data_dir: Path, methods: Sequence[str], ks: Sequence[int], *, skills: Path | None = None,
        limit: int | None = None, offset: int = 0, out_dir: Path | None = None, settings: Settings | None = None,
        llm: LLM | None = None, embedder: Embedder | None = None, beam: int | None = None,
        progress: bool = True, command: str | None = None) -> RunResult:
    """The corpus benchmark for `methods` over `skills` (a flat store without one)."""
    ks, settings = run_settings(ks, settings)
    tree_methods = [m for m in methods if m in SKILL_TREE_METHODS]
    if tree_methods and skills is None:  # the flat store has no clusters: every question would fail
        raise InputError(f"--method {','.join(tree_methods)} navigates a skill tree: give --skills FOLDER, "
                         f"compiled from this corpus with `bookindex skills build {Path(data_dir) / 'corpus.jsonl'} "
                         f"-o FOLDER`, or run only {', '.join(m for m in CORPUS_METHODS if m not in SKILL_TREE_METHODS)}")
    bench = CorpusBenchmark(Path(data_dir))
    index_dir = default_index_dir(settings, bench.split)
    engine = Engine(None, settings, embedder=embedder, llm=llm)
    t0 = time.perf_counter()
    folder = Path(skills) if skills is not None else flat_store(bench.data_dir, index_dir / "flat", engine.providers.embedder, progress)
    store_seconds = time.perf_counter() - t0
    bench.skills = str(folder)
    rows = make_rows(methods, [], settings, corpus=str(folder))
    for row in rows:
        row.beam = beam
    answering = llm if llm is not None else engine.providers.llm
    res = run_benchmark(bench, rows, ks, settings=settings, index_dir=index_dir, limit=limit, offset=offset,
                        llm=answering, embedder=engine.providers.embedder, progress=progress, command=command)
    names = [r.name for r in rows]
    costs = cost_summary(res.records, names, ks)
    res.meta.update({"skills": str(folder), "store_seconds": round(store_seconds, 2), "beam": beam})
    tree = engine.skills.open(folder).tree
    res.meta["tree"] = {"roots": len(tree.roots), "clusters": len(tree.clusters), "documents": len(tree.documents),
                        "params": vars(tree.params)}
    md = res.markdown.rstrip() + "\n\nDocument recall, all@k and navigation cost per question:\n\n" + cost_table(costs, ks) + "\n"
    md += read_recall_table(costs, ks)
    res.markdown = md
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        jpath, mpath = out_dir / f"{bench.name}.json", out_dir / f"{bench.name}.md"
        write_json_atomic(jpath, {"meta": res.meta, "summary": res.summary, "corpus_summary": costs,
                                  "records": res.records}, indent=1, default=str)
        write_text_atomic(mpath, md)
        res.files = {"json": str(jpath), "markdown": str(mpath)}
    return res
