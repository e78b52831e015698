"""Launch of `bookindex serve`: check the bind against the keys, then run uvicorn on the app
factory `bookindex.server.app:pending_app`, which builds the app from what `serve` left here and
says which jobs a previous run left unfinished.

The app is named by import string, the way uvicorn loads apps, so importing this module (the
CLI does, for every command) does not import FastAPI. With `workers > 1` uvicorn starts that many
processes, each importing the factory afresh: what `serve` leaves here then travels to them in
the environment variable `PENDING_ENV` (library, settings, bind), and each process builds its
own Engine. They share the listening socket, so questions are answered on every core; one of
them runs the index jobs (`job_runner_role`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bookindex.core.config import Settings
from bookindex.server.auth import Keys, check_bind

APP_FACTORY = "bookindex.server.app:pending_app"
PENDING_ENV = "BOOKINDEX_SERVE_PENDING"  # what a worker process of `serve --workers N` serves
WORKER_HEALTHCHECK_S = 120  # uvicorn restarts a worker that does not answer its ping in this time


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
        raw = os.environ.get(PENDING_ENV)
        if not raw:
            raise RuntimeError(f"{APP_FACTORY} is started by `bookindex serve`, not on its own")
        d = json.loads(raw)
        settings = Settings.model_validate(d["settings"])
        _pending.append(Pending(Path(d["library"]), settings, Keys.from_env(settings), d["host"], int(d["port"])))
    return _pending[-1]


def serve(library: Path, settings: Settings, host: str = "127.0.0.1", port: int = 8000,
          say: Callable[[str], None] = _stderr, workers: int = 1) -> None:
    """Serve `library` until interrupted (uvicorn handles SIGINT/SIGTERM), in `workers` processes."""
    import uvicorn  # deferred: only `serve` needs the ASGI server

    keys = Keys.from_env(settings)
    say(check_bind(host, keys, settings))
    if workers > 1:
        os.environ[PENDING_ENV] = json.dumps({"library": str(Path(library).resolve()), "host": host, "port": port,
                                              "settings": settings.model_dump(mode="json")})
        say(f"{workers} server processes answer questions; one of them runs the index jobs")
    else:
        _pending.append(Pending(Path(library), settings, keys, host, port, say))
    uvicorn.run(APP_FACTORY, factory=True, host=host, port=port, log_level="info", access_log=False,
                workers=workers if workers > 1 else None,
                # a worker still loading its models on a busy machine is not a dead one
                timeout_worker_healthcheck=WORKER_HEALTHCHECK_S)
