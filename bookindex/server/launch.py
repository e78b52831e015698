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
from bookindex.core.errors import ConfigError
from bookindex.server.auth import Keys, check_bind
from bookindex.server.validate import LIBRARY_NAME

APP_FACTORY = "bookindex.server.app:pending_app"
PENDING_ENV = "BOOKINDEX_SERVE_PENDING"  # what a worker process of `serve --workers N` serves
WORKER_HEALTHCHECK_S = 120  # uvicorn restarts a worker that does not answer its ping in this time


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Pending:
    """What `serve` hands the app factory in this process: the libraries by name, and `home`,
    the folder of libraries (`serve ROOT`) where new ones are created, or None."""

    libraries: dict[str, Path]
    settings: Settings
    keys: Keys
    host: str
    port: int
    say: Callable[[str], None] = _stderr
    home: Path | None = None


_pending: list[Pending] = []


def pending() -> Pending:
    if not _pending:
        raw = os.environ.get(PENDING_ENV)
        if not raw:
            raise RuntimeError(f"{APP_FACTORY} is started by `bookindex serve`, not on its own")
        d = json.loads(raw)
        settings = Settings.model_validate(d["settings"])
        _pending.append(Pending({k: Path(v) for k, v in d["libraries"].items()}, settings, Keys.from_env(settings),
                                d["host"], int(d["port"]), home=Path(d["home"]) if d.get("home") else None))
    return _pending[-1]


def libraries_under(home: Path) -> list[str]:
    """The names of the library folders directly under `home` (a folder with a catalog)."""
    if not home.is_dir():
        return []
    return sorted(p.name for p in home.iterdir()
                  if p.is_dir() and LIBRARY_NAME.fullmatch(p.name) and (p / "library.json").is_file())


def plan_libraries(target: Path, named: dict[str, Path], folder_of_libraries: bool = False
                   ) -> tuple[dict[str, Path], Path | None]:
    """What `serve TARGET [--library NAME=PATH ...]` serves: TARGET itself when it is a library
    (or a new folder), else every library folder directly under it, with TARGET as the home new
    libraries are created in (always with `folder_of_libraries`); plus the named ones."""
    target = Path(target).expanduser().resolve()
    is_library = (target / "library.json").is_file()
    under = libraries_under(target) if target.is_dir() and not is_library else []
    libraries: dict[str, Path] = {}
    home: Path | None = None
    if folder_of_libraries or under:
        if is_library:
            raise ConfigError(f"{target.name}: a library, not a folder of libraries; serve it without --libraries")
        home = target
        libraries = {name: target / name for name in under}
    else:
        libraries = {target.name or "library": target}
    for name, path in named.items():
        if name in libraries:
            raise ConfigError(f"--library {name}=...: a library named {name!r} is served already")
        libraries[name] = Path(path).expanduser().resolve()
    return libraries, home


def serve(target: Path, settings: Settings, host: str = "127.0.0.1", port: int = 8000,
          say: Callable[[str], None] = _stderr, workers: int = 1, named: dict[str, Path] | None = None,
          folder_of_libraries: bool = False) -> None:
    """Serve the libraries `plan_libraries` finds until interrupted (uvicorn handles SIGINT and
    SIGTERM), in `workers` processes."""
    import uvicorn  # deferred: only `serve` needs the ASGI server

    keys = Keys.from_env(settings)
    say(check_bind(host, keys, settings))
    libraries, home = plan_libraries(target, named or {}, folder_of_libraries)
    if workers > 1:
        os.environ[PENDING_ENV] = json.dumps({"libraries": {k: str(v) for k, v in libraries.items()},
                                              "home": str(home) if home else None, "host": host, "port": port,
                                              "settings": settings.model_dump(mode="json")})
        say(f"{workers} server processes answer questions; one of them runs each library's index jobs")
    else:
        _pending.append(Pending(libraries, settings, keys, host, port, say, home))
    uvicorn.run(APP_FACTORY, factory=True, host=host, port=port, log_level="info", access_log=False,
                workers=workers if workers > 1 else None,
                # a worker still loading its models on a busy machine is not a dead one
                timeout_worker_healthcheck=WORKER_HEALTHCHECK_S)
