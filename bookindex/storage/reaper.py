"""A background thread that removes superseded generation folders once their readers let go.

Why a thread: the last reader lease on a generation is often released by a garbage-collected
`StoredDocument` (a `weakref.finalize`), which may run in any thread, at any allocation, even
while that thread holds the lease guard (`.leases.lock`, a `flock`) shared. Sweeping right there
would take the guard exclusively, on a second file descriptor of the same process, and wait for
itself forever. So a release only posts `(library, generation)` here (`SimpleQueue.put`, which is
safe from finalizers and re-entrant) and this thread does the work: it checks, with the library's
writer lock, that nobody still needs the folder, and removes it.

The work function (`bookindex.storage.catalog`) returns False when it could not run yet (another
writer holds the library's lock): the library is then tried again every `RETRY_S` until the work
is done, so a folder whose lease was released during a build still goes when the build ends.
At exit the process finishes a sweep in progress and runs one last round (`at_exit`); leases
it still holds then die with it (a dead `flock`), and the next writer sweeps their folders.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("bookindex.storage.reaper")

RETRY_S = 1.0  # how often a library whose writer lock was busy is tried again
EXIT_WAIT_S = 5.0  # at exit, the longest to wait for a sweep in progress

Work = Callable[[Path, set[str]], bool]


class Reaper:
    """One process's sweeping thread; `post` from anywhere, `start` from ordinary code."""

    def __init__(self, work: Work) -> None:
        self._work = work
        self._queue: queue.SimpleQueue[tuple[Path, str] | threading.Event] = queue.SimpleQueue()
        self._pending: dict[Path, set[str]] = {}  # libraries to try again (their writer lock was busy)
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._start_lock = threading.Lock()
        self._rounds = threading.Lock()  # held for each round: the exit round never overlaps one

    def post(self, root: Path, generation: str) -> None:
        """Ask for `docs/<generation>` of library `root` to be removed once unused. Never blocks
        and takes no lock: callable from a finalizer. Without a started thread nothing happens
        (the next writer of the library sweeps as before)."""
        self._queue.put((root, generation))

    def running(self) -> bool:
        return self._thread is not None and self._pid == os.getpid() and self._thread.is_alive()

    def start(self) -> None:
        """Start the thread when it is not running in this process (call where a lease is taken,
        not from a finalizer: starting a thread takes locks)."""
        if self.running():
            return
        with self._start_lock:
            if self.running():
                return
            if self._pid != os.getpid():  # a forked child: the parent's queue and thread are not ours
                self._queue = queue.SimpleQueue()
                self._pending = {}
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, name="bookindex-sweep", daemon=True)
            self._thread.start()

    def settle(self, timeout: float) -> bool:
        """Wait until everything posted so far was handled; False when work is still pending
        after `timeout` seconds (a writer holding a library's lock all that time)."""
        deadline = time.monotonic() + timeout
        if not self.running():
            return self._queue.empty()
        while self.running():
            handled = threading.Event()
            self._queue.put(handled)  # handled once every request posted before it was
            if not handled.wait(max(0.0, deadline - time.monotonic())):
                return False
            if not self._pending:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(RETRY_S, max(0.0, deadline - time.monotonic())))
        return False

    def at_exit(self) -> None:
        """(atexit) Let a sweep in progress finish, so an exiting process never leaves a folder
        half deleted, then run one last round over what was posted (no retries after it). The
        lock is kept: the thread starts no round after this one."""
        if not self.running() or not self._rounds.acquire(timeout=EXIT_WAIT_S):
            return
        self._round(None)

    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=RETRY_S if self._pending else None)
            except queue.Empty:
                first = None
            with self._rounds:
                self._round(first)

    def _next(self) -> tuple[Path, str] | threading.Event | None:
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None

    def _round(self, first: tuple[Path, str] | threading.Event | None) -> None:
        """Take every request posted so far (grouped by library, with the pending ones) and run
        the work once per library; keep the libraries whose writer lock was busy."""
        todo, self._pending = self._pending, {}
        waiting: list[threading.Event] = []
        item = first if first is not None else self._next()
        while item is not None:
            if isinstance(item, threading.Event):
                waiting.append(item)
            else:
                todo.setdefault(item[0], set()).add(item[1])
            item = self._next()
        for root, generations in todo.items():
            try:
                done = self._work(root, generations)
            except Exception:  # never let the thread die: the next writer sweeps as before
                log.warning("%s: sweeping superseded versions failed", root, exc_info=True)
                done = True
            if not done:
                self._pending.setdefault(root, set()).update(generations)
        for event in waiting:
            event.set()
