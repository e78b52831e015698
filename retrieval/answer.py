"""The answer object every interface returns: question, plan, trace, ranked evidence, answer, usage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bookindex.model import Evidence
from operators.base import State
from operators.context import IndexContext
from operators.synthesizer import NOT_ANSWERABLE
from retrieval.plans import Plan

__all__ = ["Answer", "build_answer", "NOT_ANSWERABLE"]


@dataclass
class Answer:
    question: str
    doc: dict[str, Any]
    query_type: str
    plan: Plan | None
    trace: list[dict[str, Any]]
    evidence: list[Evidence]
    answer: str
    usage: dict[str, Any] = field(default_factory=dict)
    citations: list[int] = field(default_factory=list)
    structural: dict[str, Any] | None = None
    method: str = "bookindex"

    @property
    def pages(self) -> list[int]:
        """1-based pages of the evidence, in rank order, without repeats."""
        return list(dict.fromkeys(e.page for e in self.evidence))

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "doc": self.doc,
            "method": self.method,
            "query_type": self.query_type,
            "plan": self.plan.to_dict() if self.plan is not None else None,
            "trace": self.trace,
            "evidence": [e.to_dict() for e in self.evidence],
            "answer": self.answer,
            "citations": self.citations,
            "structural": self.structural,
            "usage": self.usage,
        }


def build_answer(state: State, plan: Plan, ctx: IndexContext, usage: dict[str, Any]) -> Answer:
    """Evidence in rank order: the skyline ranking (or the filtered nodes for global plans)."""
    tree = ctx.tree
    cap = int(ctx.retrieval_setting("max_evidence", 10))
    ids = [i for i, _ in state.ranked]
    if not ids and state.candidates:
        ids = [i for i in state.candidates if tree.nodes[i].type != "document"]
    ids = ids[:cap]  # structural COUNT/LIST results keep every item in `structural`
    score_of = dict(state.ranked)
    evidence = []
    for rank, nid in enumerate(ids, 1):
        if nid not in tree.nodes:
            continue
        scores = {dim: round(float(v[nid]), 4) for dim, v in state.scores.items() if nid in v}
        if nid in score_of:
            scores["combined"] = round(float(score_of[nid]), 4)
        evidence.append(Evidence.from_node(tree, tree.nodes[nid], scores=scores, rank=rank))
    return Answer(question=plan.question, doc={"doc_id": tree.doc_id, "name": tree.name},
                  query_type=plan.query_type, plan=plan, trace=state.trace, evidence=evidence,
                  answer=state.answer or NOT_ANSWERABLE, usage=usage, citations=state.citations,
                  structural=state.structural)
