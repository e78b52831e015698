#!/usr/bin/env python
"""Answer latency: seconds per question, first token, LLM calls and prompt tokens, accuracy.

    python scripts/bench_answer.py ../shared/data --ref-index /tmp/idx-ref-after \
        --mml-index /tmp/idx-mml-final --ref-ids ref01,ref02 --mml-limit 8 \
        --set llm.provider=llamacpp --out bench-out/answer

DATA is the shared data folder (it holds mmlongbench-dev/); the libraries are built beforehand
without the LLM (`bookindex index ... -i DIR`). The LLM cache is off (every call is timed). Per
question: wall seconds of `Engine.ask`, seconds to the first answer token (where the Engine streams;
otherwise the whole answer), LLM calls, prompt/completion tokens and seconds per stage (from the
client's ledger, so the same code measures an older checkout), and accuracy:
- reference lookup: the answer names the entry (reference_run.names_entry);
- MMLongBench Pure-text: the gold answer is contained in the answer (numbers by value, lists
  element-wise, "Not answerable" by the not-answerable reply) - a rule check without the
  benchmark's LLM extraction step, so no extra model call is timed or paid for.
Writes answer.json and answer.md to --out and prints the Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.atomic import write_json_atomic, write_text_atomic  # noqa: E402
from bookindex.core.config import load_settings  # noqa: E402
from bookindex.engine import Engine  # noqa: E402
from bookindex.evaluation.mmlongbench import parse_number  # noqa: E402
from bookindex.evaluation.mmlongbench_run import load_questions  # noqa: E402
from bookindex.evaluation.reference_run import load_reference_questions, names_entry  # noqa: E402
from bookindex.operators.passages import estimate_tokens, format_passages, pack_passages  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^\w%.]+", " ", s.lower()).split())


def contains_gold(gold: str, fmt: str, answer: str) -> bool:
    """The gold answer appears in the answer (see the module docstring)."""
    text = _norm(answer)
    if fmt == "None" or gold.strip().lower() == "not answerable":
        return "not answerable" in text
    if fmt in ("Int", "Float"):
        g = parse_number(gold)
        nums = [parse_number(x) for x in re.findall(r"-?\d[\d,]*\.?\d*%?", answer)]
        return g is not None and any(n is not None and abs(n - g) <= max(0.01 * abs(g), 1e-9) for n in nums)
    if fmt == "List":
        try:
            items = json.loads(gold.replace("'", '"'))
        except json.JSONDecodeError:
            items = [gold]
        return all(_norm(str(i)) in text for i in items)
    return _norm(gold) in text


def _ledger(engine: Engine) -> dict[str, Any]:
    return engine.providers.llm.ledger.snapshot().get("stages", {})


def _diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for stage, a in after.items():
        b = before.get(stage, {})
        d = {k: round((a.get(k, 0) or 0) - (b.get(k, 0) or 0), 3)
             for k in ("calls", "prompt_tokens", "completion_tokens", "cached_tokens", "seconds")}
        if any(d.values()):
            out[stage] = d
    return out


def ask_one(engine: Engine, question: str, doc: str) -> dict[str, Any]:
    before = _ledger(engine)
    t0 = time.perf_counter()
    answer = engine.ask(question, doc=doc)
    seconds = time.perf_counter() - t0
    stages = _diff(before, _ledger(engine))
    first = getattr(answer.usage, "first_token_s", None)
    return {"seconds": round(seconds, 2), "first_token_s": round(first, 2) if first is not None else round(seconds, 2),
            "first_token_streamed": first is not None, "stages": stages,
            "calls": sum(int(s["calls"]) for s in stages.values()),
            "prompt_tokens": sum(int(s["prompt_tokens"]) for s in stages.values()),
            "completion_tokens": sum(int(s["completion_tokens"]) for s in stages.values()),
            "cached_tokens": sum(int(s.get("cached_tokens", 0)) for s in stages.values()),
            "query_type": answer.query_type, "answer": answer.answer, "citation_check": answer.citation_check,
            "load1": round(os.getloadavg()[0], 2)}


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    v = sorted(values)
    return round(v[min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))], 2)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    secs = [r["seconds"] for r in rows]
    stages: dict[str, dict[str, float]] = {}
    for r in rows:
        for st, d in r["stages"].items():
            acc = stages.setdefault(st, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "seconds": 0.0})
            for k in acc:
                acc[k] += d.get(k, 0)
    n = max(1, len(rows))
    return {"questions": len(rows), "p50_s": round(statistics.median(secs), 2) if secs else 0.0,
            "p95_s": pct(secs, 0.95), "mean_s": round(sum(secs) / n, 2),
            "first_token_p50_s": round(statistics.median([r["first_token_s"] for r in rows]), 2) if rows else 0.0,
            "calls_per_q": round(sum(r["calls"] for r in rows) / n, 2),
            "prompt_tokens_per_q": round(sum(r["prompt_tokens"] for r in rows) / n, 1),
            "completion_tokens_per_q": round(sum(r["completion_tokens"] for r in rows) / n, 1),
            "cached_tokens_per_q": round(sum(r.get("cached_tokens", 0) for r in rows) / n, 1),
            "accuracy": round(sum(r["correct"] for r in rows) / n, 3), "correct": sum(r["correct"] for r in rows),
            "load1_mean": round(sum(r["load1"] for r in rows) / n, 2),
            "stages_per_q": {st: {k: round(v / n, 2) for k, v in d.items()} for st, d in sorted(stages.items())}}


def markdown(label: str, result: dict[str, Any]) -> str:
    lines = [f"### {label}", "",
             "| set | questions | p50 s | p95 s | first token p50 s | LLM calls/q | prompt tok/q | of them KV-cached/q | completion tok/q | accuracy | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in result["sets"].items():
        lines.append(f"| {name} | {s['questions']} | {s['p50_s']} | {s['p95_s']} | {s['first_token_p50_s']} | "
                     f"{s['calls_per_q']} | {s['prompt_tokens_per_q']} | {s.get('cached_tokens_per_q', 0)} | {s['completion_tokens_per_q']} | "
                     f"{s['correct']}/{s['questions']} ({s['accuracy']:.2f}) | {s['load1_mean']} |")
    lines += ["", "| set | stage | calls/q | prompt tok/q | KV-cached tok/q | completion tok/q | s/q |", "|---|---|---|---|---|---|---|"]
    for name, s in result["sets"].items():
        for st, d in s["stages_per_q"].items():
            lines.append(f"| {name} | {st} | {d['calls']} | {d['prompt_tokens']} | {d.get('cached_tokens', 0)} | {d['completion_tokens']} | {d['seconds']} |")
    return "\n".join(lines) + "\n"


def budget_sweep(jobs: list[tuple[str, Path, list[tuple[str, str, str, Any]]]], settings: Any,
                 budgets: list[int]) -> dict[str, Any]:
    """Without an LLM: how much of the answer's evidence an answer prompt packed to each budget
    still holds. Reference: the entry's name is in the packed passages; MMLongBench: a gold page is
    among the packed passages' pages. Also the estimated evidence tokens actually used."""
    out: dict[str, Any] = {}
    for name, lib, questions in jobs:
        engine = Engine(lib, settings)
        hits = {b: 0 for b in budgets}
        used = {b: 0 for b in budgets}
        for _qid, text, doc, gold in questions:
            answer = engine.ask(text, doc=doc)
            tree = engine.tree(doc)
            ids = [e.node_id for e in answer.evidence if e.node_id in tree.nodes]
            for b in budgets:
                packed = pack_passages(tree, ids, b)
                body = format_passages(packed)
                used[b] += estimate_tokens(body)
                if name == "reference":
                    hits[b] += names_entry(body, gold)
                else:
                    pages = {p for ps in packed for p in range(ps.first_page, ps.last_page + 1)}
                    hits[b] += bool(set(gold[2]) & pages)
        n = max(1, len(questions))
        out[name] = {str(b): {"questions": len(questions), "evidence_in_prompt": round(hits[b] / n, 3),
                              "evidence_tokens_per_q": round(used[b] / n)} for b in budgets}
    return out


def sweep_markdown(sweep: dict[str, Any]) -> str:
    lines = ["| set | budget (tokens) | questions | answer evidence in the prompt | evidence tokens/q |",
             "|---|---|---|---|---|"]
    for name, rows in sweep.items():
        for b, r in rows.items():
            lines.append(f"| {name} | {b} | {r['questions']} | {r['evidence_in_prompt']:.3f} | {r['evidence_tokens_per_q']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, help="the shared data folder (holds mmlongbench-dev/)")
    ap.add_argument("--ref-index", type=Path, help="library with libtasn1.pdf and gnuplot.pdf")
    ap.add_argument("--mml-index", type=Path, help="library with the MMLongBench dev PDFs")
    ap.add_argument("--questions", type=Path, default=ROOT / "tests" / "data" / "reference_lookup.jsonl")
    ap.add_argument("--ref-ids", default="", help="comma-separated reference question ids (default: all)")
    ap.add_argument("--mml-limit", type=int, default=0, help="first N Pure-text questions (0: all)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting, e.g. llm.provider=llamacpp")
    ap.add_argument("--label", default="run")
    ap.add_argument("--budget-sweep", default="", metavar="TOKENS,...",
                    help="no LLM: evidence kept in the prompt at each budget (e.g. 600,1000,1500,2500)")
    ap.add_argument("--out", type=Path, default=Path("bench-out/answer"))
    a = ap.parse_args(argv)
    overrides: dict[str, Any] = {"cache.enabled": False}
    for kv in a.set:
        key, _, value = kv.partition("=")
        overrides[key.strip()] = value.strip()
    settings = load_settings(overrides=overrides)
    a.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"label": a.label, "settings": overrides, "sets": {}, "rows": {}}
    jobs: list[tuple[str, Path, list[tuple[str, str, str, Any]]]] = []
    if a.ref_index:
        ids = {x.strip() for x in a.ref_ids.split(",") if x.strip()}
        refs = [q for q in load_reference_questions(a.questions) if not ids or q.qid in ids]
        jobs.append(("reference", a.ref_index, [(q.qid, q.text, q.doc, q.names) for q in refs]))
    if a.mml_index:
        mml = [q for q in load_questions(a.data / "mmlongbench-dev") if "text" in q.sources]
        mml = mml[:a.mml_limit] if a.mml_limit else mml
        jobs.append(("mmlongbench-pure-text", a.mml_index,
                     [(q.qid, q.text, q.doc, (q.answer, q.answer_format, q.gold_pages)) for q in mml]))
    if a.budget_sweep:
        sweep = budget_sweep(jobs, load_settings(overrides={**overrides, "llm.provider": "none"}),
                             [int(b) for b in a.budget_sweep.split(",") if b.strip()])
        write_json_atomic(a.out / "budget.json", sweep)
        md = sweep_markdown(sweep)
        write_text_atomic(a.out / "budget.md", md)
        print(md)
        return 0
    # the sets' questions interleaved (a run cut short by a time limit still covers both sets;
    # partial.json holds every finished row)
    engines = {name: Engine(lib, settings) for name, lib, _ in jobs}
    order = [(name, q) for k in range(max((len(qs) for _, _, qs in jobs), default=0))
             for name, _, qs in jobs if k < len(qs) for q in [qs[k]]]
    for name, (qid, text, doc, gold) in order:
        row = ask_one(engines[name], text, doc)
        if name == "reference":
            row["correct"] = names_entry(row["answer"], gold)
        else:
            row["correct"] = contains_gold(str(gold[0]), str(gold[1] or "Str"), row["answer"])
        row.update(id=qid, question=text)
        result["rows"].setdefault(name, []).append(row)
        write_json_atomic(a.out / "partial.json", {"label": a.label, "rows": result["rows"]})
        print(f"{name} {qid}: {row['seconds']:.1f} s, first token {row['first_token_s']:.1f} s, "
              f"{row['calls']} calls, {row['prompt_tokens']} prompt tok, correct={row['correct']}, "
              f"load {row['load1']}", flush=True)
    for name, rows in result["rows"].items():
        result["sets"][name] = summarise(rows)
    write_json_atomic(a.out / "answer.json", result)
    md = markdown(a.label, result)
    write_text_atomic(a.out / "answer.md", md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
