"""Operator plumbing: the retrieval state, the trace record, and the `Operator` base class.

Every operator of BookRAG's library (Table 3) is a small class with pydantic `Params` and a
`run(state) -> state`. The base class times the call, counts LLM calls and tokens from the
client's ledger, and records what went in and what came out, so `--explain` can show why each
node was kept.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar, cast

import numpy as np
from pydantic import BaseModel, ConfigDict

from bookindex.operators.context import IndexContext
from bookindex.providers.llm.ledger import counters_delta


@dataclass
class LinkedEntity:
    """A query entity and the graph entities it was linked to (name, alias or embedding match)."""

    mention: str
    entity_ids: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    how: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"mention": self.mention, "entity_ids": self.entity_ids,
                "scores": [round(s, 4) for s in self.scores], "how": self.how}


@dataclass
class State:
    """What flows between operators.

    `candidates` is the current node set N_s (None = the whole document, nothing selected yet);
    `scores` holds one score dimension per reasoner ("graph" = S_G, "text" = S_T); `ranked` is
    the ordered retrieval set N_R with its combined score. `partials` collects Map outputs and
    `answer`/`structural` the Reduce result.
    """

    question: str
    query_type: str = "single-hop"
    entities: list[LinkedEntity] = field(default_factory=list)
    sub_questions: list[str] = field(default_factory=list)
    synthesis: str = ""
    candidates: list[str] | None = None
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    ranked: list[tuple[str, float]] = field(default_factory=list)
    operation: str = ""
    partials: list[dict[str, Any]] = field(default_factory=list)
    answer: str = ""
    citations: list[int] = field(default_factory=list)
    citation_check: str = ""  # how the answer's citations were verified (operators.grounding)
    structural: dict[str, Any] | None = None
    sub_results: list[dict[str, Any]] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # streaming: Reduce reports ("evidence", ids) before it asks the model, then the
    # answer's ("token", text) / ("reset", why) events; None when nobody listens
    on_event: Callable[[str, Any], None] | None = None

    def emit(self, kind: str, data: Any) -> None:
        if self.on_event is not None:
            self.on_event(kind, data)

    @property
    def entity_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for le in self.entities:
            for e in le.entity_ids:
                seen.setdefault(e, None)
        return list(seen)

    def fork(self, question: str) -> "State":
        """A fresh state for a sub-question (multi-hop plans run the single-hop plan per part)."""
        return State(question=question, query_type="single-hop")


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


TRACE_COUNTERS = ("calls", "prompt_tokens", "completion_tokens")  # an operator's LLM use in its trace record


def top_items(scores: dict[str, float] | list[tuple[str, float]], n: int = 10) -> list[list[Any]]:
    """The `n` best (id, score) pairs, best first, ties by id (for traces: a partial sort)."""
    items = scores.items() if isinstance(scores, dict) else scores
    if len(items) > 4 * n > 0:  # only items scoring at least the n-th best value can be among the n
        if isinstance(scores, dict):
            keys, values = list(scores), list(scores.values())
        else:
            keys, values = [k for k, _ in scores], [v for _, v in scores]
        vals = np.fromiter(values, dtype=np.float64, count=len(values))
        nth = np.partition(vals, len(vals) - n)[len(vals) - n]
        items = [(keys[k], values[k]) for k in np.flatnonzero(vals >= nth)]
    return [[k, round(float(v), 4)] for k, v in heapq.nsmallest(n, items, key=lambda kv: (-kv[1], kv[0]))]


P = TypeVar("P", bound=Params)
BaseParams = Params  # the base model, for annotations inside Operator (where `Params` is the ClassVar)


class Operator(Generic[P]):
    """Base class. Subclasses set `name`, `kind`, `Params` (their parameter model, also the type
    argument: `class Extract(Operator[ExtractParams])`) and implement `apply`."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = ""  # formulator | selector | reasoner | synthesizer
    Params: ClassVar[type[Params]] = Params
    params: P

    def __init__(self, ctx: IndexContext, params: dict[str, Any] | BaseParams | None = None) -> None:
        self.ctx = ctx
        model = params if isinstance(params, self.Params) else self.Params(**(
            params.model_dump() if isinstance(params, BaseParams) else (params or {})))
        self.params = cast(P, model)
        self.record: dict[str, Any] = {}

    def apply(self, state: State) -> State:  # pragma: no cover - abstract
        raise NotImplementedError

    def note(self, **kv: Any) -> None:
        """Add details to this operator's trace record (why nodes were kept, fallbacks taken)."""
        self.record.update(kv)

    def run(self, state: State) -> State:
        llm = self.ctx.llm
        before = llm.ledger.snapshot()["total"] if llm is not None else None
        n_in = None if state.candidates is None else len(state.candidates)
        t0 = time.perf_counter()
        self.record = {}
        state = self.apply(state)
        ms = (time.perf_counter() - t0) * 1000
        rec: dict[str, Any] = {"op": self.name, "kind": self.kind,
                               "params": self.params.model_dump(mode="json"),
                               "inputs": {"question": state.question,
                                          "candidates": "all" if n_in is None else n_in},
                               "ms": round(ms, 2)}
        if llm is not None and before is not None:
            spent = counters_delta(before, llm.ledger.snapshot()["total"], TRACE_COUNTERS)
            rec["llm"] = {k: int(v) for k, v in spent.items()}
        rec.update(self.record)
        state.trace.append(rec)
        return state

    @staticmethod
    def llm_failed(exc: Exception) -> str:
        return f"LLM failed ({type(exc).__name__}: {str(exc)[:160]}); used the no-LLM path"
