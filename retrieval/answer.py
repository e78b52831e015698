"""The answer object every interface returns: question, plan, trace, ranked evidence, answer, usage."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bookindex.core.model import Evidence
from bookindex.operators.base import State
from bookindex.operators.context import IndexContext
from bookindex.operators.synthesizer import NOT_ANSWERABLE
from bookindex.retrieval.plans import Plan

__all__ = ["Answer", "TraceRecord", "SubQuestionTrace", "StageUsage", "LLMUsage", "Usage", "build_answer",
           "NOT_ANSWERABLE"]


class SubQuestionTrace(BaseModel):
    """What ran for one sub-question of a ForEach (or for the whole question leading its merge)."""

    model_config = ConfigDict(extra="allow")

    question: str
    trace: list[TraceRecord] = Field(default_factory=list)


class TraceRecord(BaseModel):
    """What one operator (or composite step) received, kept and why. Operators add their own
    details (mentions, fallbacks, scores, ...) as extra fields."""

    model_config = ConfigDict(extra="allow")

    op: str
    kind: str | None = None
    ms: float | None = None
    params: dict[str, Any] | None = None
    inputs: dict[str, Any] | None = None
    llm: dict[str, int] | None = None
    outputs: Any = None
    branches: list[TraceRecord] | None = None
    sub_questions: list[SubQuestionTrace | str] | None = None  # ForEach: traces; Decompose: the texts
    whole_question: SubQuestionTrace | None = None


class StageUsage(BaseModel):
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # prompt tokens the in-process model reused from its KV cache; the rest were evaluated
    # before the first generated token (what the first token waits on)
    cached_tokens: int = 0
    seconds: float = 0.0  # waiting on the model (where a question's time goes)


class LLMUsage(BaseModel):
    stages: dict[str, StageUsage] = Field(default_factory=dict)
    total: StageUsage = Field(default_factory=StageUsage)


class Usage(BaseModel):
    """Wall time of the question and the LLM calls it made, per stage. `first_token_s`: seconds
    from the question to the first piece of the answer a reader could see (the first streamed
    token of an LLM answer; an extractive or structural answer appears whole)."""

    ms: float = 0.0
    llm: LLMUsage = Field(default_factory=LLMUsage)
    first_token_s: float | None = None


class Answer(BaseModel):
    """The answer every interface returns: question, plan, trace, ranked evidence, answer, usage."""

    question: str
    doc: dict[str, str]
    query_type: str
    plan: Plan | None
    trace: list[TraceRecord]
    evidence: list[Evidence]
    answer: str
    usage: Usage = Field(default_factory=Usage)
    citations: list[int] = Field(default_factory=list)
    # how the citations were verified: valid | repaired | fallback (LLM answer replaced by the
    # extractive one) | extractive (no LLM) | not-answerable | refused-extractive (the LLM found no
    # answer; the extractive one, marked, replaced it); None for structural answers
    citation_check: str | None = None
    structural: dict[str, Any] | None = None
    method: str = "bookindex"

    @property
    def pages(self) -> list[int]:
        """1-based pages of the evidence, in rank order, without repeats."""
        return list(dict.fromkeys(e.page for e in self.evidence))

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=False)


def build_answer(state: State, plan: Plan, ctx: IndexContext, usage: Usage) -> Answer:
    """The executed plan as an Answer: its text, citations, trace and ranked evidence."""
    tree = ctx.tree
    return Answer(question=plan.question, doc={"doc_id": tree.doc_id, "name": tree.name},
                  query_type=plan.query_type, plan=plan, trace=state.trace, evidence=ranked_evidence(state, ctx),
                  answer=state.answer or NOT_ANSWERABLE, usage=usage, citations=state.citations,
                  citation_check=state.citation_check or None, structural=state.structural)


def ranked_evidence(state: State, ctx: IndexContext) -> list[Evidence]:
    """Evidence in rank order: the skyline ranking (or the filtered nodes for global plans)."""
    tree = ctx.tree
    cap = ctx.settings.retrieval.max_evidence
    ids = [i for i, _ in state.ranked]
    if not ids and state.candidates:
        ids = [i for i in state.candidates if tree.nodes[i].type != "document"]
    # structural COUNT/LIST results keep every item in `structural`; a merged answer citing an
    # item past the cap keeps the evidence up to it, so every citation resolves
    ids = ids[:max([cap, *state.citations])]
    score_of = dict(state.ranked)
    evidence = []
    for rank, nid in enumerate(ids, 1):
        if nid not in tree.nodes:
            continue
        scores = {dim: round(float(v[nid]), 4) for dim, v in state.scores.items() if nid in v}
        if nid in score_of:
            scores["combined"] = round(float(score_of[nid]), 4)
        evidence.append(Evidence.from_node(tree, tree.nodes[nid], scores=scores, rank=rank))
    return evidence
