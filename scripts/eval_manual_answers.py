#!/usr/bin/env python
"""No-LLM answers to user questions on manuals: does the answer say what the manual says?

    bookindex index R-data.pdf R-admin.pdf R-FAQ.pdf asymptote.pdf R-intro.pdf -i /tmp/manuals
    python scripts/eval_manual_answers.py /tmp/manuals --out bench-out/manual-answers

The manuals are Debian's (`apt-get download r-doc-pdf asymptote-doc`; the PDFs are under
usr/share/R/doc/manual and usr/share/doc/asymptote; docs/benchmarks.md lists every set's
packages), which neither the development data nor the issues show. The questions
(tests/data/manual_user_questions.jsonl, nineteen sets of 20; sets eleven to nineteen were written
by people who saw neither the code nor an answer) were written as a user would ask them, each
with the strings that mark a right answer (the function, the value, the key phrase the manual
gives), read from the PDF by hand. An answer is right when one of them is in
its first 300 characters. Each question is asked of its own document with no LLM. A question
whose document the library lacks is skipped and counted. Writes manual_answers.json and
manual_answers.md to --out.

Beside it, answer in evidence (the yardstick of `eval_mmlongbench.py`): whether one of those
strings is in the exact text a model would read for the question at the default evidence budget
(`bookindex.evaluation.reader_text`). It bounds what any reader, a model you bring included, can
answer from bookindex's evidence on documents nobody tuned on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHOWN = 300  # the characters of an answer a reader takes in at a glance


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("index", type=Path, help="library folder holding the manuals the questions name")
    ap.add_argument("--questions", type=Path, default=ROOT / "tests" / "data" / "manual_user_questions.jsonl")
    ap.add_argument("--out", type=Path, default=Path("bench-out/manual-answers"))
    args = ap.parse_args(argv)
    from bookindex.core.config import load_settings
    from bookindex.engine import Engine
    from bookindex.evaluation.reader_text import reader_text

    if not (args.index / "library.json").exists():
        print(f"error: {args.index}: not a bookindex library (no library.json)", file=sys.stderr)
        return 2
    engine = Engine(args.index, settings=load_settings(overrides={"llm": {"provider": "none"}}))
    names = {d.name for d in engine.documents()}
    rows, skipped = [], 0
    for line in args.questions.read_text().splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        if q["doc"] not in names:
            skipped += 1
            continue
        answer = engine.ask(q["question"], doc=q["doc"]).answer
        right = any(k.lower() in answer[:SHOWN].lower() for k in q["accept"])
        ctx = engine.open(q["doc"])
        evidence = engine.search(q["question"], doc=q["doc"], k=ctx.settings.retrieval.max_evidence)
        # however the passages break their lines ("the first\nnew row")
        shown = " ".join(reader_text(ctx, evidence, question=q["question"], computed=True).split()).lower()
        in_evidence = any(" ".join(k.split()).lower() in shown for k in q["accept"])
        rows.append({**q, "answer": answer, "right": right, "in_evidence": in_evidence})
        print(f"{'right' if right else 'wrong'}  [{q['doc']}] {q['question']}\n       {answer[:160]!r}")
    by_set: dict[str, list[dict]] = {}
    for r in rows:
        by_set.setdefault(r.get("set", "all"), []).append(r)
    by_set["all"] = rows
    summary = {s: {"questions": len(v), "right": sum(r["right"] for r in v),
                   "in_evidence": sum(r["in_evidence"] for r in v)} for s, v in by_set.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "manual_answers.json").write_text(json.dumps(
        {"summary": summary, "skipped": skipped, "rows": rows}, indent=1))
    table = ["| questions | right | share | answer in evidence |", "|---|---|---|---|"]
    table += [f"| {s} | {v['right']} of {v['questions']} | {v['right'] / max(1, v['questions']):.2f} "
              f"| {v['in_evidence']} of {v['questions']} |" for s, v in summary.items()]
    (args.out / "manual_answers.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    if skipped:
        print(f"{skipped} questions skipped: their documents are not in {args.index}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
