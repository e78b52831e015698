"""Retrieval layer: planning, execution and answers over one indexed document (BookRAG §5).

`ask(ctx, question, method="bookindex") -> Answer`, `plan(ctx, question) -> Plan`,
`run_plan(ctx, plan) -> Answer`, where `ctx` is an opened document's `operators.IndexContext`.
"""

from bookindex.retrieval.answer import Answer
from bookindex.retrieval.api import METHODS, ask, plan, run_plan, search
from bookindex.retrieval.baselines import evidence_text
from bookindex.retrieval.plans import Plan, Step

__all__ = ["Answer", "METHODS", "Plan", "Step", "ask", "evidence_text", "plan", "run_plan", "search"]
