"""Server-sent events for `POST /ask` with `Accept: text/event-stream`.

Events, in order: `plan` (the operator plan, sent as soon as it is made, before retrieval),
`evidence` (the ranked evidence, before the model reads it), `token` (the answer text as the model
writes it: `Engine.ask_stream`), `usage`, then `done` (the whole Answer, whose `answer` is the
text to keep). A `reset` event (data: why) withdraws the tokens sent so far: the answer broke the
citation rule and a repaired or extractive answer follows. An answer the model did not
write (extractive, structural, a cache hit) comes as one `token`. An Engine error becomes one
`error` event with a problem document.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from bookindex.core.errors import BookIndexError
from bookindex.engine import AskRequest, Engine
from bookindex.server.problem import status_of


def event(name: str, data: Any) -> str:
    """One SSE frame; JSON data on one line."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def ask_events(engine: Engine, req: AskRequest) -> Iterator[str]:
    """The SSE frames of one question (a sync generator: Starlette runs it in a thread)."""
    t0 = time.perf_counter()
    try:
        for ev in engine.ask_stream(req):
            if ev.kind == "plan":
                yield event("plan", ev.data.model_dump(mode="json") if ev.data is not None else None)
            elif ev.kind == "evidence":
                yield event("evidence", [e.model_dump(mode="json") for e in ev.data])
            elif ev.kind in ("token", "reset"):
                yield event(ev.kind, ev.data)
            elif ev.kind == "usage":
                usage = ev.data.model_dump(mode="json")
                usage["total_ms"] = round((time.perf_counter() - t0) * 1000, 2)
                yield event("usage", usage)
            elif ev.kind == "answer":
                yield event("done", ev.data.model_dump(mode="json"))
    except BookIndexError as e:
        yield event("error", {"type": "about:blank", "status": status_of(e), "title": "error",
                              "detail": " ".join(str(e).split())})
