"""The catalog of a library folder: which generation folder holds each document, changed atomically.

Layout of a library DIR (what storage owns; a document folder's own files belong to
bookindex.indexing.document_folder):
    library.json            catalog: format version + {doc_id: {name, source, sha256, dir}}
    docs/<doc_id>.<stamp>/  one generation folder per document version, never changed once committed
    .tmp/                   builds in progress (staging folders), and generations being deleted
    .lock                   the writer lock (bookindex.storage.lock), with its holder's record
    .leases/, .leases.lock  reader leases on generation folders (bookindex.storage.leases)
    .router/                the library router and pooled search index of the catalog's current
                            state, stored by query processes (bookindex.services.stored_router);
                            never read here
The catalog is the single source of truth and is swapped with one `os.replace`, so adding,
replacing and removing a document are each atomic: a build that fails (or a crash) leaves the
library as it was. Writers hold the writer lock for the whole build (`Catalog.writer`), so any
folder under .tmp/ found by the holder belongs to a dead build and is removed at the start of
the run. A superseded generation folder is removed only when no reader holds a lease on it:
by the writer that superseded it when none does at its commit, else as soon as the last lease
on it is released (this process's sweeping thread, `bookindex.storage.reaper`, takes the writer
lock for the moment of the sweep; while a build holds it, that build's commit or end sweeps).

Why it knows nothing of what a generation folder contains: the indexing layer builds a folder
into `staging_root()` and asks the catalog to commit it, so storage never imports indexing.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bookindex.core.atomic import write_json_atomic
from bookindex.core.errors import IndexFormatError, InputError
from bookindex.core.events import Events
from bookindex.storage import leases
from bookindex.storage.lock import LibraryBusy, WriterLock, command_line
from bookindex.storage.reaper import Reaper

CATALOG = "library.json"
CATALOG_FORMAT = 1  # library.json's "format_version"
DOCS = "docs"  # the committed generation folders
STAGING = ".tmp"  # builds in progress: same file system as docs/, so a commit is a rename
TRASH = ".tmp/trash-"  # a superseded generation is renamed here (one rename), then deleted
SWEEPER = "bookindex (removing superseded document versions)"  # the writer lock's holder record while it sweeps

def _noop(event: str, info: dict[str, Any]) -> None:
    return None


def now() -> str:
    """A UTC timestamp to the second, as the catalog and manifests record them."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def generation_name(doc_id: str) -> str:
    """A new generation folder name `<doc_id>.<stamp>` (the stamp names the version)."""
    return f"{doc_id}.{int(time.time()):x}{uuid.uuid4().hex[:6]}"


def new_generation_dir(root: Path, doc_id: str) -> Path:
    """A fresh, empty staging folder `<root>/<doc_id>.<stamp>` to build one document into."""
    root.mkdir(parents=True, exist_ok=True)
    d = root / generation_name(doc_id)
    d.mkdir()
    return d


class Catalog:
    """The catalog of one library folder: read it, lock it, commit generations, sweep the rest.

    Open with `Catalog.open(dir)`. Nothing is written until the first generation is committed.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._owner: int | None = None  # thread holding the writer lock through this object
        self._depth = 0
        self._stat: tuple[int, int, int] | None = None  # library.json as last read
        self._data = self._read()

    @classmethod
    def open(cls, directory: str | Path) -> Catalog:
        root = Path(directory).expanduser().resolve()
        if root.exists() and not root.is_dir():
            raise InputError(f"{root}: exists and is not a folder")
        return cls(root)

    # -- reading -------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self.root / CATALOG

    def _read(self) -> dict[str, Any]:
        p = self.path
        self._stat = _stat_of(p)
        if not p.exists():
            if self.root.exists() and any(x for x in self.root.iterdir() if not x.name.startswith(".")):
                raise IndexFormatError(f"{self.root}: not a bookindex library (no {CATALOG}); "
                                       "choose an empty or new folder")
            return {"format_version": CATALOG_FORMAT, "created": None, "documents": {}}
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise IndexFormatError(f"{p}: unreadable library catalog ({e})") from None
        if not isinstance(data, dict) or data.get("format_version") != CATALOG_FORMAT:
            raise IndexFormatError(f"{p}: library format {data.get('format_version') if isinstance(data, dict) else '?'}"
                                   f" is not {CATALOG_FORMAT}; re-index into a new folder")
        if not isinstance(data.get("documents"), dict):
            raise IndexFormatError(f"{p}: field 'documents' must be an object")
        return data

    def refresh(self) -> None:
        self._data = self._read()

    def entries(self) -> dict[str, dict[str, Any]]:
        """{doc_id: {name, source, sha256, dir}}, re-read when library.json changed on disk
        (another process committed): a long-lived reader (a server's Engine) then sees new
        versions as they are committed."""
        if _stat_of(self.path) != self._stat:
            self._data = self._read()
        documents: dict[str, dict[str, Any]] = self._data["documents"]
        return documents

    def ids(self) -> list[str]:
        """Document ids in listing order: by name, then id."""
        cat = self.entries()
        return sorted(cat, key=lambda i: (cat[i]["name"], i))

    def find(self, doc: str) -> str:
        """The id of a document given by id (or unique id prefix), file name, file stem or source path."""
        docs = self.entries()
        if doc in docs:
            return doc
        hits = [i for i, e in docs.items() if doc in (e["name"], Path(e["name"]).stem, e.get("source"))]
        if not hits and len(doc) >= 4:
            hits = [i for i in docs if i.startswith(doc)]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            known = ", ".join(f"{e['name']} ({i})" for i, e in docs.items()) or "none"
            raise InputError(f"{self.root}: no document {doc!r}; documents: {known}")
        raise InputError(f"{self.root}: {doc!r} is ambiguous: " + ", ".join(f"{docs[i]['name']} ({i})" for i in hits)
                         + "; use the document id")

    def lease(self, doc_id: str) -> tuple[dict[str, Any], Path, leases.Lease | None]:
        """(catalog entry, generation folder, reader lease) of a document's current generation.
        The lease is taken under the lease guard together with the catalog read, so the folder
        cannot be swept in between; it keeps the folder on disk until released."""
        with leases.guard(self.root, exclusive=False):
            entry = self.entries().get(doc_id)
            if entry is None:
                raise InputError(f"{self.root}: document {doc_id} was removed by another process")
            folder = self.root / DOCS / entry["dir"]
            lease = None
            if self.root.is_dir():
                _REAPER.start()
                lease = leases.acquire(self.root, entry["dir"], command_line(), on_free=_REAPER.post)
        return entry, folder, lease

    def sweep_soon(self, generations: list[str] | set[str]) -> None:
        """Ask for these generation folders to be removed once the catalog names none of them
        and no reader holds them (the sweeping thread checks both; a generation still in use
        goes when its last lease is released). A cache that dropped superseded versions calls it:
        a version kept alive only by unreachable objects is then collected and removed."""
        if not self.root.is_dir():
            return
        _REAPER.start()
        for g in generations:
            _REAPER.post(self.root, g)

    # -- the writer lock -------------------------------------------------------------------
    @contextlib.contextmanager
    def writer(self, command: str | None = None, wait: bool = True, timeout: float | None = None,
               on_wait: Callable[[dict[str, Any] | None], None] | None = None) -> Iterator[Catalog]:
        """Hold the library's writer lock: one writer per library across processes and threads.

        Every add/replace/remove takes it for its whole run (re-entrant in the thread that holds
        it, so a server can wrap `Engine.index` to choose `wait=False` or a timeout). Refused:
        `LibraryBusy` (an InputError, exit 2) naming the holder's pid, command and start time.
        `on_wait(holder)` is called once before blocking. On entry, leftovers of dead builds
        (.tmp/ folders, uncommitted or superseded generations no reader holds) are removed.
        """
        me = threading.get_ident()
        if self._owner == me:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        lock = WriterLock(self.root)
        lock.acquire(command or command_line(), wait=wait, timeout=timeout, on_wait=on_wait)
        self._owner, self._depth = me, 1
        try:
            self._data = self._read()
            self._sweep(start=True)
            yield self
            self._sweep()  # versions this run's own frames held until now
        finally:
            self._owner, self._depth = None, 0
            lock.release()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The commit section: under the writer lock (taken here when the caller has not), with
        the catalog re-read."""
        with self.writer():
            self._data = self._read()
            yield

    # -- changing ------------------------------------------------------------------------
    def staging_root(self) -> Path:
        """Where builds in progress live (.tmp/: same file system as docs/, so a commit is a rename)."""
        return self.root / STAGING

    def new_staging_dir(self, doc_id: str) -> Path:
        """A fresh staging folder under `staging_root()` for one build of `doc_id`."""
        return new_generation_dir(self.staging_root(), doc_id)

    def discard_staging_root(self) -> None:
        """Remove .tmp/ when it is empty (after a build, committed or not)."""
        with contextlib.suppress(OSError):
            self.staging_root().rmdir()

    def commit_generation(self, doc_id: str, build_dir: Path, *, name: str, source: str, sha256: str,
                          replaces: tuple[str, ...] | list[str] = (), on_event: Events = _noop) -> str:
        """Move a finished staging folder into docs/ and swap the catalog; the status ("added"
        or "replaced"). Documents from the same `source` path and those in `replaces` go in the
        same commit. Events: "commit" before the move, "catalog" moved but not yet committed."""
        with self.locked():
            stale = [i for i, e in self._data["documents"].items()
                     if (e.get("source") == source or i in replaces) and i != doc_id]
            on_event("commit", {"doc_id": doc_id})
            (self.root / DOCS).mkdir(exist_ok=True)
            final = self.root / DOCS / build_dir.name
            os.replace(build_dir, final)
            docs = self._data["documents"]
            status = "replaced" if (doc_id in docs or stale) else "added"
            for i in stale:
                docs.pop(i, None)
            docs[doc_id] = {"name": name, "source": source, "sha256": sha256, "dir": final.name}
            on_event("catalog", {"doc_id": doc_id, "dir": final.name})  # moved, not yet committed
            self._commit()  # the commit point: one os.replace of library.json
            self._sweep()
        return status

    def swap_generation(self, doc_id: str, current: str, build_dir: Path) -> bool:
        """Replace the generation `current` of `doc_id` by the staging folder `build_dir` (a
        changed copy of it); False, changing nothing, when another process changed the document."""
        with self.locked():
            entry = self._data["documents"].get(doc_id)
            if entry is None or entry["dir"] != current:
                return False
            final = self.root / DOCS / build_dir.name
            os.replace(build_dir, final)
            entry["dir"] = final.name
            self._commit()  # the commit point, as in commit_generation
            self._sweep()
        return True

    def drop(self, doc_id: str) -> bool:
        """Remove a document from the catalog (atomically, as a commit); False when it was gone.
        Its generation folder goes with the sweep once no reader holds it."""
        with self.locked():
            if doc_id not in self._data["documents"]:
                return False
            self._data["documents"].pop(doc_id, None)
            self._commit()
            self._sweep()
        return True

    def _commit(self) -> None:
        if not self._data.get("created"):
            self._data["created"] = now()
        write_json_atomic(self.path, self._data)
        self._stat = _stat_of(self.path)

    def _sweep(self, start: bool = False) -> None:
        """Remove generation folders the catalog does not reference and no reader holds, and
        (at the start of a run: every build there is dead, since we hold the lock) .tmp/."""
        live = {e["dir"] for e in self._data["documents"].values()}
        docs = self.root / DOCS
        tmp = self.root / STAGING
        doomed: list[Path] = []
        if docs.is_dir():
            collected = False
            with leases.guard(self.root, exclusive=True):
                for d in docs.iterdir():
                    if d.name in live:
                        continue
                    if leases.live(self.root, d.name) and not collected and leases.held_here(self.root, d.name):
                        gc.collect()  # our own lease may be held only by unreachable objects (cycles)
                        collected = True
                    if leases.live(self.root, d.name):
                        continue
                    tmp.mkdir(exist_ok=True)
                    trash = self.root / f"{TRASH}{d.name}"
                    try:
                        os.replace(d, trash)  # one rename: no reader ever sees a half-deleted folder
                    except OSError:
                        continue
                    leases.forget(self.root, d.name)
                    doomed.append(trash)
        if tmp.is_dir():
            for d in tmp.iterdir():
                if d in doomed or start or d.name.startswith(TRASH.split("/")[1]):
                    if d.is_dir() and not d.is_symlink():
                        shutil.rmtree(d, ignore_errors=True)
                    else:
                        with contextlib.suppress(OSError):
                            d.unlink()
            with contextlib.suppress(OSError):
                tmp.rmdir()


def _named(root: Path) -> set[str] | None:
    """The generation folders library.json names, read from disk (not from any `Catalog`'s
    memory: a writer's may hold a commit not yet written); None without a readable catalog."""
    path = root / CATALOG
    stat = _stat_of(path)
    kept = _NAMED.get(root)
    if stat is not None and kept is not None and kept[0] == stat:
        return kept[1]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        named = {str(e["dir"]) for e in data["documents"].values()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if stat is not None:
        _NAMED[root] = (stat, named)
    return named


def _reap(root: Path, generations: set[str]) -> bool:
    """The sweeping thread's work: when a released (or dropped) generation of `root` is one
    the catalog no longer names, sweep the library as a writer does, under the writer lock
    taken without waiting (so no commit is half done while it looks). False when a writer
    holds the lock: tried again later (that writer's own sweep may do it first)."""
    named = _named(root)
    if named is None or not any(g not in named and (root / DOCS / g).is_dir() for g in generations):
        return True  # still current, already gone, or no library any more
    lock = WriterLock(root)
    try:
        lock.acquire(SWEEPER, wait=False)
    except LibraryBusy:
        return False
    except OSError:  # a library this process cannot write to: nothing to sweep here
        return True
    try:
        Catalog(root)._sweep()
    except (IndexFormatError, OSError):
        pass  # a damaged or vanished library: its next writer reports it
    finally:
        lock.release()
    return True


_NAMED: dict[Path, tuple[tuple[int, int, int], set[str]]] = {}  # the sweeping thread's catalog reads
_REAPER = Reaper(_reap)
atexit.register(_REAPER.at_exit)


def settle(timeout: float = 30.0) -> bool:
    """Wait until this process's sweeping thread has handled every release so far (tests, and
    a process that wants superseded versions gone before it exits); False on timeout."""
    return _REAPER.settle(timeout)


def remove_if_empty(root: Path) -> None:
    """After a failed first add into a new folder, leave no trace of the folder."""
    if (root / CATALOG).exists():
        return
    shutil.rmtree(root / STAGING, ignore_errors=True)
    shutil.rmtree(root / leases.LEASES, ignore_errors=True)
    for name in (".lock", leases.GUARD):
        with contextlib.suppress(OSError):
            (root / name).unlink()
    with contextlib.suppress(OSError):
        root.rmdir()


def _stat_of(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)
