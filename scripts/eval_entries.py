#!/usr/bin/env python
"""Reference entries as nodes (issue 12): does every name of a manual's index get its own node?

    python scripts/eval_entries.py PDF [--out DIR] [--no-outline]

Parses the PDF the way `bookindex index` does (pymupdf parser, section filtering, the entry pass
of parsing.entries, build_tree), finds the manual's name index ("Function and Data Index",
"Index of Functions", "Variable Index", "Command Index"... — a section whose title says so, the
last one when there are several), reads the names it lists (each "name . . . . page" line), and
reports:

- recall: names that are the title of exactly one node / all index names;
- misses (no node has the name as its title) and duplicates (more than one node has it);
- the entry nodes by kind.

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

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.core.model import DocumentTree  # noqa: E402
from parsing.dispatch import to_tree  # noqa: E402
from parsing.pdf import parse_pdf  # noqa: E402

# "Function and Data Index", "Index of Functions", "Variable Index", "Command and Option Index"
_INDEX_TITLE = re.compile(r"\b(function|data|variable|command|macro|option|program|type|symbol)s?\b.*\bindex\b"
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


def evaluate(pdf: Path, use_outline: bool = True) -> dict[str, Any]:
    settings = load_settings(env={})
    settings.parsing.use_outline = use_outline
    t0 = time.perf_counter()
    parsed = parse_pdf(pdf, tables=settings.parsing.tables, images=False)
    tree = to_tree(parsed, "eval", pdf.name, settings)
    seconds = time.perf_counter() - t0
    titles = Counter(n.title.strip() for n in tree.walk() if n.type == "section" and n.title)
    names = index_names(tree)
    exact = [n for n in names if titles[n] == 1]
    misses = [n for n in names if titles[n] == 0]
    dups = {n: titles[n] for n in names if titles[n] > 1}
    kinds = Counter(str(n.meta["entry"].get("kind")) for n in tree.walk()
                    if n.type == "section" and isinstance(n.meta.get("entry"), dict))
    sec = index_section(tree)
    return {
        "file": pdf.name, "pages": parsed.page_count, "outline_used": use_outline and bool(parsed.outline),
        "index_section": sec.title if sec is not None else None,
        "index_names": len(names), "exactly_one": len(exact),
        "recall": round(len(exact) / len(names), 4) if names else None,
        "misses": misses, "duplicates": dups,
        "entries": sum(kinds.values()), "entries_by_kind": dict(kinds),
        "seconds": round(seconds, 2),
    }


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
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pdf", type=Path, help="a reference manual with a name index (e.g. data/libtasn1.pdf)")
    ap.add_argument("--out", type=Path, default=Path("bench-out/entries"), help="folder for entries_eval.json / .md")
    ap.add_argument("--no-outline", action="store_true", help="hide the PDF outline from section filtering")
    args = ap.parse_args(argv)
    if not args.pdf.exists():
        print(f"{args.pdf}: no such file", file=sys.stderr)
        return 2
    rec = evaluate(args.pdf, use_outline=not args.no_outline)
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
