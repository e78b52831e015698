#!/usr/bin/env python
"""No-LLM answer accuracy on the dev sets' short-answer questions, and reference lookup.

    python scripts/eval_answers.py ../shared/data \
        --set mmlongbench-dev=/tmp/idx-mml-after --set mmlongbench-dev2=/tmp/idx-mmlongbench-dev2 \
        --set financebench-dev=/tmp/idx-financebench-dev --ref-index /tmp/answers-ref \
        --label main --out bench-out/answers

DATA is the shared data folder; each --set NAME=LIBRARY names a split folder under DATA (its
questions.json) and the library its PDFs were indexed into (`bookindex index ...`; nothing is
indexed here). Asked: the questions with a short gold answer (answer_format Str, Int or Float,
answerable, at most 60 characters), each against its own document, by `Engine.ask` with no LLM.
The answer is reduced to its short form by a fixed rule and scored by MMLongBench's rules
(`bookindex.evaluation.short_answers`). --ref-index adds the reference-lookup questions
(tests/data/reference_lookup.jsonl): an answer counts when it names the entry.
Writes answers.json (every answer, short form and score) and answers.md (accuracy per set and per
question type) to --out and prints the Markdown.
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
from bookindex.evaluation.short_answers import question_kind, score_short, short_answer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MAX_GOLD_CHARS = 60


def short_gold(q: MMLongBenchQuestion) -> bool:
    """A question whose gold answer is short: Str/Int/Float, answerable, <= 60 characters."""
    gold = str(q.answer or "").strip()
    return (q.answer_format in ("Str", "Int", "Float") and bool(gold) and gold.lower() != "not answerable"
            and len(gold) <= MAX_GOLD_CHARS)


def ask_set(engine: Engine, questions: list[MMLongBenchQuestion]) -> list[dict[str, Any]]:
    rows = []
    for q in questions:
        t0 = time.perf_counter()
        try:
            ans = engine.ask(q.text, doc=q.doc)
            text, qtype, structural = ans.answer, ans.query_type, ans.structural is not None
        except Exception as exc:  # noqa: BLE001 - an error is a wrong answer, and recorded
            text, qtype, structural = f"error: {type(exc).__name__}: {exc}", "error", False
        short = short_answer(q.text, text)
        rows.append({"id": q.qid, "doc": q.doc, "question": q.text, "gold": q.answer, "format": q.answer_format,
                     "kind": question_kind(q.text, q.answer, q.answer_format), "sources": q.sources,
                     "answer": text, "short": short, "score": round(score_short(q.answer, q.answer_format, short), 4),
                     "query_type": qtype, "structural": structural,
                     "seconds": round(time.perf_counter() - t0, 3)})
    return rows


def accuracy(rows: list[dict[str, Any]]) -> tuple[int, float]:
    return len(rows), (sum(r["score"] for r in rows) / len(rows) if rows else 0.0)


def markdown(label: str, result: dict[str, Any]) -> str:
    sets = result["sets"]
    kinds = sorted({r["kind"] for rows in sets.values() for r in rows})
    lines = [f"### {label}", "", "| set | questions | accuracy | " + " | ".join(kinds) + " |",
             "|---|---|---|" + "---|" * len(kinds)]
    for name, rows in sets.items():
        n, acc = accuracy(rows)
        cells = []
        for k in kinds:
            kn, ka = accuracy([r for r in rows if r["kind"] == k])
            cells.append(f"{ka:.3f} ({kn})" if kn else "–")
        lines.append(f"| {name} | {n} | **{acc:.3f}** | " + " | ".join(cells) + " |")
    if result.get("reference"):
        rows = result["reference"]
        lines.append(f"| reference lookup (entry named) | {len(rows)} | **{sum(r['named'] for r in rows) / len(rows):.3f}** |"
                     + " |" * len(kinds))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, help="the shared data folder (holds the split folders)")
    ap.add_argument("--set", action="append", default=[], metavar="SPLIT=LIBRARY",
                    help="a split folder under DATA and the library its PDFs are indexed in (repeatable)")
    ap.add_argument("--ref-index", type=Path, help="library holding libtasn1.pdf and gnuplot.pdf")
    ap.add_argument("--questions", type=Path, default=ROOT / "tests" / "data" / "reference_lookup.jsonl")
    ap.add_argument("--limit", type=int, default=0, help="first N short-answer questions per set (0: all)")
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
    settings = load_settings(overrides={"llm.provider": "none", "cache.enabled": False})
    result: dict[str, Any] = {"label": a.label, "date": time.strftime("%Y-%m-%d", time.gmtime()), "sets": {},
                              "reference": []}
    for name, lib in jobs:
        qs = [q for q in load_questions(a.data / name) if short_gold(q)]
        qs = qs[:a.limit] if a.limit else qs
        result["sets"][name] = ask_set(Engine(lib, settings), qs)
        n, acc = accuracy(result["sets"][name])
        print(f"{name}: {n} questions, accuracy {acc:.3f}", flush=True)
    if a.ref_index:
        engine = Engine(a.ref_index, settings)
        for q in load_reference_questions(a.questions):
            text = engine.ask(q.text, doc=q.doc).answer
            result["reference"].append({"id": q.qid, "question": q.text, "entry": q.entry, "answer": text,
                                        "named": names_entry(text, q.names)})
    a.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(a.out / "answers.json", result)
    md = markdown(a.label, result)
    write_text_atomic(a.out / "answers.md", md)
    print(md)
    print(json.dumps({"json": str(a.out / "answers.json"), "markdown": str(a.out / "answers.md")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
