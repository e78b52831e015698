"""Retrieval layer: planning, execution and answers over one indexed document (BookRAG §5).

`ask(doc, question, settings, llm=None, method="bookindex") -> Answer`, `plan(doc, question, ...)
-> Plan`, `run_plan(doc, plan, ...) -> Answer`.
"""

from retrieval.answer import Answer
from retrieval.api import METHODS, ask, context_for, plan, run_plan
from retrieval.plans import Plan, Step

__all__ = ["Answer", "METHODS", "Plan", "Step", "ask", "context_for", "plan", "run_plan"]
