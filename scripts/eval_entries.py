#!/usr/bin/env python
"""Reference entries as nodes: does every name of a manual's index get its own node?

    python scripts/eval_entries.py PDF [--out DIR] [--no-outline] [--questions JSON [--k 5] [--no-dense]]

Parses the PDF the way `bookindex index` does (pymupdf parser, section filtering, the entry pass
of parsing.entries, build_tree), finds the manual's name index ("Function and Data Index",
"Index of Functions", "Variable Index", "Command Index"... — a section whose title says so, the
last one when there are several), reads the names it lists (each "name . . . . page" line), and
reports:

- recall: names that are the title of exactly one node / all index names;
- misses (no node has the name as its title) and duplicates (more than one node has it);
- the entry nodes by kind.

With --questions (a JSON list of {"question", "name"}: a question that describes what a function
does without naming it, e.g. data/libtasn1_questions.json), it also checks retrieval with and
without the entry pass: hit@k = one of the top-k nodes carries the name — with entries, any node
of the entry's subtree (its section is named by it); without, a block that holds the name (the
signature or gdoc's title line). Rankers: BM25 over the leaves' lexical text and, unless
--no-dense, the configured embedder over every node's vector text (`node_text`).

Prints a Markdown table and writes entries_eval.json and entries_eval.md into --out.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bookindex.core.config import Settings, load_settings  # noqa: E402
from bookindex.core.model import LEAF_TYPES, DocumentTree, build_tree, node_text  # noqa: E402
from bookindex.parsing.entries import mark_entries  # noqa: E402
from bookindex.parsing.pdf import parse_pdf  # noqa: E402
from bookindex.parsing.sections import assign_levels  # noqa: E402
from bookindex.providers.lexical import LexicalIndex  # noqa: E402

# "Function and Data Index", "Index of Functions", "Variable Index", "Command and Option Index"
_INDEX_TITLE = re.compile(r"\b(function|data|variable|command|macro|option|program|type|symbol|interface|api)s?\b.*\bindex\b"
                          r"|\bindex of (functions|commands|variables|symbols|options)\b", re.I)
# one index line: a name, a dotted leader, page numbers ("asn1_der_decoding . . . . 20")
_INDEX_LINE = re.compile(r"(?P<name>[^\s.][^\s]*?)\s*(?:\.\s*){2,}(?P<pages>\d+(?:\s*,\s*\d+)*)")


def index_section(tree: DocumentTree):
    """The section that holds the name index (the last whose title names one), or None."""
    found = [s for s in tree.sections() if _INDEX_TITLE.search(s.title)]
    return found[-1] if found else None


def index_names(tree: DocumentTree) -> list[str]:
    """The names the index lists, in order, each once."""
    sec = index_section(tree)
    if sec is None:
        return []
    text = " ".join(n.content for n in tree.subtree(sec) if n.type != "section")
    names = [m.group("name").rstrip(",;:") for m in _INDEX_LINE.finditer(text)]
    return list(dict.fromkeys(n for n in names if n and not n.isdigit()))


def _trees(pdf: Path, settings: Settings) -> tuple[DocumentTree, DocumentTree, int, float]:
    """(tree without the entry pass, tree with it — as `to_tree` builds it —, pages, seconds)."""
    t0 = time.perf_counter()
    parsed = parse_pdf(pdf, tables=settings.parsing.tables, images=False)
    blocks = assign_levels(parsed, use_outline=settings.parsing.use_outline)
    meta = {"pages": parsed.page_count}
    after = build_tree("eval", pdf.name, mark_entries(blocks), meta)
    seconds = time.perf_counter() - t0
    return build_tree("eval", pdf.name, blocks, meta), after, parsed.page_count, seconds


def _gold(tree: DocumentTree, name: str, entries: bool) -> set[str]:
    """The nodes that carry `name`: the entry's subtree, or (no entries) the blocks that hold it."""
    if entries:
        heads = [n for n in tree.walk() if n.type == "section" and n.title == name]
        return {x.id for h in heads for x in tree.subtree(h)}
    spaced = name.replace("_", " ")
    return {n.id for n in tree.walk() if n.type in LEAF_TYPES
            and (re.search(rf"(?<![\w]){re.escape(name)}\s*\(", n.text) or n.text.strip() == spaced)}


def retrieval_check(trees: dict[str, DocumentTree], questions: list[dict[str, str]], k: int,
                    dense: bool, settings: Settings) -> dict[str, Any]:
    """hit@k per ranker, without and with entries (see the module doc)."""
    import numpy as np

    embedder = None
    if dense:
        from bookindex.providers.embedding import get_embedder
        embedder = get_embedder(settings)
    out: dict[str, Any] = {"questions": len(questions), "k": k}
    for label, tree in trees.items():
        leaves = [n for n in tree.walk() if n.type in LEAF_TYPES and n.content.strip()]
        lex = LexicalIndex([n.id for n in leaves], [node_text(tree, n, "lexical") for n in leaves])
        nodes = [n for n in tree.walk() if n.type != "document"]
        vecs = embedder.encode([node_text(tree, n) for n in nodes]) if embedder is not None else None
        hits: dict[str, list[str]] = {"bm25": [], "dense": []} if vecs is not None else {"bm25": []}
        for q in questions:
            gold = _gold(tree, q["name"], label == "with_entries")
            if any(leaves[i].id in gold for i in np.argsort(-lex.scores(q["question"]))[:k]):
                hits["bm25"].append(q["name"])
            if vecs is not None and embedder is not None:
                qv = embedder.encode([q["question"]])[0]
                if any(nodes[i].id in gold for i in np.argsort(-(vecs @ qv))[:k]):
                    hits["dense"].append(q["name"])
        out[label] = {r: {"hits": len(h), "hit_at_k": round(len(h) / max(1, len(questions)), 4), "found": h}
                      for r, h in hits.items()}
    return out


def evaluate(pdf: Path, use_outline: bool = True, questions: list[dict[str, str]] | None = None,
             k: int = 5, dense: bool = True) -> dict[str, Any]:
    settings = load_settings(env={})
    settings.parsing.use_outline = use_outline
    before, tree, pages, seconds = _trees(pdf, settings)
    titles = Counter(n.title.strip() for n in tree.walk() if n.type == "section" and n.title)
    names = index_names(tree)
    exact = [n for n in names if titles[n] == 1]
    misses = [n for n in names if titles[n] == 0]
    dups = {n: titles[n] for n in names if titles[n] > 1}
    kinds = Counter(str(n.meta["entry"].get("kind")) for n in tree.walk()
                    if n.type == "section" and isinstance(n.meta.get("entry"), dict))
    sec = index_section(tree)
    rec: dict[str, Any] = {
        "file": pdf.name, "pages": pages, "outline_used": use_outline,
        "index_section": sec.title if sec is not None else None,
        "index_names": len(names), "exactly_one": len(exact),
        "recall": round(len(exact) / len(names), 4) if names else None,
        "misses": misses, "duplicates": dups,
        "entries": sum(kinds.values()), "entries_by_kind": dict(kinds),
        "seconds": round(seconds, 2),
    }
    if questions:
        rec["retrieval"] = retrieval_check({"without_entries": before, "with_entries": tree}, questions, k, dense, settings)
    return rec


def markdown(rec: dict[str, Any]) -> str:
    rows = ["| file | pages | index | names | title of exactly one node | recall | misses | duplicates | entries (by kind) |",
            "|---|---|---|---|---|---|---|---|---|"]
    r = rec
    recall = "–" if r["recall"] is None else f"{r['recall']:.3f}"
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["entries_by_kind"].items())) or "–"
    rows.append(f"| {r['file']} | {r['pages']} | {r['index_section'] or '–'} | {r['index_names']} | {r['exactly_one']} | "
                f"{recall} | {len(r['misses'])} | {len(r['duplicates'])} | {r['entries']} ({kinds}) |")
    if r["misses"]:
        rows += ["", "Misses: " + ", ".join(f"`{m}`" for m in r["misses"])]
    if r["duplicates"]:
        rows += ["", "Duplicates: " + ", ".join(f"`{k}` ×{v}" for k, v in r["duplicates"].items())]
    ret = r.get("retrieval")
    if ret:
        rankers = list(ret["with_entries"])
        rows += ["", f"Retrieval, {ret['questions']} questions: a top-{ret['k']} node carries the function's name", "",
                 "| ranker | without entries | with entries |", "|---|---|---|"]
        for rk in rankers:
            a, b = (ret[side][rk] for side in ("without_entries", "with_entries"))
            n = ret["questions"]
            rows.append(f"| {rk} | {a['hits']}/{n} ({a['hit_at_k']:.3f}) | {b['hits']}/{n} ({b['hit_at_k']:.3f}) |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pdf", type=Path, help="a reference manual with a name index (e.g. data/libtasn1.pdf)")
    ap.add_argument("--out", type=Path, default=Path("bench-out/entries"), help="folder for entries_eval.json / .md")
    ap.add_argument("--no-outline", action="store_true", help="hide the PDF outline from section filtering")
    ap.add_argument("--questions", type=Path, help='JSON list of {"question", "name"} for the retrieval check')
    ap.add_argument("--k", type=int, default=5, help="top-k of the retrieval check")
    ap.add_argument("--no-dense", action="store_true", help="retrieval check with BM25 only (no embedder)")
    args = ap.parse_args(argv)
    if not args.pdf.exists():
        print(f"{args.pdf}: no such file", file=sys.stderr)
        return 2
    questions = json.loads(args.questions.read_text()) if args.questions else None
    rec = evaluate(args.pdf, use_outline=not args.no_outline, questions=questions, k=args.k, dense=not args.no_dense)
    if not rec["index_names"]:
        print(f"{args.pdf.name}: no name index found (a section titled like 'Function and Data Index')", file=sys.stderr)
    md = markdown(rec)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "entries_eval.json").write_text(json.dumps(rec, indent=2) + "\n")
    (args.out / "entries_eval.md").write_text(md + "\n")
    print(md)
    print(f"\nsaved {args.out / 'entries_eval.json'} and {args.out / 'entries_eval.md'}")
    return 0 if rec["index_names"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
