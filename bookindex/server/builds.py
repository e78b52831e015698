"""Index builds in a child process, so a build does not slow the questions the server answers.

A build is CPU-bound Python (parsing, tokenising) plus ONNX threads; run in a thread of the
server it held the GIL and the cores long enough to cut question throughput by 3-30x
(docs/benchmarks.md, "Serving"). Here each build is a spawned process at nice BUILD_NICE that
runs one `Engine.index` and streams its events back over a pipe; it exits by itself when the
server dies (kill -9 included), so a restarted server's resumed build never races an orphan.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bookindex.core.config import Settings
from bookindex.core.errors import BookIndexError
from bookindex.core.events import Events
from bookindex.engine import Engine, IndexReport

BUILD_NICE = 10  # the build process's niceness: questions first when the CPU is short
STOP_GRACE_S = 5.0  # a build process not stopping this long after a cancel is killed


class JobCancelled(Exception):
    """Raised from an index event callback to stop a build (the library discards it)."""


class JobTimedOut(BookIndexError):
    """A build ran past `server.job_timeout_s` and was stopped (the library discards it)."""

    def __init__(self, name: str, limit_s: float) -> None:
        super().__init__(f"{name}: indexing ran longer than {limit_s:g} s (server.job_timeout_s) and was "
                         "stopped; the library is unchanged")


def build_in_process(engine: Engine, name: str, path: Path, options: dict[str, Any], on_event: Events,
                     cancelled: Callable[[], bool], *, replaces: tuple[str, ...] = (),
                     timeout_s: float | None = None) -> IndexReport:
    """Index `path` into the Engine's library in a child process; relay its events to
    `on_event` (whose JobCancelled is ignored: `cancelled()` is the signal); on a cancel, or
    `timeout_s` after the start, tell the child, and kill it if it lingers; raise JobCancelled,
    JobTimedOut or BookIndexError as it ended. `replaces`: see `Engine.index`."""
    ctx = multiprocessing.get_context("spawn")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=build_in_child, name=f"bookindex-build-{name[:20]}", daemon=True,
                       args=(str(engine.root), engine.settings, str(path), options, there, replaces))
    proc.start()
    there.close()
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    cancelled_at: float | None = None
    timed_out = False
    ended = f"{name}: the build process ended without a result"

    def stopped() -> Exception:
        return JobTimedOut(name, timeout_s or 0.0) if timed_out else JobCancelled(name)

    try:
        while True:
            if cancelled_at is None and deadline is not None and time.monotonic() > deadline:
                timed_out = True
            if cancelled_at is None and (timed_out or cancelled()):
                cancelled_at = time.monotonic()
                with contextlib.suppress(OSError):
                    here.send("cancel")
            if cancelled_at is not None and time.monotonic() - cancelled_at > STOP_GRACE_S:
                raise stopped()
            if not here.poll(0.2):
                if not proc.is_alive() and not here.poll():
                    raise BookIndexError(f"{ended} (exit code {proc.exitcode})")
                continue
            try:
                msg = here.recv()
            except EOFError:
                raise BookIndexError(f"{ended} (exit code {proc.exitcode})") from None
            if msg[0] == "event":
                with contextlib.suppress(JobCancelled):  # seen through cancelled() on the next turn
                    on_event(msg[1], msg[2])
            elif msg[0] == "done":
                return IndexReport.model_validate(msg[1])
            elif msg[0] == "cancelled":
                raise stopped()
            else:
                raise BookIndexError(str(msg[1]))
    finally:
        proc.join(STOP_GRACE_S)
        if proc.is_alive():
            proc.kill()
            proc.join(STOP_GRACE_S)
        here.close()


def _watch_parent(parent: int) -> None:
    """In a build process: exit when the server that started it is gone. The uncommitted build
    folder stays under LIB/.tmp, which the library sweeps."""
    while True:
        if os.getppid() != parent:
            os._exit(3)
        time.sleep(0.5)


def build_in_child(library: str, settings: Settings, path: str, options: dict[str, Any], conn: Any,
                   replaces: tuple[str, ...] = ()) -> None:
    """The build process: niced, watched, one `Engine.index`, events and the outcome sent to
    the server as ("event", name, info), ("done", report), ("cancelled",) or ("error", message)."""
    with contextlib.suppress(OSError):
        os.nice(BUILD_NICE)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()

    def on_event(event: str, info: dict[str, Any]) -> None:
        conn.send(("event", event, json.loads(json.dumps(info, default=str))))
        if conn.poll() and conn.recv() == "cancel":
            raise JobCancelled(path)

    try:
        report = Engine(library, settings).index(path, on_event=on_event, replaces=replaces, **options)
        conn.send(("done", report.model_dump(mode="json")))
    except JobCancelled:
        conn.send(("cancelled",))
    except BookIndexError as e:
        conn.send(("error", " ".join(str(e).split())))
    except Exception as e:  # anything else a parser or model raises: its type and message
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()
