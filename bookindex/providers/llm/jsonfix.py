"""Getting one JSON value out of a model's reply: strip code fences and prose, repair truncation."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)(?:```|$)", re.S)
_CLOSER = {"{": "}", "[": "]"}
MAX_STARTS = 20


class NoJSON(ValueError):
    """The reply holds no recognisable JSON value."""


def extract_json(text: str) -> Any:
    """Parse the first JSON object/array in `text`.

    Handles ```json fences, prose before or after the value, and output cut off mid-value
    (max_tokens reached): open strings and containers are closed, dangling keys dropped.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    last_error: Exception | None = None
    for candidate in candidates:
        starts = [i for i, ch in enumerate(candidate) if ch in "{["][:MAX_STARTS]
        for start in starts:  # prose may hold stray braces before the real value
            try:
                return _parse_from(candidate, start)
            except ValueError as exc:
                last_error = exc
    raise NoJSON(f"no JSON object found in the reply ({last_error or 'no { or ['})")


def _parse_from(text: str, start: int) -> Any:
    """Scan from `start`; return the complete value, or the best repair of a truncated one."""
    stack: list[str] = []
    in_string = escaped = False
    cuts: list[tuple[int, list[str]]] = []  # (position, stack) before a "," : values complete
    opens: list[tuple[int, list[str]]] = []  # just inside "{"/"[": empty-container fallback
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
            opens.append((i + 1, list(stack)))
        elif ch in "}]":
            if not stack or _CLOSER[stack[-1]] != ch:
                raise ValueError(f"unbalanced '{ch}' at offset {i}")
            stack.pop()
            if not stack:
                return json.loads(text[start:i + 1])
        elif ch == ",":
            cuts.append((i, list(stack)))
    # Truncated: try closing at the end, then at successively earlier cut points.
    tail = text[start:]
    attempts = []
    if in_string:
        attempts.append((tail[:-1] if escaped else tail) + '"' + _closers(stack))
    attempts.append(tail.rstrip().rstrip(",:") + _closers(stack))
    attempts.append(tail.rstrip().rstrip(".eE+-") + _closers(stack))
    for pos, st in reversed(cuts):
        attempts.append(text[start:pos].rstrip().rstrip(",") + _closers(st))
    for pos, st in reversed(opens):
        attempts.append(text[start:pos].rstrip().rstrip(",") + _closers(st))
    for attempt in attempts:
        try:
            return json.loads(attempt)
        except json.JSONDecodeError:
            continue
    raise ValueError("truncated JSON could not be repaired")


def _closers(stack: list[str]) -> str:
    return "".join(_CLOSER[c] for c in reversed(stack))
