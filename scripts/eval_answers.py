#!/usr/bin/env python
"""Answer accuracy on the dev sets' short-answer questions, and reference lookup.

    python scripts/eval_answers.py ../shared/data \
        --set mmlongbench-dev=/tmp/idx-mml-after --set mmlongbench-dev2=/tmp/idx-mmlongbench-dev2 \
        --set financebench-dev=/tmp/idx-financebench-dev --ref-index /tmp/answers-ref \
        --label main --out bench-out/answers
    python scripts/eval_answers.py ../shared/data --set ... --limit 20 \
        --method bookindex,hybrid --k 10 --setting llm.provider=llamacpp --label 1.5B --out OUT

DATA is the shared data folder; each --set NAME=LIBRARY names a split folder under DATA (its
questions.json) and the library its PDFs were indexed into (`bookindex index ...`; nothing is
indexed here). Asked: the questions with a short gold answer (answer_format Str, Int or Float,
answerable, at most 60 characters), each against its own document, by `Engine.ask` with no LLM
unless --setting names one (e.g. llm.provider=llamacpp, the embedded model; the LLM disk cache is
then on, so a rerun asks the model nothing new). --method picks who answers: bookindex (planned
retrieval and its reader) and/or a baseline retriever's top --k nodes read by the same reader or
model (hybrid, bm25, dense, ...). The answer is reduced to its short form by a fixed rule and
scored by MMLongBench's rules (`bookindex.evaluation.short_answers`); the same rule for every
method, with or without a model, so the rows compare on the same footing. --ref-index adds the
reference-lookup questions (tests/data/reference_lookup.jsonl): an answer counts when it names
the entry. The sets' questions are asked interleaved (question 1 of every set and method, then
question 2, ...) and partial.json holds every finished row, so a run stopped early still compares
the methods on the same questions.
Writes answers.json (every answer, short form, citation check and score) and answers.md (accuracy
per set, method and question type) to --out and prints the Markdown.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.atomic import write_json_atomic, write_text_atomic  # noqa: E402
from bookindex.core.config import load_settings  # noqa: E402
from bookindex.engine import Engine  # noqa: E402
from bookindex.evaluation.mmlongbench_run import MMLongBenchQuestion, load_questions  # noqa: E402
from bookindex.evaluation.reference_run import load_reference_questions, names_entry  # noqa: E402
from bookindex.evaluation.short_answers import question_kind, score_short, short_answer, short_gold  # noqa: E402
from bookindex.operators.reader import asked  # noqa: E402
from bookindex.retrieval.api import METHODS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUESTION_KINDS = ("date", "number", "structure", "text", "yes-no")  # short_answers.question_kind's values


def ask_one(engine: Engine, q: MMLongBenchQuestion, method: str, k: int) -> dict[str, Any]:
    """One question asked by one method, its short answer scored."""
    t0 = time.perf_counter()
    check: str | None = None
    try:
        ans = engine.ask(q.text, doc=q.doc, method=method, k=k if method != "bookindex" else None)
        text, qtype, structural, check = ans.answer, ans.query_type, ans.structural is not None, ans.citation_check
    except Exception as exc:  # noqa: BLE001 - an error is a wrong answer, and recorded
        text, qtype, structural = f"error: {type(exc).__name__}: {exc}", "error", False
    short = short_answer(q.text, text)
    return {"id": q.qid, "doc": q.doc, "question": q.text, "gold": q.answer, "format": q.answer_format,
            "kind": question_kind(q.text, q.answer, q.answer_format), "asked": asked(q.text).kind,
            "sources": q.sources,
            "answer": text, "short": short, "score": round(score_short(q.answer, q.answer_format, short), 4),
            "query_type": qtype, "structural": structural, "citation_check": check,
            "seconds": round(time.perf_counter() - t0, 3)}


def ask_set(engine: Engine, questions: list[MMLongBenchQuestion], method: str = "bookindex",
            k: int = 10) -> list[dict[str, Any]]:
    return [ask_one(engine, q, method, k) for q in questions]


def accuracy(rows: list[dict[str, Any]]) -> tuple[int, float]:
    return len(rows), (sum(r["score"] for r in rows) / len(rows) if rows else 0.0)


def run_name(method: str, k: int, llm: str) -> str:
    """How a method's rows are labelled: "bookindex", "hybrid top-10", with "+ MODEL" when one reads."""
    who = method if method == "bookindex" else f"{method} top-{k}"
    return f"{who} + {llm}" if llm else who


REFUSALS = ("not-answerable", "refused-extractive")


def _table(runs: dict[str, dict[str, list[dict[str, Any]]]], field: str) -> list[str]:
    """Accuracy per set and run, and per value of a row's `field` (its question type)."""
    kinds = sorted({str(r.get(field)) for sets in runs.values() for rows in sets.values() for r in rows})
    lines = ["| set | run | questions | accuracy | " + " | ".join(kinds) + " | model refused |",
             "|---|---|---|---|" + "---|" * len(kinds) + "---|"]
    set_names = list(dict.fromkeys(name for sets in runs.values() for name in sets))
    for name in set_names:
        for run, sets in runs.items():
            rows = sets.get(name, [])
            n, acc = accuracy(rows)
            cells = []
            for k in kinds:
                kn, ka = accuracy([r for r in rows if str(r.get(field)) == k])
                cells.append(f"{ka:.3f} ({kn})" if kn else "–")
            refused = sum(r.get("citation_check") in REFUSALS for r in rows)
            lines.append(f"| {name} | {run} | {n} | **{acc:.3f}** | " + " | ".join(cells) + f" | {refused} |")
    return lines


def markdown(label: str, result: dict[str, Any]) -> str:
    runs: dict[str, dict[str, list[dict[str, Any]]]] = result.get("runs") or {label: result["sets"]}
    lines = [f"### {label}", "", "By question type (from the gold answer's format and the question):", "",
             *_table(runs, "kind")]
    if result.get("reference"):
        rows = result["reference"]
        lines.append(f"| reference lookup (entry named) | {label} | {len(rows)} | "
                     f"**{sum(r['named'] for r in rows) / len(rows):.3f}** |")
    if any("asked" in r for sets in runs.values() for rows in sets.values() for r in rows):
        lines += ["", "By what the question asks for (the reader's parse of the question, `operators.reader.asked`):",
                  "", *_table(runs, "asked")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, help="the shared data folder (holds the split folders)")
    ap.add_argument("--set", action="append", default=[], metavar="SPLIT=LIBRARY",
                    help="a split folder under DATA and the library its PDFs are indexed in (repeatable)")
    ap.add_argument("--ref-index", type=Path, help="library holding libtasn1.pdf and gnuplot.pdf")
    ap.add_argument("--questions", type=Path, default=ROOT / "tests" / "data" / "reference_lookup.jsonl")
    ap.add_argument("--limit", type=int, default=0, help="first N short-answer questions per set (0: all)")
    ap.add_argument("--kind", choices=QUESTION_KINDS,
                    help="only the questions of this type (by the gold's form and the question, as the tables' columns)")
    ap.add_argument("--method", default="bookindex",
                    help="comma-separated: bookindex and/or baseline retrievers (hybrid, bm25, dense, ...)")
    ap.add_argument("--k", type=int, default=10, help="a baseline's top-k nodes that are read (default 10)")
    ap.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting, e.g. llm.provider=llamacpp (repeatable; default llm.provider=none)")
    ap.add_argument("--label", default="run")
    ap.add_argument("--out", type=Path, default=Path("bench-out/answers"))
    a = ap.parse_args(argv)
    jobs: list[tuple[str, Path]] = []
    for item in a.set:
        name, sep, lib = item.partition("=")
        if not sep or not (a.data / name / "questions.json").is_file() or not Path(lib).is_dir():
            print(f"error: --set {item!r}: give SPLIT=LIBRARY with {a.data}/SPLIT/questions.json and an "
                  "existing library folder", file=sys.stderr)
            return 2
        jobs.append((name, Path(lib)))
    if not jobs and not a.ref_index:
        print("error: nothing to ask: give --set SPLIT=LIBRARY and/or --ref-index LIBRARY", file=sys.stderr)
        return 2
    methods = [m.strip() for m in a.method.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if not methods or unknown:
        print(f"error: --method {a.method!r}: choose from {', '.join(METHODS)}", file=sys.stderr)
        return 2
    overrides: dict[str, Any] = {"llm.provider": "none"}
    for kv in a.setting:
        key, sep, value = kv.partition("=")
        if not sep or not key.strip():
            print(f"error: --setting {kv!r}: give KEY=VALUE, e.g. llm.provider=llamacpp", file=sys.stderr)
            return 2
        overrides[key.strip()] = value.strip()
    # with a model the LLM disk cache is on (a rerun asks it nothing new); without one there is nothing to cache
    overrides.setdefault("cache.enabled", overrides["llm.provider"] != "none")
    try:
        settings = load_settings(overrides=overrides)
    except Exception as exc:  # noqa: BLE001 - a bad setting is the user's error, named
        print(f"error: --setting: {exc}", file=sys.stderr)
        return 2
    llm = "" if settings.llm.provider == "none" else (settings.llm.model or settings.llm.provider)
    result: dict[str, Any] = {"label": a.label, "date": time.strftime("%Y-%m-%d", time.gmtime()),
                              "settings": {k: str(v) for k, v in overrides.items()}, "limit": a.limit, "kind": a.kind,
                              "runs": {}, "sets": {}, "reference": []}
    engines = {name: Engine(lib, settings) for name, lib in jobs}
    questions: dict[str, list[MMLongBenchQuestion]] = {}
    for name, _ in jobs:
        qs = [q for q in load_questions(a.data / name) if short_gold(q.answer, q.answer_format)
              and (a.kind is None or question_kind(q.text, q.answer, q.answer_format) == a.kind)]
        questions[name] = qs[:a.limit] if a.limit else qs
    runs = {m: run_name(m, a.k, llm) for m in methods}
    for run in runs.values():
        result["runs"][run] = {name: [] for name, _ in jobs}
    a.out.mkdir(parents=True, exist_ok=True)
    # interleaved: question i of every set and method, then i + 1 (module docstring)
    for i in range(max((len(qs) for qs in questions.values()), default=0)):
        for name, _ in jobs:
            if i >= len(questions[name]):
                continue
            for m in methods:
                row = ask_one(engines[name], questions[name][i], m, a.k)
                result["runs"][runs[m]][name].append(row)
                write_json_atomic(a.out / "partial.json", result)
                if llm:
                    print(f"{name} {runs[m]} {row['id']}: score {row['score']}, {row['citation_check']}, "
                          f"{row['seconds']:.1f} s", flush=True)
    for run, sets in result["runs"].items():
        for name, rows in sets.items():
            n, acc = accuracy(rows)
            print(f"{name} ({run}): {n} questions, accuracy {acc:.3f}", flush=True)
    result["sets"] = next(iter(result["runs"].values()), {})
    if a.ref_index:
        engine = Engine(a.ref_index, settings)
        for q in load_reference_questions(a.questions):
            text = engine.ask(q.text, doc=q.doc).answer
            result["reference"].append({"id": q.qid, "question": q.text, "entry": q.entry, "answer": text,
                                        "named": names_entry(text, q.names)})
    write_json_atomic(a.out / "answers.json", result)
    md = markdown(a.label, result)
    write_text_atomic(a.out / "answers.md", md)
    print(md)
    print(json.dumps({"json": str(a.out / "answers.json"), "markdown": str(a.out / "answers.md")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
