"""Entry points over one opened document: `plan`, `run_plan`, `ask`.

Each takes the document's `IndexContext` (its index plus the providers), which the Engine opens
once and reuses, so the cost of opening is paid once, not per question.
"""

from __future__ import annotations

import time
from typing import Any

from bookindex.core.errors import InputError
from operators import prompts
from operators.context import IndexContext
from operators.grounding import GroundedAnswer, grounded_answer
from operators.passages import build_passages, format_passages, passage_sources
from operators.synthesizer import NOT_ANSWERABLE, best_sentences
from retrieval.answer import Answer, TraceRecord, Usage, build_answer
from bookindex.core.model import Evidence
from retrieval.baselines import run_baseline
from retrieval.executor import execute
from retrieval.planner import make_plan
from retrieval.plans import Plan

METHODS = ("bookindex", "bm25", "dense", "hybrid", "chunks", "tree")


def _check_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise InputError("the question is empty: ask something, e.g. bookindex ask DIR \"What is X?\"")
    return " ".join(question.split())


def _ledger(ctx: IndexContext) -> dict[str, Any]:
    return ctx.llm.ledger.snapshot() if ctx.llm is not None else {"stages": {}, "total": {}}


def _usage(before: dict[str, Any], after: dict[str, Any], t0: float) -> Usage:
    stages: dict[str, Any] = {}
    for st, a in after.get("stages", {}).items():
        b = before.get("stages", {}).get(st, {})
        d = {k: (a.get(k, 0) or 0) - (b.get(k, 0) or 0) for k in ("calls", "cache_hits", "prompt_tokens", "completion_tokens")}
        if any(d.values()):
            stages[st] = d
    total = {k: sum(v[k] for v in stages.values()) for k in ("calls", "cache_hits", "prompt_tokens", "completion_tokens")}
    return Usage.model_validate({"ms": round((time.perf_counter() - t0) * 1000, 2),
                                 "llm": {"stages": stages, "total": total}})


def plan(ctx: IndexContext, question: str) -> Plan:
    """Classify the question and build its operator plan; nothing is retrieved."""
    return make_plan(_check_question(question), ctx)


def run_plan(ctx: IndexContext, plan_: Plan | dict[str, Any] | str) -> Answer:
    """Execute a (possibly edited) plan: a Plan, its dict, or its JSON text."""
    if isinstance(plan_, str):
        plan_ = Plan.from_json(plan_)
    elif isinstance(plan_, dict):
        plan_ = Plan.from_dict(plan_)
    _check_question(plan_.question)
    t0 = time.perf_counter()
    before = _ledger(ctx)
    state = execute(plan_, ctx)
    return build_answer(state, plan_, ctx, _usage(before, _ledger(ctx), t0))


def ask(ctx: IndexContext, question: str, method: str = "bookindex", k: int | None = None) -> Answer:
    """Plan and run (method "bookindex"), or answer from a baseline retriever's top-k evidence."""
    q = _check_question(question)
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    t0 = time.perf_counter()
    before = _ledger(ctx)
    if method == "bookindex":
        p = make_plan(q, ctx)
        state = execute(p, ctx)
        return build_answer(state, p, ctx, _usage(before, _ledger(ctx), t0))
    k = k or int(ctx.retrieval_setting("max_evidence", 10))
    evidence = run_baseline(method, ctx, q, k)
    for rank, ev in enumerate(evidence, 1):
        ev.rank = rank
    ids = [e.node_id for e in evidence if e.node_id in ctx.tree.nodes]
    g = _grounded(ctx, q, ids)
    return Answer(question=q, doc={"doc_id": ctx.tree.doc_id, "name": ctx.tree.name}, query_type="n/a",
                  plan=None, trace=[TraceRecord(op=f"baseline:{method}", k=k, outputs=[[e.node_id, e.scores] for e in evidence])],
                  evidence=evidence, answer=g.answer, usage=_usage(before, _ledger(ctx), t0),
                  citations=g.citations, citation_check=g.check, method=method)


def search(ctx: IndexContext, question: str, method: str = "bookindex", k: int | None = None) -> list[Evidence]:
    """Ranked evidence only: bookindex's plan, a baseline, or a calibration ranker (bm25-pages)."""
    q = _check_question(question)
    if method == "bookindex":
        return list(ask(ctx, q).evidence)
    evidence = run_baseline(method, ctx, q, k or int(ctx.retrieval_setting("max_evidence", 10)))
    for rank, ev in enumerate(evidence, 1):
        ev.rank = rank
    return evidence


def _grounded(ctx: IndexContext, question: str, ids: list[str]) -> GroundedAnswer:
    """A baseline's answer from its top evidence, citations verified as bookindex's are."""
    passages = build_passages(ctx.tree, ids)
    prompt = prompts.ANSWER.format(query=question, evidence=format_passages(passages))
    return grounded_answer(ctx.llm, prompt, range(1, len(ids) + 1),
                           lambda: best_sentences(ctx.tree, question, ids) if ids else (NOT_ANSWERABLE, []),
                           sources=passage_sources(passages))
