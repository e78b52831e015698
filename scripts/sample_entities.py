#!/usr/bin/env python
"""A uniform sample of a library's graph entities, to judge by hand; and the judged samples' table.

Sampling: the entities of the chosen documents (all by default) are pooled, less the structural
ones (a table, formula or image entity stands for its node and is typed by construction), and
`--n` of them are drawn uniformly with `--seed`: those whose hash of (seed, document, name) is
lowest, so two builds of the same documents draw the same names where both have them. Each comes with its document, type, degree and
the sentence it was first seen in, plus empty judgement fields:

    "term":  "real" (a term of the document: a name, a noun phrase, an identifier, a path)
             or "debris" (a fragment: a cut bracket, markup, a path piece, a sentence start,
             words glued across the layout);
    "type":  "right" or "wrong" for a typed entity; an untyped one ("concept") is "absent".

It also counts each document's relations by kind: a verb relation (named by a verb the sentence
gives), co-occurrence, co-occurrence carrying the sentence's main verb as a keyword (the older
extractor's hint), and ContainedIn (table/figure structure).

    python scripts/sample_entities.py LIBRARY [--doc NAME ...] --n 100 --seed 7 --out DIR/before
        # writes DIR/before.json (fill in "term" and "type") and DIR/before.md
    python scripts/sample_entities.py --summarise DIR/before.json DIR/after.json
        # the judged counts side by side, as a Markdown table (summary.md next to the first file;
        # each judged sample's own table as FILE.md)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.core.graph import KnowledgeGraph  # noqa: E402
from bookindex.core.model import Relation  # noqa: E402
from bookindex.engine import Engine  # noqa: E402

STRUCTURAL = ("table", "formula", "image")
UNTYPED = "concept"
CONTAINED_IN = "ContainedIn"
CO_OCCURS = "co-occurs"


def relation_kind(r: Relation) -> str:
    """verb | co-occurs | co-occurs+verb hint | contained-in (see the module doc)."""
    kws = set(r.keywords)
    if CONTAINED_IN in kws:
        return "contained-in"
    if CO_OCCURS not in kws or r.description:
        return "verb"
    return "co-occurs+verb hint" if len(kws) > 1 else "co-occurs"


def relation_counts(g: KnowledgeGraph) -> dict[str, Any]:
    kinds = Counter(relation_kind(r) for r in g.relations)
    total = sum(kinds.values())
    return {"relations": total, **dict(kinds), "verb_share": round(kinds["verb"] / total, 4) if total else 0.0}


def _context(desc: str) -> str:
    line = desc.split("\n", 1)[0]
    return " ".join(line.split())[:160]


def sample(library: Path, docs: list[str], n: int, seed: int) -> dict[str, Any]:
    """The sample and the per-document counts (see the module doc)."""
    engine = Engine(library, load_settings(overrides={"llm.provider": "none"}, env={}))
    chosen = [d for d in engine.documents() if not docs or d.name in docs or d.doc_id in docs]
    missing = set(docs) - {d.name for d in chosen} - {d.doc_id for d in chosen}
    if missing:
        raise SystemExit(f"{library}: no document {', '.join(sorted(missing))}")
    pool: list[tuple[str, Any, int]] = []
    per_doc: dict[str, Any] = {}
    for info in sorted(chosen, key=lambda d: d.name):
        g = engine.cache.browse(info.doc_id).graph
        deg = dict(g.nx.degree())
        ents = sorted((e for e in g.entities.values() if e.type not in STRUCTURAL), key=lambda e: e.id)
        pool += [(info.name, e, int(deg.get(e.id, 0))) for e in ents]
        per_doc[info.name] = {"entities": len(ents), "types": dict(Counter(e.type for e in ents).most_common(12)),
                              **relation_counts(g)}
    # the n entities whose (seed, document, name) hash lowest: a uniform sample that stays the same
    # for the entities two builds share, so a before/after pair judges the same names where it can
    picked = sorted(pool, key=lambda p: hashlib.sha256(f"{seed}\0{p[0]}\0{p[1].name}".encode()).digest())[:n]
    rows = [{"i": i + 1, "doc": doc, "id": e.id, "name": e.name, "entity_type": e.type, "degree": deg,
             "nodes": len(e.node_ids), "context": _context(e.description), "term": None,
             "type": "absent" if e.type == UNTYPED else None, "note": ""}
            for i, (doc, e, deg) in enumerate(picked)]
    return {"library": str(library), "seed": seed, "n": len(rows), "pool": len(pool), "documents": per_doc,
            "sample": rows}


def _cell(s: Any) -> str:
    return str(s if s is not None else "").replace("|", "\\|").replace("\n", " ")


def sample_markdown(data: dict[str, Any]) -> str:
    out = [f"Sample of {data['n']} of {data['pool']} entities, {data['library']}, seed {data['seed']}", "",
           "| document | entities | relations | verb | co-occurs | co-occurs+verb hint | contained-in | verb share |",
           "|---|---|---|---|---|---|---|---|"]
    for name, c in data["documents"].items():
        out.append(f"| {name} | {c['entities']} | {c['relations']} | {c.get('verb', 0)} | {c.get('co-occurs', 0)} | "
                   f"{c.get('co-occurs+verb hint', 0)} | {c.get('contained-in', 0)} | {c['verb_share']:.1%} |")
    out += ["", "| # | document | entity | type | context | term | type judged | note |", "|---|---|---|---|---|---|---|---|"]
    for r in data["sample"]:
        out.append("| " + " | ".join(_cell(r[k]) for k in ("i", "doc", "name", "entity_type", "context", "term", "type", "note"))
                   + " |")
    return "\n".join(out) + "\n"


def judged_counts(data: dict[str, Any]) -> dict[str, int]:
    rows = data["sample"]
    unjudged = [r["i"] for r in rows if r["term"] not in ("real", "debris") or r["type"] not in ("right", "wrong", "absent")]
    if unjudged:
        raise SystemExit(f"not judged yet: rows {unjudged[:20]}")
    c = Counter(r["term"] for r in rows) + Counter(r["type"] for r in rows)
    c["typed"] = sum(1 for r in rows if r["entity_type"] != UNTYPED)
    return {k: c[k] for k in ("real", "debris", "typed", "right", "wrong", "absent")}


def summary_markdown(files: list[Path]) -> str:
    datas = [json.loads(f.read_text()) for f in files]
    counts = [judged_counts(d) for d in datas]
    head = "| | " + " | ".join(f.stem for f in files) + " |"
    out = [head, "|---" * (len(files) + 1) + "|"]
    labels = {"real": "real term", "debris": "debris", "typed": "typed", "right": "type right",
              "wrong": "type wrong", "absent": "type absent (untyped)"}
    for k, lab in labels.items():
        out.append(f"| {lab} | " + " | ".join(f"{c[k]} / {d['n']}" for c, d in zip(counts, datas)) + " |")
    rel = ["| verb relations (share of all) | "]
    for d in datas:
        tot = sum(c["relations"] for c in d["documents"].values())
        verb = sum(c.get("verb", 0) for c in d["documents"].values())
        rel.append(f"{verb} / {tot} ({verb / tot:.1%}) | " if tot else "0 | ")
    out.append("".join(rel).rstrip())
    ents = "| entities in the pool | " + " | ".join(str(d["pool"]) for d in datas) + " |"
    out.append(ents)
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", type=Path, nargs="?")
    ap.add_argument("--doc", action="append", default=[], help="a document (name or id); repeat; default all")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="write OUT.json and OUT.md")
    ap.add_argument("--summarise", type=Path, nargs="+", help="judged sample files to tabulate")
    args = ap.parse_args()
    if args.summarise:
        table = summary_markdown(args.summarise)
        print(table, end="")
        (args.summarise[0].parent / "summary.md").write_text(table)
        for f in args.summarise:  # each judged sample as a table beside it
            f.with_suffix(".md").write_text(sample_markdown(json.loads(f.read_text())))
        return 0
    if args.library is None or not args.library.is_dir():
        print(f"error: {args.library}: not a library folder", file=sys.stderr)
        return 2
    data = sample(args.library, args.doc, args.n, args.seed)
    md = sample_markdown(data)
    print(md, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        args.out.with_suffix(".md").write_text(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
