"""The library's writer lock: one build, replace or remove at a time, held for the whole build.

Why a whole-build lock: with only the commit locked, two processes indexing the same
file both parsed and embedded it, and a killed build's temp folder could not be told from a live
one. Holding `.lock` (an `fcntl.flock`, released by the kernel when the holder dies, even by
kill -9) for the whole build means the second writer waits and then finds the document current,
and any `.tmp/` folder found by the holder belongs to a dead build.

The holder writes who it is (pid, command, since) into the lock file so a refused writer can say
who holds it; the file is emptied on release. A lock file unlinked by a holder (a failed first
build removes its new library folder) is detected by comparing inodes, and the lock is retaken.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bookindex.core.errors import InputError

LOCK_FILE = ".lock"
POLL_S = 0.1  # how often a waiting writer with a timeout retries


class LibraryBusy(InputError):
    """Another process holds the library's writer lock (and the caller asked not to wait)."""


def command_line() -> str:
    """This process's command line, shortened: what a refused writer is told about the holder."""
    cmd = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv and sys.argv[0] else "python"
    return cmd if len(cmd) <= 120 else cmd[:117] + "..."


def describe(holder: dict[str, Any] | None) -> str:
    """`pid 123 (bookindex index a.pdf -i lib) since 2026-01-01T10:00:00+00:00`, or a plain
    phrase when the holder has not written its record yet."""
    if not holder:
        return "another process"
    return f"pid {holder.get('pid', '?')} ({holder.get('command', '?')}) since {holder.get('since', '?')}"


class WriterLock:
    """An exclusive `flock` on `<library>/.lock`, with the holder's record inside the file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> dict[str, Any] | None:
        """The record the current holder wrote (None when the file is empty or unreadable)."""
        try:
            text = self.path.read_text(encoding="utf-8").strip()
            data = json.loads(text) if text else None
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def acquire(self, command: str, wait: bool = True, timeout: float | None = None,
                on_wait: Callable[[dict[str, Any] | None], None] | None = None) -> None:
        """Take the lock. `wait=False`: raise LibraryBusy at once when it is held; `wait=True`:
        block (at most `timeout` seconds when given), calling `on_wait(holder)` once first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        told = False
        while True:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if not _try_lock(fd):
                    holder = self.holder()
                    if not wait or (deadline is not None and time.monotonic() >= deadline):
                        raise LibraryBusy(f"{self.root}: the library is locked by {describe(holder)}; "
                                          "try again when it finishes" + ("" if wait else " (or wait for it)"))
                    if not told and on_wait is not None:
                        on_wait(holder)
                        told = True
                    if deadline is None:
                        fcntl.flock(fd, fcntl.LOCK_EX)
                    else:
                        while not _try_lock(fd):
                            if time.monotonic() >= deadline:
                                raise LibraryBusy(f"{self.root}: the library is still locked by "
                                                  f"{describe(self.holder())} after {timeout:g} s")
                            time.sleep(POLL_S)
                if not _same_file(fd, self.path):  # the holder removed the file: lock the new one
                    os.close(fd)
                    continue
            except BaseException:
                os.close(fd)
                raise
            record = {"pid": os.getpid(), "command": command,
                      "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
            self._fd = fd
            return

    def release(self) -> None:
        """Empty the holder record and unlock (also fine after the file was unlinked)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_ino, st.st_dev) == (own.st_ino, own.st_dev)
