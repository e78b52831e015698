"""Entry points: `plan`, `run_plan`, `ask` over one indexed document (a StoredDocument or an
IndexContext). The per-document context (BM25 index, vectors) is cached on the document object,
so the cost of opening is paid once, not per question."""

from __future__ import annotations

import time
from typing import Any

from bookindex.errors import InputError
from operators.context import IndexContext
from operators.synthesizer import NOT_ANSWERABLE, best_sentences, cited_numbers, format_evidence
from retrieval.answer import Answer, build_answer
from retrieval.executor import execute
from retrieval.planner import make_plan
from retrieval.plans import Plan

METHODS = ("bookindex", "bm25", "dense", "hybrid", "chunks", "tree")


def default_settings(settings: Any = None) -> Any:
    if settings is not None:
        return settings
    try:
        from bookindex.config import load_settings
    except ImportError:
        return None
    return load_settings()


def default_llm(settings: Any, llm: Any = None) -> Any:
    if llm is not None or settings is None:
        return llm
    try:
        from bookindex.llm import get_llm
    except ImportError:
        return None
    return get_llm(settings)


def context_for(doc: Any, settings: Any = None, llm: Any = None) -> IndexContext:
    """The cached IndexContext of a document; `llm`/`settings` given here replace the cached ones."""
    if isinstance(doc, IndexContext):
        ctx = doc
    else:
        ctx = getattr(doc, "_bookindex_ctx", None)
        if ctx is None:
            lib = getattr(doc, "library", None)
            if settings is None and lib is not None:
                settings = lib.settings
            settings = default_settings(settings)
            embedder = reranker = None
            if lib is not None:  # reuse the library's providers (loaded once per process)
                embedder = lib.embedder
                reranker = lib._get_reranker(settings) if hasattr(lib, "_get_reranker") else None
                if llm is None and hasattr(lib, "_get_llm"):
                    llm = lib._get_llm(settings)
            ctx = IndexContext.from_document(doc, settings=settings, embedder=embedder, reranker=reranker)
            try:
                doc._bookindex_ctx = ctx
            except AttributeError:
                pass
    if settings is not None:
        ctx.settings = settings
    if ctx.settings is None:
        ctx.settings = default_settings(None)
    ctx.llm = llm if llm is not None else (ctx.llm if ctx.llm is not None else default_llm(ctx.settings))
    return ctx


def _check_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise InputError("the question is empty: ask something, e.g. bookindex ask DIR \"What is X?\"")
    return " ".join(question.split())


def _ledger(llm: Any) -> dict[str, Any]:
    try:
        return llm.ledger.snapshot()
    except AttributeError:
        return {"stages": {}, "total": {}}


def _usage(before: dict[str, Any], after: dict[str, Any], t0: float) -> dict[str, Any]:
    stages: dict[str, Any] = {}
    for st, a in after.get("stages", {}).items():
        b = before.get("stages", {}).get(st, {})
        d = {k: (a.get(k, 0) or 0) - (b.get(k, 0) or 0) for k in ("calls", "cache_hits", "prompt_tokens", "completion_tokens")}
        if any(d.values()):
            stages[st] = d
    total = {k: sum(v[k] for v in stages.values()) for k in ("calls", "cache_hits", "prompt_tokens", "completion_tokens")}
    return {"ms": round((time.perf_counter() - t0) * 1000, 2), "llm": {"stages": stages, "total": total}}


def plan(doc: Any, question: str, settings: Any = None, llm: Any = None) -> Plan:
    """Classify the question and build its operator plan; nothing is retrieved."""
    q = _check_question(question)
    return make_plan(q, context_for(doc, settings, llm))


def run_plan(doc: Any, plan_: Plan | dict[str, Any] | str, settings: Any = None, llm: Any = None) -> Answer:
    """Execute a (possibly edited) plan: a Plan, its dict, or its JSON text."""
    if isinstance(plan_, str):
        plan_ = Plan.from_json(plan_)
    elif isinstance(plan_, dict):
        plan_ = Plan.from_dict(plan_)
    _check_question(plan_.question)
    ctx = context_for(doc, settings, llm)
    t0 = time.perf_counter()
    before = _ledger(ctx.llm)
    state = execute(plan_, ctx)
    return build_answer(state, plan_, ctx, _usage(before, _ledger(ctx.llm), t0))


def ask(doc: Any, question: str, settings: Any = None, llm: Any = None, method: str = "bookindex",
        k: int | None = None) -> Answer:
    """Plan and run (method "bookindex"), or answer from a baseline retriever's top-k evidence."""
    q = _check_question(question)
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    ctx = context_for(doc, settings, llm)
    t0 = time.perf_counter()
    before = _ledger(ctx.llm)
    if method == "bookindex":
        p = make_plan(q, ctx)
        state = execute(p, ctx)
        return build_answer(state, p, ctx, _usage(before, _ledger(ctx.llm), t0))
    from retrieval.baselines import run_baseline  # the evaluation helper's module

    k = k or int(ctx.retrieval_setting("max_evidence", 10))
    evidence = run_baseline(method, doc, q, k, ctx.settings)
    for rank, ev in enumerate(evidence, 1):
        ev.rank = rank
    ids = [e.node_id for e in evidence if e.node_id in ctx.tree.nodes]
    text, cites = _grounded(ctx, q, ids)
    return Answer(question=q, doc={"doc_id": ctx.tree.doc_id, "name": ctx.tree.name}, query_type="n/a",
                  plan=None, trace=[{"op": f"baseline:{method}", "k": k, "outputs": [[e.node_id, e.scores] for e in evidence]}],
                  evidence=evidence, answer=text, usage=_usage(before, _ledger(ctx.llm), t0),
                  citations=cites, method=method)


def _grounded(ctx: IndexContext, question: str, ids: list[str]) -> tuple[str, list[int]]:
    from operators import prompts

    if ctx.llm_available and ids:
        try:
            res = ctx.llm.complete(prompts.ANSWER.format(query=question, evidence=format_evidence(ctx.tree, ids)),
                                   schema=prompts.Grounded, stage="answer")
            return res.answer.strip() or NOT_ANSWERABLE, cited_numbers(res.answer)
        except Exception:  # noqa: BLE001 - extractive answer instead
            pass
    return best_sentences(ctx.tree, question, ids) if ids else (NOT_ANSWERABLE, [])
