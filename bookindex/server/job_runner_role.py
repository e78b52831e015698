"""Which server process runs the index jobs: the one holding `LIB/.server/runner.lock`.

`bookindex serve --workers N` starts N processes that all answer questions; exactly one of them
runs the job queue, so the library keeps one writer. The role is an exclusive `flock` on a file,
held for the life of the process: the kernel drops it when the process dies, and another server
process then takes the role over (and resumes the job that was running, as interrupted).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path


class RunnerRole:
    """The runner lock of one library's server folder; `try_take()` never blocks."""

    def __init__(self, server_dir: Path) -> None:
        self.path = server_dir / "runner.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_take(self) -> bool:
        """Take the role if no other live process holds it; True when this process holds it."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.set_inheritable(fd, False)  # a build child must not keep the role alive
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
