"""The command line shared by scripts/eval_mmlongbench.py and scripts/eval_qasper.py: the same
options, the same `run(...)` call, the same error handling and output."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any, Callable

from bookindex.core.config import load_settings
from bookindex.core.errors import BookIndexError


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _pairs(items: list[str], ap: argparse.ArgumentParser) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            ap.error(f"--only: give GROUP=VALUE, e.g. source=text (got {item!r})")
        out[key.strip()] = value.strip()
    return out


def eval_main(run: Callable[..., Any], *, script: str, description: str, data_help: str,
              out_default: str, argv: list[str] | None = None) -> int:
    """Parse the evaluation options, call `run`, print its Markdown and files; 2 on bad input."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("data_dir", type=Path, help=data_help)
    ap.add_argument("--method", default="bm25,dense,hybrid,chunks,tree,bookindex",
                    help="comma-separated: bm25,dense,hybrid,chunks,tree,bookindex")
    ap.add_argument("--k", default="1,3,5,10", help="comma-separated k values (retrieved nodes)")
    ap.add_argument("--ablation", default="", help="bookindex ablation rows: no_planning,no_selector,no_graph,no_text")
    ap.add_argument("--limit", type=int, default=None, help="only N questions (the first, or from --offset)")
    ap.add_argument("--offset", type=int, default=0, help="skip the first N questions (split a long run)")
    ap.add_argument("--only", action="append", default=[], metavar="GROUP=VALUE",
                    help="only questions in this breakdown group, e.g. source=text (repeatable)")
    ap.add_argument("--index-dir", type=Path, default=None, help="library folder (reused between runs)")
    ap.add_argument("--out", type=Path, default=Path(out_default), help="output folder")
    ap.add_argument("--config", default=None, help="bookindex.toml to load settings from")
    ap.add_argument("--index-without-llm", action="store_true",
                    help="build the index with the no-LLM pipeline; use the configured LLM only to answer")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    words = argv if argv is not None else sys.argv[1:]
    try:
        ks = [int(k) for k in _csv(args.k)]
    except ValueError:
        ap.error(f"--k: give positive integers, e.g. 1,3,5,10 (got {args.k!r})")
    try:
        res = run(args.data_dir, _csv(args.method), ks, _csv(args.ablation),
                  limit=args.limit, offset=args.offset, only=_pairs(args.only, ap), index_dir=args.index_dir, out_dir=args.out,
                  settings=load_settings(args.config), progress=not args.no_progress,
                  index_without_llm=args.index_without_llm,
                  command=f"python scripts/{script} " + " ".join(shlex.quote(a) for a in words))
    except BookIndexError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(res.markdown)
    for kind, path in res.files.items():
        print(f"{kind}: {path}")
    return 0
