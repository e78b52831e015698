#!/usr/bin/env python
"""Fit the extractive reader's choice among its candidates; report it out of fold by document.

    python scripts/fit_reader.py --manual LIB_MANUALS --manual LIB_HANDBOOKS \
        --set mmlongbench-dev=../shared/data/mmlongbench-dev:IDX_DEV \
        --set mmlongbench-dev2=../shared/data/mmlongbench-dev2:IDX_DEV2 \
        --cache bench-out/reader-cases --out bench-out/fit-reader [--write]

--manual LIB: the questions of tests/data's manual, handbook and reference-lookup files whose
document LIB holds (each file's questions a set of its own; the manual file's by their `set`).
--set NAME=DATA:LIB: a split folder's questions.json with a short gold answer (Str, Int or Float,
answerable, at most 60 characters), scored by MMLongBench's rules on the answer's short form.
Each question is asked once through `Engine.ask` with no LLM and the reader's inputs recorded
(`bookindex.evaluation.reader_fit`), cached in --cache per library, so a second run only fits.
Every candidate is rendered as the answer and labelled right or wrong; a logistic regression over
`operators.candidate_features.FEATURES` is fitted and judged out of fold, folds grouped by
document, beside the hand-set order on the same questions. --write stores the weights fitted on
every question as `bookindex/operators/candidate_weights.json`, with the data and commit they
were fitted on. Writes fit_reader.json and fit_reader.md to --out and prints the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA_FILES = ("manual_user_questions.jsonl", "handbook_questions.jsonl", "reference_lookup.jsonl")


def _engine(library: Path):
    from bookindex.core.config import load_settings
    from bookindex.engine import Engine

    if not (library / "library.json").is_file():
        raise SystemExit(f"error: {library}: not a bookindex library (no library.json)")
    return Engine(library, settings=load_settings(overrides={"llm": {"provider": "none"}}))


def _manual_items(engine) -> list:
    from bookindex.evaluation.reader_fit import manual_items

    docs = {d.name for d in engine.documents()}
    items = []
    for name in DATA_FILES:
        own = None if name.startswith("manual") else name.split("_")[0]
        items += manual_items(ROOT / "tests" / "data" / name, own and f"{own}", docs)
    return items


def _split_items(data: Path, set_name: str) -> list:
    from bookindex.evaluation.mmlongbench_run import load_questions
    from bookindex.evaluation.reader_fit import Gold, Item
    from bookindex.evaluation.short_answers import short_gold

    return [Item(set_name, q.doc, q.text, Gold("short", answer=str(q.answer), answer_format=q.answer_format or "Str"))
            for q in load_questions(data) if short_gold(q.answer, q.answer_format)]


def _labelled(cases: list, cache: Path) -> dict:
    """Each case's labelled candidates (`reader_fit.label`), cached by the cases and the reader's
    code; the feature rows are recomputed every run, so a change of features needs no relabel."""
    import pickle

    from bookindex.evaluation.reader_fit import label, relabel_rows
    from bookindex.operators import reader

    key = hashlib.sha256(pickle.dumps([(c.item, c.answer) for c in cases]) + Path(reader.__file__).read_bytes())
    path = cache / f"labelled-{key.hexdigest()[:16]}.pkl"
    if path.is_file():
        labelled = pickle.loads(path.read_bytes())  # noqa: S301 - this tool's own cache
        relabel_rows(list(labelled.values()))
        return labelled
    labelled = {i: lab for i, c in enumerate(cases) if (lab := label(c)) is not None}
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(labelled))
    return labelled


def _cases(library: Path, items_of, cache: Path) -> list:
    """The library's cases: from the cache when it holds them for these questions, else asked."""
    from bookindex.evaluation.reader_fit import collect_cases, load_cases, save_cases

    engine = _engine(library)
    items = items_of(engine)
    key = hashlib.sha256(json.dumps([str(library.resolve()), [(i.set, i.doc, i.question) for i in items]]).encode())
    path = cache / f"{library.name}-{key.hexdigest()[:12]}.pkl"
    if path.is_file():
        return load_cases(path)

    def progress(done: int, total: int) -> None:
        if done % 25 == 0 or done == total:
            print(f"  {library.name}: {done}/{total} asked", file=sys.stderr, flush=True)

    cases = collect_cases(engine, items, progress)
    save_cases(cases, path)
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manual", type=Path, action="append", default=[], help="a library of manuals (tests/data questions)")
    ap.add_argument("--set", action="append", default=[], help="NAME=DATA:LIB, a split folder and its library")
    ap.add_argument("--cache", type=Path, default=Path("bench-out/reader-cases"))
    ap.add_argument("--out", type=Path, default=Path("bench-out/fit-reader"))
    ap.add_argument("--c", type=float, default=0.03, help="inverse regularisation strength")
    ap.add_argument("--top-k", type=int, default=2, help="re-rank the hand-set order's first K candidates (0: all)")
    ap.add_argument("--write", action="store_true", help="ship the weights fitted on every question")
    args = ap.parse_args(argv)
    from bookindex.core.atomic import write_json_atomic, write_text_atomic
    from bookindex.evaluation.reader_fit import fit_weights, markdown, out_of_fold, report
    from bookindex.evaluation.report import source_commit
    from bookindex.operators.candidate_scorer import WEIGHTS_FILE

    cases: list = []
    labelled: dict = {}

    def add(library_cases: list) -> None:
        labelled.update({len(cases) + i: lab for i, lab in _labelled(library_cases, args.cache).items()})
        cases.extend(library_cases)

    for lib in args.manual:
        add(_cases(lib, _manual_items, args.cache))
    for spec in args.set:
        name, _, where = spec.partition("=")
        data, _, lib = where.rpartition(":")
        if not (name and data and lib):
            ap.error(f"--set {spec!r}: expected NAME=DATA:LIB")
        add(_cases(Path(lib), lambda _e, d=Path(data), n=name: _split_items(d, n), args.cache))
    if not cases:
        ap.error("no questions: give --manual or --set")
    keys = sorted(labelled)
    oof = out_of_fold([labelled[i] for i in keys], c=args.c, top_k=args.top_k)
    summary = report(cases, labelled, dict(zip(keys, oof)))
    summary["fitted_on"] = {"commit": source_commit(ROOT), "questions": len(keys), "c": args.c, "top_k": args.top_k,
                            "sets": {s: r["questions"] for s, r in summary["sets"].items()}}
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "fit_reader.json", summary)
    write_text_atomic(args.out / "fit_reader.md", markdown(summary))
    print(markdown(summary))
    if args.write:
        weights = fit_weights([labelled[i] for i in keys], args.c, args.top_k, summary["fitted_on"])
        write_json_atomic(WEIGHTS_FILE, weights.to_json())
        print(f"wrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
