"""Structured execution (BookRAG §5.3): run a plan's steps over the retrieval state, with traces.

Composite steps: `Parallel` runs its branches over the same candidates (they write separate
score dimensions); `ForEach` runs its steps once per sub-question from Decompose and merges the
sub-results round-robin into one evidence ranking. A step whose operator reports
`fallback_needed` runs its `fallback` step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any

from bookindex.core.model import entry_of
from bookindex.operators import OPERATORS
from bookindex.operators.base import State
from bookindex.operators.context import IndexContext
from bookindex.operators.formulator import Extract
from bookindex.operators.textscore import prefetch_vectors, question_scope
from bookindex.retrieval.plans import Plan, Step


def execute(plan: Plan, ctx: IndexContext, on_event: Callable[[str, Any], None] | None = None) -> State:
    """Run `plan`; `on_event` receives what Reduce streams (evidence ids, answer tokens)."""
    # the plan's operation is known before its Reduce runs: Map skips the LLM for COUNT/LIST
    state = State(question=plan.question, query_type=plan.query_type, operation=plan.operation(),
                  on_event=on_event)
    with question_scope():
        _run_steps(plan.steps, state, ctx)
    return state


def _run_steps(steps: list[Step], state: State, ctx: IndexContext) -> None:
    for step in steps:
        _run_step(step, state, ctx)


def _run_step(step: Step, state: State, ctx: IndexContext) -> None:
    if step.op == "Parallel":
        t0 = time.perf_counter()
        outer, state.trace = state.trace, []
        for branch in step.steps or []:
            _run_step(branch, state, ctx)
        branches, state.trace = state.trace, outer
        state.trace.append({"op": "Parallel", "kind": "composite", "ms": _ms(t0), "branches": branches})
        return
    if step.op == "ForEach":
        _for_each(step, state, ctx)
        return
    op = OPERATORS[step.op](ctx, step.params)
    op.run(state)
    unknown = unknown_ids(step.params, ctx)
    if unknown and state.trace:
        rec = state.trace[-1]
        note = f"unknown ids ignored: {', '.join(unknown[:10])}" + (" ..." if len(unknown) > 10 else "")
        rec["warning"] = f"{rec['warning']}; {note}" if rec.get("warning") else note
    if getattr(op, "fallback_needed", False) and step.fallback is not None:
        state.trace[-1]["fallback_to"] = step.fallback.op
        _run_step(step.fallback, state, ctx)


def unknown_ids(params: dict[str, Any], ctx: IndexContext) -> list[str]:
    """Section or entity ids an (edited) plan names that this document does not have: the
    operators skip them, and the trace says so instead of ignoring them silently."""
    out = [str(i) for i in params.get("section_ids") or [] if str(i) not in ctx.tree.nodes]
    if params.get("entity_ids"):
        entities = ctx.graph.entities
        out += [str(i) for i in params["entity_ids"] if str(i) not in entities]
    return out


def _for_each(step: Step, state: State, ctx: IndexContext) -> None:
    t0 = time.perf_counter()
    subs = state.sub_questions or [state.question]
    whole_too = step.params.get("with_question", False) and state.question not in subs
    _embed_together(step.steps or [], subs + ([state.question] if whole_too else []), ctx)
    state.sub_results = []
    for q in subs:
        sub = state.fork(q)
        _run_steps(step.steps or [], sub, ctx)
        state.sub_results.append({"question": q, "ranked": list(sub.ranked),
                                  "entities": [le.to_dict() for le in sub.entities], "trace": sub.trace})
    rankings = [r["ranked"] for r in state.sub_results]
    whole: dict[str, Any] | None = None
    if whole_too:
        # The whole question is retrieved too and leads the merge: a decomposition that split a
        # name ("X and Y") or dropped context then costs positions, not the answer.
        sub = state.fork(state.question)
        _run_steps(step.steps or [], sub, ctx)
        whole = {"question": state.question, "trace": sub.trace}
        rankings = [list(sub.ranked)] + rankings
    tree = ctx.tree
    state.ranked = merge_round_robin(rankings, ctx.settings.retrieval.max_evidence,
                                     unit=lambda i: entry_of(tree, i) or tree.nodes[i].page_idx)
    state.candidates = [i for i, _ in state.ranked]
    # each sub-result keeps only the evidence that made it into the merged list (so citations are global)
    kept = set(state.candidates)
    for r in state.sub_results:
        r["ranked"] = [(i, s) for i, s in r["ranked"] if i in kept]
    record: dict[str, Any] = {"op": "ForEach", "kind": "composite", "ms": _ms(t0),
                              "sub_questions": [{"question": r["question"], "trace": r["trace"],
                                                 "kept": [i for i, _ in r["ranked"]]} for r in state.sub_results],
                              "outputs": [[i, round(s, 4)] for i, s in state.ranked]}
    if whole is not None:
        record["whole_question"] = whole
    state.trace.append(record)


def _embed_together(steps: list[Step], questions: list[str], ctx: IndexContext) -> None:
    """Encode what the sub-questions' Extract steps will embed (each question and its rule
    mentions) in one model call: one call costs about as much as one text."""
    extract = next((s for s in steps if s.op == "Extract"), None)
    if extract is None or ctx.embedder is None:
        return
    op = Extract(ctx, extract.params)
    texts: list[str] = []
    for q in questions:
        got = op.rule_texts(q)
        if got is None:  # an LLM picks the mentions: each Extract embeds its own
            return
        texts += got
    prefetch_vectors(ctx, texts)


def merge_round_robin(rankings: list[list[tuple[str, float]]], cap: int,
                      unit: Callable[[str], Hashable] | None = None) -> list[tuple[str, float]]:
    """Interleave rankings (best of each first), dropping duplicates, up to `cap` items.

    With `unit` (a node's page, or its reference entry), an item whose unit an earlier item
    already shows waits behind every first item of a unit, as the Skyline ranking's page
    diversity orders one ranking: two sub-questions that both find the same page would
    otherwise spend two of the first slots on it, and push another page out of the top."""
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    k = 0
    limit = cap if unit is None else sum(len(r) for r in rankings)
    while len(out) < limit and any(k < len(r) for r in rankings):
        for r in rankings:
            if k < len(r) and r[k][0] not in seen and len(out) < limit:
                out.append(r[k])
                seen.add(r[k][0])
        k += 1
    if unit is not None:
        shown: dict[Hashable, int] = {}
        order: dict[str, int] = {}
        for i, _ in out:
            u = unit(i)
            order[i] = shown.get(u, 0)
            shown[u] = order[i] + 1
        out = sorted(out, key=lambda item: order[item[0]])  # stable: the interleaved order within a round
    return out[:cap]


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)


def flatten_trace(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """All operator records, composites expanded (for counting and tests)."""
    out: list[dict[str, Any]] = []
    for rec in trace:
        out.append(rec)
        out += flatten_trace(rec.get("branches", []))
        for sq in rec.get("sub_questions", []) if isinstance(rec.get("sub_questions"), list) else []:
            if isinstance(sq, dict):
                out += flatten_trace(sq.get("trace", []))
        if isinstance(rec.get("whole_question"), dict):
            out += flatten_trace(rec["whole_question"].get("trace", []))
    return out
