#!/usr/bin/env python
"""A copy of a library whose documents' knowledge graphs are rebuilt by today's code, trees kept.

Why: a change to graph extraction is judged on retrieval with everything else fixed. Re-indexing
re-parses every PDF (most of a build's time) and would also change the trees where the parser
changed; this reads each document's stored tree and rebuilds only graph.json, the entity vectors
and the graph index, with the settings the library would use (no LLM: the offline extractor).

    python scripts/regraph.py LIBRARY OUT [--doc NAME ...] [--set key=value ...]

OUT must not exist; it is written under a temporary name and renamed when every graph is built,
so an interrupted run leaves no half-rebuilt library. Prints and saves OUT/regraph.json (per
document: entities, relations, seconds).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm  # noqa: E402

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.indexing.document_folder import load_tree, save_graph  # noqa: E402
from bookindex.indexing.graph.build import build_graph  # noqa: E402
from bookindex.providers.embedding import get_embedder  # noqa: E402


def _overrides(pairs: list[str]) -> dict[str, str]:
    out = {"llm.provider": "none"}
    for p in pairs:
        if "=" not in p:
            raise SystemExit(f"--set {p!r}: expected key=value")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def document_dirs(library: Path, names: list[str]) -> list[tuple[str, Path]]:
    """(name, folder) of the library's documents, as library.json lists them."""
    docs = json.loads((library / "library.json").read_text())["documents"]
    rows = [(d["name"], library / "docs" / d["dir"]) for d in docs.values()]
    chosen = [r for r in rows if not names or r[0] in names]
    missing = set(names) - {n for n, _ in chosen}
    if missing:
        raise SystemExit(f"{library}: no document {', '.join(sorted(missing))}")
    return chosen


def regraph(library: Path, out: Path, names: list[str], overrides: dict[str, str]) -> dict[str, Any]:
    """Copy `library` to `out` and rebuild the graphs of `names` (all when empty) there."""
    if out.exists():
        raise SystemExit(f"{out}: exists; choose a new folder")
    settings = load_settings(overrides=overrides, env={})
    embedder = get_embedder(settings)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(library, tmp)
    report: dict[str, Any] = {"library": str(library), "documents": {}}
    for name, folder in tqdm(document_dirs(tmp, names), desc="regraph", unit="doc"):
        t0 = time.perf_counter()
        tree = load_tree(folder)
        graph, _ = build_graph(tree, settings=settings, llm=None, embedder=embedder)
        save_graph(graph, folder, embedder=embedder, vectors_backend=settings.storage.vectors)
        report["documents"][name] = {"entities": len(graph.entities), "relations": len(graph.relations),
                                     "seconds": round(time.perf_counter() - t0, 2)}
    tmp.rename(out)
    (out / "regraph.json").write_text(json.dumps(report, indent=1))
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--doc", action="append", default=[], help="only this document (repeatable)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting")
    args = ap.parse_args()
    report = regraph(args.library, args.out, args.doc, _overrides(args.set))
    docs = report["documents"]
    print(f"{len(docs)} graphs rebuilt: {sum(d['entities'] for d in docs.values())} entities, "
          f"{sum(d['relations'] for d in docs.values())} relations, "
          f"{sum(d['seconds'] for d in docs.values()):.0f} s")


if __name__ == "__main__":
    main()
