#!/usr/bin/env python
"""Evaluate baselines and bookindex on Qasper (paragraph evidence recall@k; accuracy/F1 with an LLM).

    python scripts/eval_qasper.py ../shared/data/qasper-dev --method bm25,dense,hybrid,chunks,tree,bookindex

Papers become Markdown documents (indexed once under --index-dir, default
<cache dir>/eval/<split>); writes qasper.json, qasper.md and qasper_recall.png to --out.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    from bookindex.evaluation.cli import eval_main
    from bookindex.evaluation.qasper_run import run

    return eval_main(run, script="eval_qasper.py", description=__doc__.splitlines()[0],
                     data_help="folder with papers.json", out_default="bench-out/qasper", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
