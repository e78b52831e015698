"""Getting one JSON value out of a model's reply: find it in prose, repair what the model broke.

Two layers, because neither alone handles what models write (docs/benchmarks.md, "JSON repair":
of the 49 replies in tests/json_cases.py the earlier scanner alone parsed 29 to the intended
value, json-repair alone 38, the two together 49):
- a scanner that finds the value: inside ```json fences, after prose that may itself hold braces
  ("use {placeholders}"), the first of two values, and output cut off at max_tokens (open strings
  and containers are closed; a record left incomplete inside a list is dropped, so what remains
  still validates against the caller's schema);
- the maintained json-repair library for syntax strict JSON rejects: trailing commas, single or
  curly quotes, Python True/None, comments, raw newlines in strings, unquoted keys, missing commas.
"""

from __future__ import annotations

import json
import re
from typing import Any

import json_repair

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)(?:```|$)", re.S)
_CLOSER = {"{": "}", "[": "]"}
_TYPE = {"{": dict, "[": list}
MAX_STARTS = 20


class NoJSON(ValueError):
    """The reply holds no recognisable JSON value."""


class _Unbalanced(ValueError):
    """A closing bracket with no matching opener: the start was prose, not JSON."""


def extract_json(text: str) -> Any:
    """Parse the first JSON object/array in `text` (NoJSON when there is none).

    First pass: strict JSON at each "{"/"[" in order (fenced blocks first), with truncated output
    repaired; a start inside a segment strict JSON rejected is skipped (`{"a": [1], // x}` means
    the object, not `[1]`). Second pass, only when that finds nothing: json-repair on the rejected
    segments, longest first (prose brackets are short), keeping a result of the segment's own
    type. Last, the skipped inner starts.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    segments: list[tuple[str, str]] = []  # (segment, opening bracket) for the second pass
    inner: list[tuple[str, int]] = []  # starts inside a rejected segment: its parts, tried last
    for candidate in candidates:
        starts = [i for i, ch in enumerate(candidate) if ch in "{["][:MAX_STARTS]
        skip_until = -1
        for start in starts:  # prose may hold stray braces before the real value
            if start < skip_until:
                inner.append((candidate, start))
                continue
            try:
                return _parse_from(candidate, start)
            except _Unbalanced:
                continue
            except _Invalid as bad:
                segments.append((bad.segment, candidate[start]))
                skip_until = start + len(bad.segment)
    for segment, opener in sorted(segments, key=lambda s: -len(s[0])):
        try:
            value = json_repair.loads(segment, skip_json_loads=True)
        except (ValueError, RecursionError):  # a segment it cannot repair either: try the next
            continue
        if isinstance(value, _TYPE[opener]) and (value or _is_empty(segment)):
            return value
    for candidate, start in inner:
        try:
            return _parse_from(candidate, start)
        except ValueError:
            continue
    raise NoJSON("no JSON object found in the reply" + ("" if segments else " (no { or [)"))


class _Invalid(ValueError):
    """A value strict JSON rejects; `segment` is its text (to the closing bracket or the end)."""

    def __init__(self, segment: str) -> None:
        super().__init__("invalid JSON")
        self.segment = segment


def _is_empty(segment: str) -> bool:
    return re.fullmatch(r"\s*(\{\s*\}|\[\s*\])\s*", segment) is not None


def _parse_from(text: str, start: int) -> Any:
    """Scan from `start`; return the complete value, or the best repair of a truncated one."""
    stack: list[str] = []
    at: list[int] = []  # offset of each open bracket on the stack
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
            at.append(i)
            opens.append((i + 1, list(stack)))
        elif ch in "}]":
            if not stack or _CLOSER[stack[-1]] != ch:
                raise _Unbalanced(f"unbalanced '{ch}' at offset {i}")
            stack.pop()
            at.pop()
            if not stack:
                try:
                    return json.loads(text[start:i + 1])
                except json.JSONDecodeError:
                    raise _Invalid(text[start:i + 1]) from None
        elif ch == ",":
            cuts.append((i, list(stack)))
    # Truncated: try closing at the end, then at successively earlier cut points.
    tail = text[start:]
    attempts = []
    if in_string:
        attempts.append((tail[:-1] if escaped else tail) + '"' + _closers(stack))
    attempts.append(tail.rstrip().rstrip(",:") + _closers(stack))
    attempts.append(tail.rstrip().rstrip(".eE+-") + _closers(stack))
    if len(stack) >= 2 and stack[-1] == "{" and stack[-2] == "[":
        # the innermost open object is a record in a list: drop it whole rather than keep a
        # fragment missing the fields the schema requires
        attempts.append(text[start:at[-1]].rstrip().rstrip(",") + _closers(stack[:-1]))
    for pos, st in reversed(cuts):
        attempts.append(text[start:pos].rstrip().rstrip(",") + _closers(st))
    for pos, st in reversed(opens):
        attempts.append(text[start:pos].rstrip().rstrip(",") + _closers(st))
    for attempt in attempts:
        try:
            return json.loads(attempt)
        except json.JSONDecodeError:
            continue
    raise _Invalid(tail)


def _closers(stack: list[str]) -> str:
    return "".join(_CLOSER[c] for c in reversed(stack))
