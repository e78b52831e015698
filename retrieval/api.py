"""Entry points over one opened document: `plan`, `run_plan`, `ask`.

Each takes the document's `IndexContext` (its index plus the providers), which the Engine opens
once and reuses, so the cost of opening is paid once, not per question.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bookindex.core.errors import InputError
from bookindex.core.model import Evidence
from bookindex.operators import prompts
from bookindex.operators.context import IndexContext
from bookindex.operators.evidence_select import packed_passages
from bookindex.operators.grounding import GroundedAnswer, grounded_answer, refusal_fallback_on
from bookindex.operators.passages import format_passages, passage_sources
from bookindex.operators.synthesizer import (
    NOT_ANSWERABLE,
    Reduce,
    evidence_tokens,
    extractive_answer,
    rank_candidates,
    reader_passages,
)
from bookindex.providers.llm.ledger import stages_total, usage_delta
from bookindex.retrieval.answer import Answer, TraceRecord, Usage, build_answer, ranked_evidence
from bookindex.retrieval.baselines import run_baseline
from bookindex.retrieval.executor import execute
from bookindex.retrieval.planner import make_plan
from bookindex.retrieval.plans import Plan

METHODS = ("bookindex", "bm25", "dense", "hybrid", "chunks", "tree")
Listener = Callable[[str, Any], None]  # (kind, data): the events of one question (`ask`)


def _check_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise InputError("the question is empty: ask something, e.g. bookindex ask DIR \"What is X?\"")
    return " ".join(question.split())


def _ledger(ctx: IndexContext) -> dict[str, Any]:
    return ctx.llm.ledger.snapshot() if ctx.llm is not None else {"stages": {}, "total": {}}


_COUNTS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "cached_tokens", "seconds")


def _usage(before: dict[str, Any], after: dict[str, Any], t0: float, first_token_s: float | None = None) -> Usage:
    """What one question spent: the ledger's stages between two snapshots, their total, the time."""
    stages = usage_delta(before, after, keys=_COUNTS)
    total = stages_total(stages, _COUNTS)
    return Usage.model_validate({"ms": round((time.perf_counter() - t0) * 1000, 2),
                                 "llm": {"stages": stages, "total": total},
                                 "first_token_s": None if first_token_s is None else round(first_token_s, 3)})


class _Stream:
    """Forwards a question's events to a listener (the Engine's streaming ask) and times the
    first answer token. Events: ("plan", Plan), ("evidence", [Evidence]), ("token", text),
    ("reset", why); the caller adds the finished Answer and its usage."""

    def __init__(self, ctx: IndexContext, t0: float, listener: Listener | None) -> None:
        self.ctx, self.t0, self.listener = ctx, t0, listener
        self.first_token_s: float | None = None

    def __call__(self, kind: str, data: Any) -> None:
        if kind == "token" and self.first_token_s is None:
            self.first_token_s = time.perf_counter() - self.t0
        if kind == "evidence":
            data = evidence_list(self.ctx, data)
        if self.listener is not None:
            self.listener(kind, data)

    def finish(self, answer_text: str) -> None:
        """An answer nobody streamed (extractive, structural, a cache miss without tokens)
        appears whole, now."""
        if self.first_token_s is None:
            self("token", answer_text)


def evidence_list(ctx: IndexContext, ids: list[str]) -> list[Evidence]:
    """Evidence for ranked node ids as the answer will list them (rank order, capped)."""
    cap = ctx.settings.retrieval.max_evidence
    tree = ctx.tree
    return [Evidence.from_node(tree, tree.nodes[i], scores={}, rank=r)
            for r, i in enumerate([i for i in ids if i in tree.nodes][:cap], 1)]


def plan(ctx: IndexContext, question: str) -> Plan:
    """Classify the question and build its operator plan; nothing is retrieved."""
    return make_plan(_check_question(question), ctx)


def run_plan(ctx: IndexContext, plan_: Plan | dict[str, Any] | str, on_event: Listener | None = None) -> Answer:
    """Execute a (possibly edited) plan: a Plan, its dict, or its JSON text (`on_event`: as `ask`,
    without the plan event)."""
    if isinstance(plan_, str):
        plan_ = Plan.from_json(plan_)
    elif isinstance(plan_, dict):
        plan_ = Plan.from_dict(plan_)
    _check_question(plan_.question)
    t0 = time.perf_counter()
    before = _ledger(ctx)
    stream = _Stream(ctx, t0, on_event)
    state = execute(plan_, ctx, on_event=stream)
    stream.finish(state.answer or NOT_ANSWERABLE)
    return build_answer(state, plan_, ctx, _usage(before, _ledger(ctx), t0, stream.first_token_s))


def ask(ctx: IndexContext, question: str, method: str = "bookindex", k: int | None = None,
        on_event: Listener | None = None) -> Answer:
    """Plan and run (method "bookindex"), or answer from a baseline retriever's top-k evidence.

    `on_event(kind, data)` streams the question: ("plan", Plan) once it is made, ("evidence",
    [Evidence]) before the model reads it, ("token", text) as the answer is written and
    ("reset", why) when that text is withdrawn (citation repair, extractive fallback); the
    returned Answer is final. `usage.first_token_s` is recorded with or without a listener."""
    q = _check_question(question)
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    t0 = time.perf_counter()
    before = _ledger(ctx)
    stream = _Stream(ctx, t0, on_event)
    if method == "bookindex":
        p = make_plan(q, ctx)
        stream("plan", p)
        state = execute(p, ctx, on_event=stream)
        stream.finish(state.answer or NOT_ANSWERABLE)
        return build_answer(state, p, ctx, _usage(before, _ledger(ctx), t0, stream.first_token_s))
    k = k or ctx.settings.retrieval.max_evidence
    evidence = run_baseline(method, ctx, q, k)
    for rank, ev in enumerate(evidence, 1):
        ev.rank = rank
    ids = [e.node_id for e in evidence if e.node_id in ctx.tree.nodes]
    stream("plan", None)
    if on_event is not None:
        on_event("evidence", evidence)
    g = _grounded(ctx, q, ids, stream)
    stream.finish(g.answer)
    return Answer(question=q, doc={"doc_id": ctx.tree.doc_id, "name": ctx.tree.name}, query_type="n/a",
                  plan=None, trace=[TraceRecord(op=f"baseline:{method}", k=k, outputs=[[e.node_id, e.scores] for e in evidence])],
                  evidence=evidence, answer=g.answer, usage=_usage(before, _ledger(ctx), t0, stream.first_token_s),
                  citations=g.citations, citation_check=g.check, method=method)


def search(ctx: IndexContext, question: str, method: str = "bookindex", k: int | None = None) -> list[Evidence]:
    """Ranked evidence only, no answer: bookindex's retrieval, a baseline, or a calibration ranker
    (bm25-pages). `k` caps the list (default `retrieval.max_evidence`)."""
    q = _check_question(question)
    cap = k or ctx.settings.retrieval.max_evidence
    if method == "bookindex":
        return retrieve(ctx, q)[:cap]
    evidence = run_baseline(method, ctx, q, cap)
    for rank, ev in enumerate(evidence, 1):
        ev.rank = rank
    return evidence


def retrieval_plan(ctx: IndexContext, question: str) -> Plan:
    """The operator plan of a search: the question's plan made without a model (rule
    classification, rule decomposition and filters) and cut before its Map and Reduce. A
    single-hop question's plan is `planner.retrieval_steps`; a multi-hop one runs them per
    sub-question; a global one filters. Executed without a model too (`retrieve`), so no step
    (entity extraction, the section choice of Select_by_Section) can ask one."""
    return _cut_before_map(make_plan(_check_question(question), _without_models(ctx)))


def _cut_before_map(planned: Plan) -> Plan:
    steps = [s for s in planned.steps if s.op not in ("Map", "Reduce")]
    return Plan(question=planned.question, query_type=planned.query_type, steps=steps,
                planner={**planned.planner, "search": "retrieval only: no Map/Reduce, no LLM"})


def retrieve(ctx: IndexContext, question: str) -> list[Evidence]:
    """bookindex's ranked evidence for a question, as `ask` ranks it without a model, and no
    answer: `retrieval_plan` executed, then a global plan's filtered nodes ranked as Map ranks
    them, the parts its COUNT/LIST would count first, and the tables that print the line items of
    the arithmetic a question asks first of all (`operators.computed`)."""
    bare = _without_models(ctx)
    planned = make_plan(_check_question(question), bare)
    plan_ = _cut_before_map(planned)
    state = execute(plan_, bare)
    reduce = next((s for s in planned.steps if s.op == "Reduce"), None)
    if plan_.query_type == "global":
        rank_candidates(bare, state)
        if reduce is not None:
            Reduce(bare, reduce.params).lead_with_counted(state)
    if reduce is not None:
        Reduce(bare, reduce.params).lead_with_computed(state)
    return ranked_evidence(state, bare)


def _without_models(ctx: IndexContext) -> IndexContext:
    """The same opened document (its derived views shared) with no LLM or VLM to call."""
    return replace(ctx, llm=None, vlm=None)


def _grounded(ctx: IndexContext, question: str, ids: list[str], on_event: Listener | None = None) -> GroundedAnswer:
    """A baseline's answer from its top evidence (packed into the same token budget as
    bookindex's), citations verified as bookindex's are; without a model, the extractive reader
    reads every ranked item (`reader_passages`)."""
    passages = packed_passages(ctx, ids, evidence_tokens(ctx), question)
    prompt = prompts.ANSWER.format(query=question, evidence=format_passages(passages))
    return grounded_answer(ctx.llm, prompt, range(1, len(passages) + 1),
                           lambda: (extractive_answer(ctx, question, reader_passages(ctx.tree, ids))
                                    if ids else (NOT_ANSWERABLE, [])),
                           sources=passage_sources(passages), on_event=on_event,
                           refusal_fallback=refusal_fallback_on(ctx.settings), question=question)
