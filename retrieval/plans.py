"""Plans are data: a tree of operator steps that serializes to JSON and back, exactly.

A step names an operator of `operators.OPERATORS` with its parameters, or one of two composites:
`Parallel` (branches that score the same candidates, the "Graph ∥ Text" of eq. 10) and
`ForEach` (its steps run once per sub-question produced by Decompose, eq. 11). A step may carry
a `fallback` run when the step reports it could not act (Select_by_Entity without linked
entities → Select_by_Section, eq. 9).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bookindex.core.atomic import write_text_atomic
from bookindex.core.errors import InputError
from operators import OPERATORS

PLAN_VERSION = 1
COMPOSITES = ("Parallel", "ForEach")
QueryType = Literal["single-hop", "multi-hop", "global"]


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    op: str
    params: dict[str, Any] = Field(default_factory=dict)
    steps: list["Step"] | None = None
    fallback: "Step | None" = None

    def ops(self) -> list[str]:
        """Operator names in this step, depth first (fallbacks in brackets)."""
        out = [self.op]
        for s in self.steps or []:
            out += s.ops()
        if self.fallback is not None:
            out += [f"[{x}]" for x in self.fallback.ops()]
        return out


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = PLAN_VERSION
    question: str
    query_type: QueryType
    steps: list[Step]
    planner: dict[str, Any] = Field(default_factory=dict)  # how it was classified, fallbacks taken

    def shape(self) -> list[str]:
        return [x for s in self.steps for x in s.ops()]

    def operation(self) -> str:
        """The operation of the plan's final Reduce (ANSWER, COUNT, LIST, ...), "" without one.
        The executor puts it on the state before the first step, so the steps before the Reduce
        (Map) know what the answer will be made of."""
        for s in reversed(self.steps):
            if s.op == "Reduce":
                return str(getattr(OPERATORS["Reduce"].Params(**s.params), "operation", ""))
        return ""

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "plan") -> "Plan":
        try:
            plan = cls.model_validate(data)
        except ValidationError as exc:
            raise InputError(f"{source}: not a valid plan: {exc.errors()[0]['loc']} {exc.errors()[0]['msg']}") from exc
        if plan.version != PLAN_VERSION:
            raise InputError(f"{source}: plan version {plan.version} is not supported (expected {PLAN_VERSION})")
        validate_steps(plan.steps, source)
        return plan

    @classmethod
    def from_json(cls, text: str, source: str = "plan") -> "Plan":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source}: not JSON ({exc})") from exc
        return cls.from_dict(data, source)

    @classmethod
    def load(cls, path: str | Path) -> "Plan":
        p = Path(path)
        if not p.is_file():
            raise InputError(f"{p}: plan file not found")
        return cls.from_json(p.read_text(encoding="utf-8"), str(p))

    def save(self, path: str | Path) -> None:
        """Write the plan as JSON, atomically: an edited plan is never left half-written."""
        write_text_atomic(path, self.to_json() + "\n")


def validate_steps(steps: list[Step], source: str) -> None:
    """Every operator exists and its params validate, so an edited plan fails before it runs."""
    for s in steps:
        if s.op in COMPOSITES:
            if not s.steps:
                raise InputError(f"{source}: {s.op} step needs a non-empty 'steps' list")
            validate_steps(s.steps, source)
        elif s.op not in OPERATORS:
            raise InputError(f"{source}: unknown operator {s.op!r}; known: {', '.join(OPERATORS)}")
        else:
            try:
                OPERATORS[s.op].Params(**s.params)
            except ValidationError as exc:
                e = exc.errors()[0]
                raise InputError(f"{source}: {s.op} parameter {'.'.join(map(str, e['loc']))}: {e['msg']}") from exc
        if s.fallback is not None:
            validate_steps([s.fallback], source)
