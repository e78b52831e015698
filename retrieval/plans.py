"""Plans are data: a tree of operator steps that serializes to JSON and back, exactly.

A step names an operator of `operators.OPERATORS` with its parameters, or one of two composites:
`Parallel` (branches that score the same candidates, the "Graph ∥ Text" of eq. 10) and
`ForEach` (its steps run once per sub-question produced by Decompose, eq. 11). A step may carry
a `fallback` run when the step reports it could not act (Select_by_Entity without linked
entities → Select_by_Section, eq. 9).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bookindex.core.atomic import write_text_atomic
from bookindex.core.errors import InputError
from bookindex.core.limits import loads_bounded
from bookindex.operators import OPERATORS
from bookindex.operators.selector import parse_page_range

PLAN_VERSION = 1
COMPOSITES = ("Parallel", "ForEach")
MAX_PLAN_DEPTH = 24  # JSON levels: a real plan (ForEach > Parallel > step > params) uses about 8
MAX_PAGE = 1_000_000
CRITERIA = ("graph", "text")  # the score dimensions Skyline_Ranker can combine
# Sane ranges of numeric operator parameters (inclusive); other ints: 0..1000, floats: 0..1000.
PARAM_RANGES: dict[str, tuple[float, float]] = {
    "alpha": (0.01, 0.99), "min_similarity": (-1.0, 1.0), "min_fuzzy": (0.0, 100.0),
    "max_entities": (1, 100), "links_per_mention": (1, 100), "max_sub_questions": (1, 32),
    "max_results": (1, 1000), "budget_nodes": (1, 1000), "budget_pages": (1, 1000),
    "rerank_top": (1, 1000), "group_size": (1, 1000), "max_groups": (1, 100),
    "max_sections": (1, 1000), "max_evidence": (1, 1000), "depth": (1, 16), "section_level": (1, 16),
    "max_images": (0, 32),
}
DEFAULT_INT = (0, 1000)
DEFAULT_FLOAT = (0.0, 1000.0)
MAX_LIST = 1000  # items in a list parameter (mentions, ids, sub-questions)
MAX_TEXT = 10_000  # characters in a string parameter
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
            e = exc.errors()[0]
            raise InputError(f"{source}: not a valid plan: {_loc(e['loc'])} {e['msg']}") from exc
        if plan.version != PLAN_VERSION:
            raise InputError(f"{source}: plan version {plan.version} is not supported (expected {PLAN_VERSION})")
        validate_steps(plan.steps, source)
        return plan

    @classmethod
    def from_json(cls, text: str, source: str = "plan") -> "Plan":
        data = loads_bounded(text, source, MAX_PLAN_DEPTH)
        if not isinstance(data, dict):
            raise InputError(f"{source}: not a valid plan: expected a JSON object, got {type(data).__name__}")
        return cls.from_dict(data, source)

    @classmethod
    def load(cls, path: str | Path) -> "Plan":
        p = Path(path)
        if not p.is_file():
            raise InputError(f"{p}: plan file not found" if not p.exists() else f"{p}: not a file")
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise InputError(f"{p}: cannot read ({e.strerror})") from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise InputError(f"{p}: not a UTF-8 plan file ({e.reason} at byte {e.start})") from None
        return cls.from_json(text, str(p))

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
                raise InputError(f"{source}: {s.op} parameter {_loc(e['loc'])}: {e['msg']}") from exc
            check_params(s.op, s.params, source)
        if s.fallback is not None:
            validate_steps([s.fallback], source)


def check_params(op: str, params: dict[str, Any], source: str) -> None:
    """Every value within sane bounds: finite numbers in PARAM_RANGES, bounded lists
    and strings, readable and ordered page ranges, known ranking criteria."""
    for key, value in params.items():
        _check_value(op, key, value, source)
    if op == "Filter_Range" and params.get("range_type", "page") == "page":
        value = str(params.get("value", "1"))
        try:
            first, last = parse_page_range(value, MAX_PAGE)
        except ValueError:
            raise InputError(f"{source}: Filter_Range value {value[:40]!r} is not a page range; "
                             "use e.g. '3-10', '5', 'first 10' or 'last 3'") from None
        a, b = _range_ends(value)
        if a is not None and b is not None and b < a:
            raise InputError(f"{source}: Filter_Range value {value!r} is reversed; write {b}-{a}")
        if first < 0 or last >= MAX_PAGE or last < first:
            raise InputError(f"{source}: Filter_Range value {value!r}: pages run from 1 to {MAX_PAGE:,}")
    if op == "Filter_Range" and params.get("range_type") == "section" and not str(params.get("value", "")).strip():
        raise InputError(f"{source}: Filter_Range value: name a section (title or number)")
    if op == "Skyline_Ranker":
        unknown = [c for c in list(params.get("criteria") or []) + list(params.get("weights") or {})
                   if c not in CRITERIA]
        if unknown:
            raise InputError(f"{source}: Skyline_Ranker criterion {unknown[0]!r} is unknown; "
                             f"known: {', '.join(CRITERIA)}")
        if "criteria" in params and not params["criteria"]:
            raise InputError(f"{source}: Skyline_Ranker criteria: name at least one of {', '.join(CRITERIA)}")


def _check_value(op: str, key: str, value: Any, source: str) -> None:
    where = f"{source}: {op} parameter {key}"
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"{where} is {value}; give a finite number")
        lo, hi = PARAM_RANGES.get(key, DEFAULT_INT if isinstance(value, int) else DEFAULT_FLOAT)
        if not lo <= value <= hi:
            raise InputError(f"{where} = {value:g} is out of range [{lo:g}, {hi:g}]")
        return
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise InputError(f"{where} is {len(value):,} characters long (at most {MAX_TEXT:,})")
        return
    if isinstance(value, (list, dict)):
        if len(value) > MAX_LIST:
            raise InputError(f"{where} has {len(value):,} items (at most {MAX_LIST:,})")
        items = value.values() if isinstance(value, dict) else value
        for item in items:
            if isinstance(item, (list, dict)):
                raise InputError(f"{where} must hold plain values, not nested lists or objects")
            _check_value(op, key, item, source)


def _range_ends(value: str) -> tuple[int | None, int | None]:
    """The two numbers of an 'a-b' page range as written (None for other forms)."""
    parts = value.replace("–", "-").lower().replace("pages", "").replace("page", "")
    for sep in ("-", " to ", " through "):
        if sep in parts:
            a, _, b = parts.partition(sep)
            if a.strip().isdigit() and b.strip().isdigit():
                return int(a), int(b)
    return None, None


def _loc(loc: Any) -> str:
    """A pydantic error location, shortened to one readable piece."""
    text = ".".join(map(str, loc))
    return text if len(text) <= 80 else "..." + text[-77:]
