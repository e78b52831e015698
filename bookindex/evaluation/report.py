"""Aggregate per-question records into per-method summaries, Markdown tables, a plot and the
report files (JSON + Markdown + plot) of a benchmark run.

A record is one (question, method) pair: `recall`/`hit` map k to a value (None when the
question is excluded from recall), plus `nodes`, `chars`, `seconds`, optional answer `score`
and `f1`, and `groups` (e.g. evidence source, document type) for breakdowns.
"""

from __future__ import annotations

import subprocess
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bookindex.core.atomic import write_json_atomic, write_text_atomic
from bookindex.evaluation.benchmark import Benchmark, Meta, Q, Record, Summary

# citation checks of answers an LLM was asked for (operators.grounding); "extractive" answers had
# no LLM. A refusal is "not-answerable", or "refused-extractive" where the extractive answer replaced it.
REFUSALS = ("not-answerable", "refused-extractive")
LLM_CHECKS = ("valid", "repaired", "fallback", *REFUSALS)


def source_commit(root: Path) -> str:
    """The git commit `root` is checked out at ("unknown" outside a checkout): what a fit's shipped
    weights record they were fitted by."""
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarize(records: Sequence[dict[str, Any]], rows: Sequence[str], ks: Sequence[int],
              answer_metrics: Callable[[list[dict[str, Any]]], dict[str, float]] | None = None
              ) -> dict[str, dict[str, Any]]:
    """Per-row means: R@k and hit@k over questions with gold evidence, context size, time."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        recs = [r for r in records if r["method"] == row]
        scored = [r for r in recs if r.get("recall") is not None]
        s: dict[str, Any] = {
            "questions": len(recs),
            "recall_questions": len(scored),
            "errors": sum(1 for r in recs if r.get("error")),
            "recall": {k: _mean([r["recall"][k] for r in scored]) for k in ks},
            "hit": {k: _mean([r["hit"][k] for r in scored]) for k in ks},
            "nodes": _mean([r["nodes"] for r in recs]),
            "chars": _mean([r["chars"] for r in recs]),
            "seconds": _mean([r["seconds"] for r in recs]),
        }
        answered = [r for r in recs if r.get("score") is not None]
        if answered and answer_metrics is not None:
            s["answers"] = answer_metrics(answered)
            llm_checks = [r["citation_check"] for r in answered if r.get("citation_check") in LLM_CHECKS]
            cited = [c for c in llm_checks if c not in REFUSALS]
            if cited:  # LLM answers (not refusals) whose citations all point at shown evidence
                s["answers"]["valid_citations"] = sum(c != "fallback" for c in cited) / len(cited)
                s["answers"]["repaired"] = sum(c == "repaired" for c in cited) / len(cited)
            if llm_checks:
                s["answers"]["refused"] = sum(c in REFUSALS for c in llm_checks) / len(llm_checks)
        shown = in_evidence(recs)
        if shown:
            s["in_evidence"] = shown
        out[row] = s
    return out


def in_evidence(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Answer-in-evidence of one row's records: the share of short-answer questions whose gold
    answer the reader's evidence shows, over all of them and over the text-answerable ones
    ({} when no record was scored for it)."""
    short = [r for r in records if r.get("in_evidence") is not None]
    if not short:
        return {}
    text = [r for r in short if r.get("text_answerable")]
    return {"n": len(short), "all": _mean([float(r["in_evidence"]) for r in short]),
            "n_text": len(text), "text": _mean([float(r["in_evidence"]) for r in text]),
            "page_shown": _mean([float(r.get("page_shown") or 0.0) for r in short])}


def in_evidence_breakdown(records: Sequence[dict[str, Any]], rows: Sequence[str], group: str,
                          text_only: bool) -> dict[str, Any]:
    """Answer-in-evidence per row for each value of `groups[group]` (all short-answer questions,
    or only the text-answerable ones), in the shape `markdown_breakdown` renders."""
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.get("in_evidence") is None or (text_only and not r.get("text_answerable")):
            continue
        g = r.get("groups", {}).get(group)
        for v in (g if isinstance(g, list) else [g]) or ["(none)"]:
            values[v or "(none)"][r["method"]].append(float(r["in_evidence"]))
    cols = sorted(values)
    return {"columns": cols, "n": {c: max((len(values[c][m]) for m in rows), default=0) for c in cols},
            "rows": {m: {c: _mean(values[c][m]) for c in cols} for m in rows}}


def markdown_in_evidence(summary: dict[str, dict[str, Any]], k: int) -> str:
    """Methods in rows: answer-in-evidence on all short-answer and on text-answerable questions,
    the share of short-answer questions whose reader passages show a gold page, beside the row's
    R@k (over every question with gold pages)."""
    head = ["method", "short n", "in evidence (all)", "text-answerable n", "in evidence (text)", "gold page shown", f"R@{k}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row, s in summary.items():
        e = s.get("in_evidence")
        if not e:
            continue
        lines.append("| " + " | ".join([row, str(e["n"]), _f(e["all"]), str(e["n_text"]), _f(e["text"]),
                                        _f(e.get("page_shown")), _f(s["recall"].get(k))]) + " |")
    return "\n".join(lines)


def breakdown(records: Sequence[dict[str, Any]], rows: Sequence[str], group: str, k: int) -> dict[str, Any]:
    """R@k per row for each value of `groups[group]` (a question may belong to several)."""
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.get("recall") is None:
            continue
        g = r.get("groups", {}).get(group)
        for v in (g if isinstance(g, list) else [g]) or ["(none)"]:
            values[v or "(none)"][r["method"]].append(r["recall"][k])
    cols = sorted(values)
    return {"k": k, "columns": cols,
            "n": {c: max((len(values[c][m]) for m in rows), default=0) for c in cols},
            "rows": {m: {c: _mean(values[c][m]) for c in cols} for m in rows}}


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def markdown_main(summary: dict[str, dict[str, Any]], ks: Sequence[int], hit_k: int,
                  extra: Sequence[tuple[str, str]] = ()) -> str:
    """Methods in rows: R@k columns, hit@hit_k, nodes/chars per question, seconds, errors.

    `extra` adds (header, answers-key) columns from the answer metrics when present."""
    head = ["method", "n"] + [f"R@{k}" for k in ks] + [f"hit@{hit_k}", "nodes/q", "chars/q", "s/q"]
    head += [h for h, _ in extra] + ["errors"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row, s in summary.items():
        cells = [row, str(s["recall_questions"])] + [_f(s["recall"][k]) for k in ks]
        cells += [_f(s["hit"].get(hit_k)), _f(s["nodes"], 1), _f(s["chars"], 0), _f(s["seconds"], 2)]
        ans = s.get("answers", {})
        cells += [_f(ans.get(key)) for _, key in extra]
        cells.append(str(s["errors"]))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_breakdown(b: dict[str, Any], title: str) -> str:
    cols = b["columns"]
    head = [title] + [f"{c} (n={b['n'][c]})" for c in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row, vals in b["rows"].items():
        lines.append("| " + " | ".join([row] + [_f(vals[c]) for c in cols]) + " |")
    return "\n".join(lines)


def plot_recall(summary: dict[str, dict[str, Any]], ks: Sequence[int], path: Path, title: str) -> Path:
    """Line plot of recall@k per method (matplotlib, Agg backend: no display needed)."""
    import matplotlib  # heavy optional dependency: loaded only when a plot is written

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2), dpi=120)
    for row, s in summary.items():
        ys = [s["recall"][k] for k in ks]
        if all(y is None for y in ys):
            continue
        ax.plot(list(ks), [y if y is not None else float("nan") for y in ys], marker="o", label=row)
    ax.set_xlabel("k (retrieved nodes)")
    ax.set_ylabel("evidence recall@k")
    ax.set_xticks(list(ks))
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def breakdown_k(ks: Sequence[int]) -> int:
    """The k the hit@k column and the breakdown tables report: 5 when measured, else the largest."""
    return 5 if 5 in ks else max(ks)


def render_report(benchmark: Benchmark[Q], summary: Summary, records: Sequence[Record], rows: Sequence[str],
                  ks: Sequence[int], meta: Meta) -> str:
    """The run's Markdown: title, command, date and machine, the benchmark's own lines, the main
    table (answer columns when any row was answered), then one recall table per breakdown."""
    k = breakdown_k(ks)
    has_answers = any("answers" in s for s in summary.values())
    # a benchmark may name its own answer columns (header, answer-metrics key)
    columns = getattr(benchmark, "answer_columns", (("acc", "accuracy"), ("F1", "f1")))
    extra = list(columns) if has_answers else []
    if any("valid_citations" in s.get("answers", {}) for s in summary.values()):
        extra += [("valid cites", "valid_citations"), ("repaired", "repaired"), ("refused", "refused")]
    failures = meta.get("index_failures") or {}
    parts = [
        f"# {benchmark.title} ({meta['split']})",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; machine: {meta['machine']}; LLM: {meta['llm']}",
        *benchmark.summary_lines(meta),
        *([f"- documents that failed to index: {', '.join(failures)}"] if failures else []),
        "",
        markdown_main(summary, ks, k, extra),
    ]
    for group, caption in benchmark.breakdowns:
        parts += ["", f"Recall@{k} by {caption}:", "",
                  markdown_breakdown(breakdown(records, rows, group, k), "method")]
    if any("in_evidence" in s for s in summary.values()):
        parts += ["", f"Answer in evidence ({meta.get('evidence_tokens')}-token evidence budget):", "",
                  markdown_in_evidence(summary, k)]
        for group, caption in benchmark.breakdowns:
            for text_only, which in ((False, "all short answers"), (True, "text-answerable")):
                parts += ["", f"Answer in evidence by {caption}, {which}:", "",
                          markdown_breakdown(in_evidence_breakdown(records, rows, group, text_only), "method")]
    return "\n".join(parts) + "\n"


def write_report(benchmark: Benchmark[Q], out_dir: Path, summary: Summary, records: Sequence[Record],
                 rows: Sequence[str], ks: Sequence[int], meta: Meta, markdown: str) -> dict[str, str]:
    """Write <name>.json (meta, summary, breakdowns, records; atomically), <name>.md and
    <name>_recall.png under `out_dir`; returns their paths by kind."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = benchmark.name
    jpath, mpath, ppath = out_dir / f"{stem}.json", out_dir / f"{stem}.md", out_dir / f"{stem}_recall.png"
    k = breakdown_k(ks)
    payload = {"meta": meta, "summary": summary,
               "breakdown": {group: breakdown(records, rows, group, k) for group, _ in benchmark.breakdowns},
               "in_evidence_breakdown": {
                   f"{group}/{'text' if t else 'all'}": in_evidence_breakdown(records, rows, group, t)
                   for group, _ in benchmark.breakdowns for t in (False, True)
                   if any(r.get("in_evidence") is not None for r in records)},
               "records": list(records)}
    write_json_atomic(jpath, payload, indent=1, default=str)
    write_text_atomic(mpath, markdown)
    plot_recall(summary, ks, ppath, f"{benchmark.title} {meta['split']}: {benchmark.recall_label}")
    return {"json": str(jpath), "markdown": str(mpath), "plot": str(ppath)}
