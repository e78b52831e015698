#!/usr/bin/env python
"""Evaluate baselines and bookindex on Qasper (paragraph evidence recall@k; accuracy/F1 with an LLM).

    python scripts/eval_qasper.py ../shared/data/qasper-dev --method bm25,dense,hybrid,chunks,tree,bookindex

Papers become Markdown documents (indexed once under --index-dir, default
<cache dir>/eval/<split>); writes qasper.json, qasper.md and qasper_recall.png to --out.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.errors import BookIndexError  # noqa: E402


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", type=Path, help="folder with papers.json")
    ap.add_argument("--method", default="bm25,dense,hybrid,chunks,tree,bookindex")
    ap.add_argument("--k", default="1,3,5,10")
    ap.add_argument("--ablation", default="", help="no_planning,no_selector,no_graph,no_text")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions")
    ap.add_argument("--index-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=Path("bench-out/qasper"))
    ap.add_argument("--config", default=None)
    ap.add_argument("--index-without-llm", action="store_true",
                    help="build the index with the no-LLM pipeline; use the configured LLM only to answer")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    try:
        from bookindex.config import load_settings
        from retrieval.evaluation.qasper_run import run

        res = run(args.data_dir, _csv(args.method), [int(k) for k in _csv(args.k)], _csv(args.ablation),
                  limit=args.limit, index_dir=args.index_dir, out_dir=args.out,
                  settings=load_settings(args.config), progress=not args.no_progress, index_without_llm=args.index_without_llm,
                  command="python scripts/eval_qasper.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])))
    except BookIndexError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(res.markdown)
    for kind, path in res.files.items():
        print(f"{kind}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
