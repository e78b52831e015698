#!/usr/bin/env python
"""Evaluate reference lookup ("which function / command / option does X?") over manuals.

    python scripts/eval_reference.py ../shared/data/handbooks --method bookindex,hybrid \
        --k 1,3,5,10 --out bench-out/reference
    python scripts/eval_reference.py ../shared/data/handbooks --method bookindex --k 5 \
        --index-without-llm --out bench-out/reference-llm   # with BOOKINDEX_LLM__PROVIDER=llamacpp

The questions default to tests/data/reference_lookup.jsonl (30 questions on libtasn1.pdf and
gnuplot.pdf); --questions FILE takes another set, e.g. tests/data/handbook_questions.jsonl (33
user-style questions on fhs-3.0.pdf and zoo.pdf: how-to, value, definition, multi-page). Writes reference.json, reference.md and
reference_recall.png to --out. Page hit@k needs no LLM; with an LLM configured (bookindex.toml,
BOOKINDEX_LLM__PROVIDER=llamacpp) the report adds whether each answer names the entry and cites.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from bookindex.evaluation.cli import eval_main
    from bookindex.evaluation.reference_run import run

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--questions", type=Path, default=ROOT / "tests" / "data" / "reference_lookup.jsonl")
    known, rest = pre.parse_known_args(argv if argv is not None else sys.argv[1:])
    return eval_main(partial(run, questions=known.questions), script="eval_reference.py",
                     description=__doc__.splitlines()[0],
                     data_help="folder holding the manuals the questions name (e.g. ../shared/data/handbooks)",
                     out_default="bench-out/reference", argv=rest)


if __name__ == "__main__":
    sys.exit(main())
