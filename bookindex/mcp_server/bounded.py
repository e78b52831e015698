"""Time limits on MCP tool calls that can run long (ask, plan, search: retrieval, LLM calls).

An agent waiting on a tool has no way to stop it; a call stuck behind a slow local model would
hold the agent's turn for minutes. Each bounded call runs in a small pool of its own and the
tool waits at most `server.mcp_tool_timeout_s`, then answers a tool error saying so. Python
threads cannot be killed: the abandoned call finishes in the background (its LLM replies still
land in the cache, so a retry is cheap), and the pool's size caps how many can pile up.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, TypeVar

from bookindex.core.errors import BookIndexError

F = TypeVar("F", bound=Callable[..., Any])
POOL_SIZE = 4  # bounded calls running at once; more wait (and their wait counts towards the limit)


class ToolTimedOut(BookIndexError):
    """A tool call ran past the configured limit."""


class Bounds:
    """One server's pool and limit; `bound(name)` wraps a tool function."""

    def __init__(self, timeout_s: float, pool_size: int = POOL_SIZE) -> None:
        self.timeout_s = timeout_s
        self.pool = ThreadPoolExecutor(max_workers=pool_size, thread_name_prefix="bookindex-mcp-tool")

    def bound(self, name: str) -> Callable[[F], F]:
        def wrap(fn: F) -> F:
            @functools.wraps(fn)
            def call(*args: Any, **kwargs: Any) -> Any:
                future = self.pool.submit(fn, *args, **kwargs)
                try:
                    return future.result(timeout=self.timeout_s)
                except FutureTimeout:
                    future.cancel()  # still queued: never runs
                    raise ToolTimedOut(
                        f"{name} did not finish within {self.timeout_s:g} s (server.mcp_tool_timeout_s); "
                        "name a document with `doc`, ask a narrower question, or raise the limit") from None
            return call  # type: ignore[return-value]
        return wrap
