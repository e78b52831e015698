#!/usr/bin/env python
"""Fit the evidence selector's weights on the development sets and report them out of fold.

    python scripts/fit_evidence.py --set mmlongbench-dev=DATA:INDEX [--set ...] [--cache DIR]
                                   [--weights operators/evidence_weights.json] [--report DIR]

For every question with a short gold answer of each set (an MMLongBench-format split: DATA holds
questions.json and documents/, INDEX the library built for it), bookindex ranks the document's
nodes as `ask` does without a model (cached in --cache/<set>.json; delete it to retrieve again).
Every candidate unit (sentence, table row, heading) of the ranked nodes is labelled by whether
it holds the gold answer and a logistic regression is fitted on their declared features
(bookindex.evaluation.evidence_fit). The report (--report: evidence_fit.md and .json) gives,
per set, answer-in-evidence (all and text-answerable) and page-shown at the default budget for
today's rules, for the weights fitted without the question's document (GroupKFold over
documents) and in sample. --weights writes the weights fitted on every question, with the
commit and the data they were fitted on (default: the file the package ships); --no-write
leaves it alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.engine import Engine  # noqa: E402
from bookindex.evaluation import evidence_fit as ef  # noqa: E402
from bookindex.evaluation.report import source_commit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _cases(spec: str, cache: Path) -> tuple[list[ef.Case], Path]:
    name, _, dirs = spec.partition("=")
    data, _, index = dirs.partition(":")
    path = cache / f"{name}.json"
    if path.is_file():
        return ef.load_cases(path), Path(index)
    print(f"{name}: ranking its questions ...", file=sys.stderr)
    cases = ef.collect(Path(data), Path(index))
    for c in cases:
        c.set = name
    ef.save_cases(cases, path)
    return cases, Path(index)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", action="append", required=True, help="NAME=DATA_DIR:INDEX_DIR (repeatable)")
    ap.add_argument("--cache", type=Path, default=Path("bench-out/evidence-fit"))
    ap.add_argument("--weights", type=Path, default=ROOT / "operators" / "evidence_weights.json")
    ap.add_argument("--no-write", action="store_true", help="report only; do not write --weights")
    ap.add_argument("--report", type=Path, default=Path("bench-out/evidence-fit"))
    args = ap.parse_args()
    cases: list[ef.Case] = []
    engines: dict[str, Engine] = {}
    for spec in args.set:
        got, index = _cases(spec, args.cache)
        cases += got
        engines[spec.partition("=")[0]] = Engine(index, load_settings(overrides={"llm.provider": "none"}))
    outcomes = ef.cross_validate(cases, lambda c: engines[c.set].open(c.doc_id))
    table = ef.summary(cases, outcomes)
    args.report.mkdir(parents=True, exist_ok=True)
    (args.report / "evidence_fit.json").write_text(json.dumps(table, indent=1))
    (args.report / "evidence_fit.md").write_text(ef.markdown(table) + "\n")
    print(ef.markdown(table))
    if not args.no_write:
        data = {name: sum(c.set == name for c in cases) for name in engines}
        weights = ef.fit_all(cases, lambda c: engines[c.set].open(c.doc_id),
                             {"commit": source_commit(ROOT), "fitted_on": data, "model": f"LogisticRegression(C={ef.C})"})
        args.weights.write_text(json.dumps(weights.to_json(), indent=1) + "\n")
        print(f"weights: {args.weights}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
