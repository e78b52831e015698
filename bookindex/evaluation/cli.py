"""The command line shared by the evaluation scripts: eval_mmlongbench.py, eval_qasper.py and
eval_reference.py take the same options and `run(...)` call (`eval_main`); eval_corpus.py has its
own options but the same parsing helpers, error handling and output (`csv_list`, `parse_ks`,
`pairs`, `run_and_print`)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any, Callable

from bookindex.core.config import load_settings
from bookindex.core.errors import BookIndexError


def csv_list(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def parse_ks(ap: argparse.ArgumentParser, text: str) -> list[int]:
    """The --k values as integers; a usage error (exit 2) otherwise."""
    try:
        return [int(k) for k in csv_list(text)]
    except ValueError:
        ap.error(f"--k: give positive integers, e.g. 1,3,5,10 (got {text!r})")


def pairs(items: list[str], ap: argparse.ArgumentParser, option: str = "--only",
          example: str = "source=text", empty_value: bool = False, key_name: str = "GROUP") -> dict[str, str]:
    """Repeated KEY=VALUE options as a dict; a usage error naming the option otherwise."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not (value.strip() or empty_value):
            ap.error(f"{option}: give {key_name}=VALUE, e.g. {example} (got {item!r})")
        out[key.strip()] = value.strip()
    return out


def command_line(script: str, argv: list[str] | None) -> str:
    """The command as a user would retype it, recorded in the benchmark's output."""
    words = argv if argv is not None else sys.argv[1:]
    return f"python scripts/{script} " + " ".join(shlex.quote(a) for a in words)


def run_and_print(call: Callable[[], Any]) -> int:
    """Run a benchmark; print its Markdown and files, or one error line and return 2.

    A run in which some method errored on too many questions (`loop.method_failures`) still
    prints and writes its report, then one error line per such method, and returns 1: a row of
    zeros made by errors must not pass for a measurement."""
    try:
        res = call()
    except BookIndexError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(res.markdown)
    for kind, path in res.files.items():
        print(f"{kind}: {path}")
    failures = getattr(res, "failures", [])
    for line in failures:
        print(f"error: {line}", file=sys.stderr)
    return 1 if failures else 0


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
    ks = parse_ks(ap, args.k)
    only = pairs(args.only, ap)
    return run_and_print(lambda: run(
        args.data_dir, csv_list(args.method), ks, csv_list(args.ablation),
        limit=args.limit, offset=args.offset, only=only, index_dir=args.index_dir, out_dir=args.out,
        settings=load_settings(args.config), progress=not args.no_progress,
        index_without_llm=args.index_without_llm, command=command_line(script, argv)))
