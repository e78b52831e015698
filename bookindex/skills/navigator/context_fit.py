"""Keep the navigator's conversation inside the model's context window.

A small model with 8,192 tokens of context fills it within a few rounds of 2 KB listings and 6 KB
documents, and llama.cpp then refuses the request outright (the navigation ends with nothing).
Old tool results are what the agent needs least: it has already acted on them, and its own
actions, which stay, say what it saw. So they are replaced, oldest first, by a one-line stub that
names the call; the system prompt, the question, the actions and the newest result stay whole
(the newest is cut only when it alone does not fit).
"""

from __future__ import annotations

from typing import Any

# Characters per token assumed when budgeting. BPE tokenizers give about 4 on English prose but
# nearer 2.5 on ids, paths and numbers, which navigation files are full of; 3 leaves headroom.
CHARS_PER_TOKEN = 3
RESULT_PREFIX = "Result of "   # how the JSON action protocol shows a tool's output (a user turn)
CUT_NOTE = "\n[... cut to fit the context window]"


def budget_chars(context_size: int, reserve_tokens: int) -> int:
    """Characters the messages may hold: the window less what the reply, a repair round and the
    client's JSON instruction need (`reserve_tokens`); never below a small floor."""
    return max(2000, (context_size - reserve_tokens) * CHARS_PER_TOKEN)


def _is_result(m: dict[str, Any]) -> bool:
    content = m.get("content")
    return m.get("role") == "tool" or (m.get("role") == "user" and isinstance(content, str)
                                       and content.startswith(RESULT_PREFIX))


def _size(m: dict[str, Any]) -> int:
    return len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or ""))


def _stub(content: str) -> str:
    head = content.split("\n", 1)[0].rstrip(":") if content.startswith(RESULT_PREFIX) else "an earlier tool result"
    return f"{head}: [shown earlier; cut to save context, call it again if you need it]"


def fit(messages: list[dict[str, Any]], max_chars: int) -> int:
    """Trim `messages` in place until they total at most `max_chars`; returns how many tool
    results were cut. Only tool results are touched, oldest first, the newest last."""
    total = sum(_size(m) for m in messages)
    if total <= max_chars:
        return 0
    results = [i for i, m in enumerate(messages) if _is_result(m)]
    trimmed = 0
    for i in results[:-1]:
        if total <= max_chars:
            break
        old = str(messages[i].get("content") or "")
        stub = _stub(old)
        if len(stub) >= len(old):
            continue
        messages[i] = dict(messages[i], content=stub)
        total -= len(old) - len(stub)
        trimmed += 1
    if total > max_chars and results:
        last = results[-1]
        old = str(messages[last].get("content") or "")
        keep = max(200, len(old) - (total - max_chars) - len(CUT_NOTE))
        if keep < len(old):
            messages[last] = dict(messages[last], content=old[:keep] + CUT_NOTE)
            trimmed += 1
    return trimmed
