#!/usr/bin/env python
"""Evaluate baselines and bookindex on MMLongBench-Doc (page recall@k, context size, answers).

    python scripts/eval_mmlongbench.py ../shared/data/mmlongbench-dev \
        --method bm25,dense,hybrid,chunks,tree,bookindex --k 1,3,5,10 \
        --ablation no_planning,no_selector,no_graph,no_text --out bench-out/mmlongbench

Indexes each PDF once into --index-dir (default: <cache dir>/eval/<split>, reused by
later runs), asks each question against its own document and writes mmlongbench.json
(per-question records), mmlongbench.md (tables) and mmlongbench_recall.png to --out.
Answer accuracy and F1 are scored only when an LLM is configured (bookindex.toml / env).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    from bookindex.evaluation.cli import eval_main
    from bookindex.evaluation.mmlongbench_run import run

    return eval_main(run, script="eval_mmlongbench.py", description=__doc__.splitlines()[0],
                     data_help="split folder with questions.json and documents/", out_default="bench-out/mmlongbench", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
