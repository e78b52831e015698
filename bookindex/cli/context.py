"""State shared by all CLI commands: global flags and the settings they produce (loaded lazily)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookindex.core.config import Settings, load_settings
from bookindex.engine import Engine
from bookindex.storage import s3


@dataclass
class CLIState:
    """Set by the app callback as `ctx.obj`; `state.settings` applies --config, --set, --no-cache."""

    config_path: Path | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    override_sources: dict[str, str] = field(default_factory=dict)
    _settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config_path, self.overrides,
                                           override_sources=self.override_sources)
        return self._settings


_current: CLIState | None = None  # the running invocation's state (one command per process)


def set_current(state: CLIState | None) -> None:
    global _current
    _current = state


def get_settings(ctx: Any = None) -> Settings:
    """Effective settings for the running command: from `ctx.obj` when a typer.Context is given,
    else from the current invocation, else the plain defaults < file < env chain."""
    obj = getattr(ctx.find_root(), "obj", None) if ctx is not None else None
    if isinstance(obj, CLIState):
        return obj.settings
    if _current is not None:
        return _current.settings
    return load_settings()


def engine_for(index_dir: Path, ctx: Any = None, *, existing: bool = True) -> Engine:
    """The Engine of a library folder with the invocation's settings; with `existing`, a clear
    error when the folder holds no library. An s3://BUCKET/PREFIX library is read through its
    local read-only mirror, brought up to date first (bookindex.storage.s3)."""
    remote = s3.parse(index_dir)
    if remote is not None:
        index_dir = s3.reader_root(remote, get_settings(ctx))
    engine = Engine(index_dir, get_settings(ctx))
    if existing:
        engine.require_library()
    return engine
