"""Reader leases: a document version stays on disk while any process reads it.

Why: a re-index commits a new generation folder `docs/<id>.<stamp>` and used
to delete the old one at once, so a reader that had looked the document up a moment before
failed with "tree.json is missing". Now a reader takes a lease on the generation it opened and
keeps it while it holds the document; the writer deletes an old generation only when no live
lease names it. Else the generation goes when its last lease is released: a lease's `on_free`
hands it to the releasing process's sweeping thread (bookindex.storage.catalog, .reaper), which
removes it when no lease of any process names it any more. So whichever process lets go last
frees the folder; one that dies holding a lease leaves it to the next writer (start or commit).

A lease is a file `.leases/<generation>/<pid>-<token>.lease` holding the reader's pid, command
and start time, kept open with a shared `flock`. Liveness is the flock, not the pid: the kernel
drops it when the reader exits or is killed, so a crashed reader never pins a version, and a
reused pid cannot fake one. One lease per process and generation is shared by every
`StoredDocument` of it (reference-counted; released when the last one is garbage collected).

`.leases.lock` orders the two sides: a reader holds it shared while it reads the catalog and
takes its lease; the sweeper holds it exclusively while it checks leases and moves a generation
away. So a reader either sees the new catalog, or has its lease on the old folder before the
sweeper looks.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

LEASES = ".leases"
GUARD = ".leases.lock"

_registry: dict[tuple[str, str], "Lease"] = {}
_registry_lock = threading.Lock()


Freed = Callable[[Path, str], None]  # called with (library, generation) when a lease ends


class Lease:
    """This process's lease on one generation folder; `release()` once per `acquire`.
    `on_free(root, generation)` is called once the last holder released it (the flock is gone
    by then); it may run inside a finalizer, so it must not block or take locks."""

    def __init__(self, root: Path, generation: str, fd: int | None, path: Path | None,
                 on_free: Freed | None = None) -> None:
        self.root = root
        self.generation = generation
        self.fd = fd
        self.path = path
        self.count = 0
        self.on_free = on_free

    def release(self) -> None:
        with _registry_lock:
            self.count -= 1
            if self.count > 0:
                return
            key = (str(self.root), self.generation)
            if _registry.get(key) is self:  # a race's duplicate leaves the shared lease registered
                del _registry[key]
            fd, self.fd = self.fd, None
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            with contextlib.suppress(OSError):
                self.path.parent.rmdir()  # only when no other lease is in it
        if fd is not None:
            os.close(fd)  # closing drops the flock
        if self.on_free is not None and self.path is not None:
            self.on_free(self.root, self.generation)


@contextlib.contextmanager
def guard(root: Path, exclusive: bool) -> Iterator[None]:
    """`.leases.lock`, shared for readers taking leases, exclusive for the sweeper. A library
    the process cannot write to (read-only media) is read without leases: nothing sweeps it."""
    try:
        fd = os.open(root / GUARD, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def acquire(root: Path, generation: str, command: str, on_free: Freed | None = None) -> Lease:
    """A lease on `docs/<generation>` for this process (call under `guard(root, False)`);
    `on_free`: see `Lease` (the first acquire of a generation's shared lease sets it)."""
    key = (str(root), generation)
    with _registry_lock:
        lease = _registry.get(key)
        if lease is not None and lease.count > 0:
            lease.count += 1
            return lease
    fd, path = _create(root / LEASES / generation, command)
    lease = Lease(root, generation, fd, path, on_free)
    with _registry_lock:
        other = _registry.get(key)
        if other is not None and other.count > 0:  # another thread won the race: share its lease
            other.count += 1
        else:
            lease.count = 1
            _registry[key] = lease
            return lease
    lease.count = 1
    lease.on_free = None  # a duplicate: its generation is still held through `other`
    lease.release()
    return other


def _create(folder: Path, command: str) -> tuple[int | None, Path | None]:
    record = json.dumps({"pid": os.getpid(), "command": command,
                         "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}).encode()
    for _ in range(5):  # another reader may remove the (empty) folder between mkdir and open
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.lease"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileNotFoundError:
            continue
        except OSError:
            return None, None  # read-only library: read without a lease
        fcntl.flock(fd, fcntl.LOCK_SH)
        os.write(fd, record)
        return fd, path
    return None, None


def live(root: Path, generation: str) -> int:
    """How many live leases name `generation`; stale ones (their holder died) are deleted.
    Call under `guard(root, True)`."""
    folder = root / LEASES / generation
    try:  # a reader releasing its last lease removes the folder without the guard
        files = list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return 0  # removed only when empty: no lease left
    count = 0
    for f in files:
        try:
            fd = os.open(f, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            count += 1  # its reader still holds it
        else:
            with contextlib.suppress(OSError):
                f.unlink()  # a dead reader's lease
        finally:
            os.close(fd)
    if not count:
        with contextlib.suppress(OSError):
            folder.rmdir()
    return count


def held_here(root: Path, generation: str) -> bool:
    """Whether this process holds a lease on `generation` (perhaps only through garbage)."""
    with _registry_lock:
        lease = _registry.get((str(root), generation))
        return lease is not None and lease.count > 0


def forget(root: Path, generation: str) -> None:
    """Drop the (empty) lease folder of a generation that was deleted."""
    with contextlib.suppress(OSError):
        (root / LEASES / generation).rmdir()
