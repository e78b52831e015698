#!/usr/bin/env python
"""Corpus navigation benchmark (Corpus2Skill): document recall@k / all@k and navigation cost.

    python scripts/eval_corpus.py ../shared/data/scifact --skills SKILLS_DIR \
        --method bm25,dense,hybrid,raptor,skills-embedding,skills-llm --limit 50

DATA holds corpus.jsonl + questions.jsonl. --skills is a folder compiled from that corpus with
`bookindex skills build`; without it only the flat methods (bm25, dense, hybrid) run, over the
document vectors embedded once under <cache dir>/eval/<split>/flat, and asking for raptor or a
skills method is refused (exit 2). A method that errors on more than max(2, 5%) of the questions
makes the run exit 1 after writing its report, with its first error shown. With an LLM
(`--set llm.provider=llamacpp`) every row is answered and scored (token F1, ROUGE-1/2, BLEU)
where the questions have reference answers (WixQA). Writes corpus_<split>.json and .md to --out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.evaluation.cli import command_line, csv_list, pairs, parse_ks, run_and_print  # noqa: E402
from bookindex.evaluation.corpus_run import FLAT_DEFAULT, TREE_DEFAULT, run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", type=Path, help="folder with corpus.jsonl and questions.jsonl")
    ap.add_argument("--method", default=None,
                    help="comma-separated: bm25,dense,hybrid,raptor,skills-embedding,skills-llm "
                         "(the guided agent), skills-llm-plain (unguided, the paper's agent); raptor and "
                         f"the skills methods need --skills (default: {TREE_DEFAULT} with --skills, "
                         f"{FLAT_DEFAULT} without)")
    ap.add_argument("--skills", type=Path, default=None, help="compiled skill folder of this corpus")
    ap.add_argument("--k", default="1,5,10", help="comma-separated k values (documents)")
    ap.add_argument("--beam", type=int, default=None, help="skills-embedding beam width (default: auto from k)")
    ap.add_argument("--limit", type=int, default=None, help="only N questions (from --offset)")
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("bench-out/corpus"), help="output folder")
    ap.add_argument("--config", default=None, help="bookindex.toml to load settings from")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="setting override (repeatable)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    ks = parse_ks(ap, args.k)
    overrides = pairs(args.set, ap, "--set", "llm.provider=llamacpp", empty_value=True, key_name="KEY")

    def call() -> Any:
        settings = load_settings(args.config)
        if overrides:
            settings = settings.with_overrides(overrides)
        methods = csv_list(args.method or (TREE_DEFAULT if args.skills else FLAT_DEFAULT))
        return run(args.data_dir, methods, ks, skills=args.skills, limit=args.limit, offset=args.offset,
                   out_dir=args.out, settings=settings, beam=args.beam, progress=not args.no_progress,
                   command=command_line("eval_corpus.py", argv))

    return run_and_print(call)


if __name__ == "__main__":
    sys.exit(main())
