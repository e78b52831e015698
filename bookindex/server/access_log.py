"""One access-log line per request, through the `logging` module (logger `ACCESS_LOGGER`):
method, path, status, milliseconds, key id (never the key) and library. Refused requests (401,
413) are logged like any other, since the middleware sits outside the key guard.

The key id is what `KeyGuard` put in the request's state: a short hash of the presented key or
the configured key's name, so a log names who asked without holding a secret.
"""

from __future__ import annotations

import logging
import time
from collections.abc import MutableMapping
from typing import Any

ACCESS_LOGGER = "bookindex.server.access"
log = logging.getLogger(ACCESS_LOGGER)


class AccessLog:
    """ASGI middleware writing `METHOD PATH STATUS MSms key=ID library=NAME` per HTTP request."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets when the app raises before answering

        async def wrapped(msg: MutableMapping[str, Any]) -> None:
            nonlocal status
            if msg["type"] == "http.response.start":
                status = int(msg["status"])
            await send(msg)

        try:
            await self.app(scope, receive, wrapped)
        finally:
            state = scope.get("state") or {}
            ms = (time.perf_counter() - started) * 1000
            log.info("%s %s %d %.0fms key=%s library=%s", scope.get("method", "-"), scope.get("path", "-"),
                     status, ms, state.get("key_id") or "-", state.get("library") or "-")


def configure(level: int = logging.INFO) -> None:
    """Send the server's loggers (access lines, job outcomes) to stderr when nothing else
    handles them (`bookindex serve`; a host application configures logging itself)."""
    logger = logging.getLogger("bookindex.server")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)
