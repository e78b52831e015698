"""Server-sent events for `POST /ask` with `Accept: text/event-stream`.

Events, in order: `plan` (the operator plan, sent as soon as it is made, before retrieval),
`evidence` (the ranked evidence), `token` (the answer text), `usage`, then `done` (the whole
Answer). The Engine produces an answer in one piece (it has no token streaming: the LLM client
returns whole, schema-validated completions, and an answer is checked for its citations before
it is shown), so the answer text is streamed in word chunks once it is ready; a client renders
the same way either way. An Engine error becomes one `error` event with a problem document.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

from bookindex.core.errors import BookIndexError
from bookindex.engine import AskRequest, Engine
from bookindex.server.problem import status_of

CHUNK_WORDS = 4


def event(name: str, data: Any) -> str:
    """One SSE frame; JSON data on one line."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def chunks(text: str, words: int = CHUNK_WORDS) -> Iterator[str]:
    """The text in pieces of a few words, whitespace kept, so the pieces join back exactly."""
    parts = re.findall(r"\S+\s*|\s+", text)
    for i in range(0, len(parts), words):
        yield "".join(parts[i:i + words])


def ask_events(engine: Engine, req: AskRequest) -> Iterator[str]:
    """The SSE frames of one question (a sync generator: Starlette runs it in a thread)."""
    t0 = time.perf_counter()
    try:
        if req.method == "bookindex" and req.k is None:
            plan = engine.plan(req.question, doc=req.doc)
            yield event("plan", plan.model_dump(mode="json"))
            answer = engine.run_plan(plan, doc=req.doc)
        else:
            answer = engine.ask(req)
            yield event("plan", answer.plan.model_dump(mode="json") if answer.plan else None)
        yield event("evidence", [e.model_dump(mode="json") for e in answer.evidence])
        for piece in chunks(answer.answer):
            yield event("token", piece)
        usage = answer.usage.model_dump(mode="json")
        usage["total_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        yield event("usage", usage)
        yield event("done", answer.model_dump(mode="json"))
    except BookIndexError as e:
        yield event("error", {"type": "about:blank", "status": status_of(e), "title": "error",
                              "detail": " ".join(str(e).split())})
