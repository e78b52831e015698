"""Start-up of `bookindex serve`: check the bind against the keys, then run uvicorn on the app
factory `bookindex.server.app:pending_app`, which builds the app from what `serve` left here and
says which jobs a previous run left unfinished.

The app is named by import string, the way uvicorn loads apps, so importing this module (the
CLI does, for every command) does not import FastAPI.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bookindex.core.config import Settings
from bookindex.server.auth import Keys, check_bind

APP_FACTORY = "bookindex.server.app:pending_app"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Pending:
    """What `serve` hands the app factory in this process."""

    library: Path
    settings: Settings
    keys: Keys
    host: str
    port: int
    say: Callable[[str], None] = _stderr


_pending: list[Pending] = []


def pending() -> Pending:
    if not _pending:
        raise RuntimeError(f"{APP_FACTORY} is started by `bookindex serve`, not on its own")
    return _pending[-1]


def serve(library: Path, settings: Settings, host: str = "127.0.0.1", port: int = 8000,
          say: Callable[[str], None] = _stderr) -> None:
    """Serve `library` until interrupted (uvicorn handles SIGINT/SIGTERM)."""
    import uvicorn  # deferred: only `serve` needs the ASGI server

    keys = Keys.from_env(settings)
    say(check_bind(host, keys, settings))
    _pending.append(Pending(Path(library), settings, keys, host, port, say))
    uvicorn.run(APP_FACTORY, factory=True, host=host, port=port, log_level="info", access_log=False)
