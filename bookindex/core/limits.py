"""Bounds on what a user's file may make Python do: JSON depth.

Why: `json.loads` and everything that walks its result (pydantic, our readers) recurse once per
nesting level, so 100,000 `[` in an input or a plan was a RecursionError traceback, and a
batch of files died with it. Every JSON a user hands us is read through `loads_bounded`, which
turns too-deep input into an InputError naming the file, before any recursive walk.
"""

from __future__ import annotations

import json
from typing import Any

from bookindex.core.errors import InputError

MAX_JSON_DEPTH = 64  # MinerU's deepest real outputs nest about 10 levels; plans about 12


def json_depth(data: Any) -> int:
    """Nesting depth of decoded JSON, computed without recursion (a scalar is depth 0)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def loads_bounded(text: str, source: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads`, but input nested deeper than `max_depth` is an InputError naming `source`.
    Syntax errors name the line and column."""
    too_deep = f"{source}: JSON nested deeper than {max_depth} levels; refusing to read it"
    try:
        data = json.loads(text)
    except RecursionError:
        raise InputError(too_deep) from None
    except json.JSONDecodeError as e:
        raise InputError(f"{source}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    if json_depth(data) > max_depth:
        raise InputError(too_deep)
    return data
