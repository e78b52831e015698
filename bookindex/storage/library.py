"""A folder of indexed documents: add, list, get, remove — every change atomic.

Layout of a library DIR:
    library.json            catalog: format version + {doc_id: {name, source, sha256, dir}}
    docs/<doc_id>.<stamp>/  one document: manifest.json, tree.json, build.json, graph.json,
                            node_vectors.npz + entity_vectors.npz (or, with storage.vectors =
                            "lancedb", vectors.lance/ + graph.lance/: bookindex.storage.lance_store),
                            images/
    .tmp/                   builds in progress
    .lock                   the writer lock (bookindex.storage.lock), with its holder's record
    .leases/, .leases.lock  reader leases on generation folders (bookindex.storage.leases)
The catalog is the single source of truth and is swapped with one `os.replace`, so adding,
replacing and removing a document are each atomic: a build that fails (or a crash) leaves the
library as it was. Writers hold the writer lock for the whole build (`Library.writer`), so any
folder under .tmp/ found by the holder belongs to a dead build and is removed at the start of
the run. A superseded generation folder is removed only when no reader holds a lease on it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import json
import os
import shutil
import threading
import time
import uuid
import weakref
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from bookindex.core.atomic import write_json_atomic
from bookindex.core.config import Settings, load_settings
from bookindex.core.errors import IndexFormatError, InputError
from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import DocumentTree, Entity
from bookindex.core.protocols import LLM, Embedder, LexicalIndex, Providers, Reranker
from bookindex.indexing.construction import (
    failed_graph_nodes,
    load_tree,
    read_node_vectors,
    retry_graph_nodes,
)
from bookindex.parsing.dispatch import check_path, sniff
from bookindex.providers.embedding import get_embedder
from bookindex.providers.lexical import document_lexical_index
from bookindex.providers.llm import get_llm
from bookindex.providers.reranker import get_reranker
from bookindex.storage import lance_store, leases
from bookindex.storage.graph_store import load_entity_vectors, load_graph
from bookindex.storage.lock import WriterLock, command_line
from bookindex.storage.staging import FORMAT_VERSION, MANIFEST, BuildJob, build_into, new_build_dir

CATALOG = "library.json"
TRASH = ".tmp/trash-"  # a superseded generation is renamed here (one rename), then deleted

# Library.add keyword options -> settings keys (CLI flags map onto the same names).
OPTION_KEYS = {
    "parser": "parsing.parser",
    "use_outline": "parsing.use_outline",
    "tables": "parsing.tables",
    "images": "parsing.images",
    "ocr": "parsing.ocr",
    "llm_sections": "parsing.llm_sections",
    "graph": "graph.enabled",
}
OPTION_ALIASES = {"outline": "use_outline"}


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def path_sha256(path: Path) -> str:
    """sha256 of a file; for a MinerU output folder, of its JSON files in name order."""
    if path.is_file():
        return file_sha256(path)
    h = hashlib.sha256()
    for p in sorted(path.glob("*.json")):
        h.update(p.name.encode())
        h.update(bytes.fromhex(file_sha256(p)))
    return h.hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class StoredDocument:
    """One indexed document: its manifest, and lazily its tree, graph, vectors and lexical index.

    It is the storage layer's `DocumentIndex`: everything is read on first use and kept, so one
    opened document answers many questions without touching the disk again.
    """

    def __init__(self, library: "Library", doc_id: str, directory: Path, manifest: dict[str, Any],
                 status: str = "stored", lease: leases.Lease | None = None) -> None:
        self.library = library
        # the generation folder stays on disk while this object lives (or until close())
        self._release = weakref.finalize(self, lease.release) if lease is not None else None
        self.doc_id = doc_id
        self.dir = directory
        self.manifest = manifest
        self.status = status  # "added", "replaced", "unchanged", "retried" after Library.add; else "stored"
        self.retry: dict[str, Any] | None = None  # after status "retried": the graph retry outcome
        self._tree: DocumentTree | None = None
        self._graph: KnowledgeGraph | None = None
        self._lexical: LexicalIndex | None = None
        self._node_vectors: tuple[list[str], np.ndarray | None] | None = None
        self._entity_vectors: tuple[list[str], np.ndarray | None] | None = None

    def close(self) -> None:
        """Give up the reader lease now (else it goes when the object is garbage collected);
        files not read yet may then be swept by the next writer."""
        if self._release is not None:
            self._release()

    @property
    def name(self) -> str:
        return str(self.manifest.get("name", self.doc_id))

    @property
    def folder(self) -> Path:
        return self.dir

    @property
    def tree(self) -> DocumentTree:
        if self._tree is None:
            self._tree = load_tree(self.dir)
        return self._tree

    @property
    def graph(self) -> KnowledgeGraph:
        if self._graph is None:
            self._graph = load_graph(self.dir)
        return self._graph

    @property
    def page_labels(self) -> list[str] | None:
        labels = self.tree.meta.get("page_labels")
        return list(labels) if labels else None

    @property
    def build_report(self) -> dict[str, Any]:
        """build.json: stage timings, graph report (failed nodes, retries), LLM ledger."""
        try:
            data = json.loads((self.dir / "build.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def links(self) -> dict[str, list[str]]:
        return self.graph.links

    def entities_of(self, node_id: str) -> list[Entity]:
        return self.graph.entities_of(node_id)

    def nodes_of(self, entity_id: str) -> list[str]:
        return self.graph.nodes_of(entity_id)

    def node_vectors(self) -> tuple[list[str], np.ndarray | None]:
        """Stored node vectors (ids, matrix); empty when the document was indexed without them."""
        if self._node_vectors is None:
            try:
                ids, mat = read_node_vectors(self.dir)
            except (FileNotFoundError, OSError, ValueError, KeyError):
                ids, mat = [], None
            self._node_vectors = (list(ids), np.asarray(mat, dtype=np.float32)) if len(ids) else ([], None)
        return self._node_vectors

    def entity_vectors(self) -> tuple[list[str], np.ndarray | None]:
        """Stored entity vectors (ids, matrix); empty without a graph or vectors."""
        if self._entity_vectors is None:
            ids: list[str] = []
            mat: np.ndarray | None = None
            if self.graph.entities:
                try:
                    ids, mat = load_entity_vectors(self.dir)
                except (FileNotFoundError, OSError, ValueError, KeyError):
                    ids, mat = [], None
            self._entity_vectors = (list(ids), np.asarray(mat, dtype=np.float32)) if len(ids) else ([], None)
        return self._entity_vectors

    def lexical_index(self) -> LexicalIndex:
        if self._lexical is None:
            self._lexical = document_lexical_index(self.tree)
        return self._lexical

    def image_file(self, node_id: str) -> Path | None:
        """Absolute path of a node's image (stored relative to the document folder)."""
        p = self.tree[node_id].meta.get("image_path")
        if not p:
            return None
        q = Path(p)
        return q if q.is_absolute() else self.dir / q

    def __repr__(self) -> str:
        return f"StoredDocument({self.doc_id!r}, {self.name!r}, pages={self.manifest.get('pages')})"


class Library:
    """Documents indexed under one folder. Open with `Library.open(dir)`."""

    def __init__(self, root: Path, settings: Settings | None = None, embedder: Embedder | None = None,
                 llm: LLM | None = None, reranker: Reranker | None = None,
                 providers: Providers | None = None) -> None:
        self.root = root
        self._settings = settings
        self._embedder = embedder
        self._llm = llm
        self._reranker = reranker
        self._providers = providers
        self._owner: int | None = None  # thread holding the writer lock through this object
        self._depth = 0
        self._stat: tuple[int, int, int] | None = None  # library.json as last read
        self._catalog = self._read_catalog()

    @classmethod
    def open(cls, directory: str | Path, settings: Settings | None = None, *, embedder: Embedder | None = None,
             llm: LLM | None = None, reranker: Reranker | None = None,
             providers: Providers | None = None) -> "Library":
        """Open (or prepare) a library. Nothing is written until the first document is added."""
        root = Path(directory).expanduser().resolve()
        if root.exists() and not root.is_dir():
            raise InputError(f"{root}: exists and is not a folder")
        return cls(root, settings, embedder, llm, reranker, providers)

    # -- providers (given, else the Engine's, else created from the settings) --------------
    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._providers.embedder if self._providers else get_embedder(self.settings)
        return self._embedder

    @property
    def llm(self) -> LLM:
        """The LLM client builds use (provider `none` gives one with available=False)."""
        if self._llm is None:
            self._llm = self._providers.llm if self._providers else get_llm(self.settings)
        return self._llm

    @property
    def reranker(self) -> Reranker:
        """The reranker entity resolution uses to confirm candidate merges."""
        if self._reranker is None:
            self._reranker = (self._providers.reranker if self._providers
                              else get_reranker(self.settings, embedder=self.embedder))
        return self._reranker

    # -- catalog -------------------------------------------------------------------------
    @property
    def _catalog_path(self) -> Path:
        return self.root / CATALOG

    def _read_catalog(self) -> dict[str, Any]:
        p = self._catalog_path
        self._stat = _stat_of(p)
        if not p.exists():
            if self.root.exists() and any(x for x in self.root.iterdir() if not x.name.startswith(".")):
                raise IndexFormatError(f"{self.root}: not a bookindex library (no {CATALOG}); "
                                       "choose an empty or new folder")
            return {"format_version": FORMAT_VERSION, "created": None, "documents": {}}
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise IndexFormatError(f"{p}: unreadable library catalog ({e})") from None
        if not isinstance(data, dict) or data.get("format_version") != FORMAT_VERSION:
            raise IndexFormatError(f"{p}: library format {data.get('format_version') if isinstance(data, dict) else '?'}"
                                   f" is not {FORMAT_VERSION}; re-index into a new folder")
        if not isinstance(data.get("documents"), dict):
            raise IndexFormatError(f"{p}: field 'documents' must be an object")
        return data

    def refresh(self) -> None:
        self._catalog = self._read_catalog()

    def _fresh(self) -> dict[str, Any]:
        """The catalog, re-read when library.json changed on disk (another process committed):
        a long-lived reader (a server's Engine) then sees new versions as they are committed."""
        if _stat_of(self._catalog_path) != self._stat:
            self._catalog = self._read_catalog()
        return self._catalog

    @contextlib.contextmanager
    def writer(self, command: str | None = None, wait: bool = True, timeout: float | None = None,
               on_wait: Callable[[dict[str, Any] | None], None] | None = None) -> Iterator["Library"]:
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
            self._catalog = self._read_catalog()
            self._sweep(start=True)
            yield self
            self._sweep()  # versions this run's own frames held until now
        finally:
            self._owner, self._depth = None, 0
            lock.release()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The commit section: under the writer lock (taken here when the caller has not)."""
        with self.writer():
            self._catalog = self._read_catalog()
            yield

    def _commit(self) -> None:
        if not self._catalog.get("created"):
            self._catalog["created"] = _now()
        write_json_atomic(self._catalog_path, self._catalog)
        self._stat = _stat_of(self._catalog_path)

    def _sweep(self, start: bool = False) -> None:
        """Remove generation folders the catalog does not reference and no reader holds, and
        (at the start of a run: every build there is dead, since we hold the lock) .tmp/."""
        live = {e["dir"] for e in self._catalog["documents"].values()}
        docs = self.root / "docs"
        tmp = self.root / ".tmp"
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

    # -- reading -------------------------------------------------------------------------
    def _doc(self, doc_id: str, status: str = "stored") -> StoredDocument:
        """The document's current generation, with a reader lease on it (taken under the lease
        guard together with the catalog read, so the folder cannot be swept in between)."""
        with leases.guard(self.root, exclusive=False):
            entry = self._fresh()["documents"].get(doc_id)
            if entry is None:
                raise InputError(f"{self.root}: document {doc_id} was removed by another process")
            d = self.root / "docs" / entry["dir"]
            lease = leases.acquire(self.root, entry["dir"], command_line()) if self.root.is_dir() else None
        try:
            manifest = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            if lease is not None:
                lease.release()
            raise IndexFormatError(f"{d}: unreadable manifest ({e}); remove and re-index {entry.get('name')}") from None
        return StoredDocument(self, doc_id, d, manifest, status, lease)

    @property
    def documents(self) -> list[StoredDocument]:
        cat = self._fresh()["documents"]
        ids = sorted(cat, key=lambda i: (cat[i]["name"], i))
        out = []
        for i in ids:
            try:
                out.append(self._doc(i))
            except InputError:  # removed by another process since the listing: skip it
                continue
        return out

    def __len__(self) -> int:
        return len(self._fresh()["documents"])

    def get(self, doc: str) -> StoredDocument:
        """A document by id (or unique id prefix), file name, file stem or source path."""
        docs = self._fresh()["documents"]
        if doc in docs:
            return self._doc(doc)
        hits = [i for i, e in docs.items() if doc in (e["name"], Path(e["name"]).stem, e.get("source"))]
        if not hits and len(doc) >= 4:
            hits = [i for i in docs if i.startswith(doc)]
        if len(hits) == 1:
            return self._doc(hits[0])
        if not hits:
            known = ", ".join(f"{e['name']} ({i})" for i, e in docs.items()) or "none"
            raise InputError(f"{self.root}: no document {doc!r}; documents: {known}")
        raise InputError(f"{self.root}: {doc!r} is ambiguous: " + ", ".join(f"{docs[i]['name']} ({i})" for i in hits)
                         + "; use the document id")

    def doc_of_node(self, node_id: str) -> StoredDocument:
        doc_id = node_id.split("-", 1)[0]
        if doc_id not in self._fresh()["documents"]:
            raise InputError(f"{self.root}: node {node_id!r} belongs to no document here")
        return self._doc(doc_id)

    # -- changing ------------------------------------------------------------------------
    def _effective(self, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Settings with the add() options applied, and the options as recorded in the manifest."""
        over: dict[str, Any] = {}
        for k, v in options.items():
            k = OPTION_ALIASES.get(k, k)
            if k not in OPTION_KEYS:
                raise InputError(f"unknown index option {k!r}; known: {', '.join(sorted(OPTION_KEYS))}")
            if v is not None:
                over[OPTION_KEYS[k]] = v
        s = self.settings.with_overrides(over) if over else self.settings
        recorded = {k: _get_dotted(s, key) for k, key in OPTION_KEYS.items()}
        recorded["llm"] = s.llm.model if s.llm.provider != "none" else None
        recorded["embedding"] = s.embedding.model or "default"
        if s.storage.vectors != "npz":  # recorded only off the default: older manifests still match
            recorded["vectors"] = s.storage.vectors
        return s, recorded

    def job_for(self, path: str | Path, **options: Any) -> BuildJob:
        """What building `path` with these options means: identity, settings, recorded options.
        Checks the file first, so a bad input fails before any work (InputError naming it)."""
        src = Path(path).expanduser()
        check_path(src)
        src = src.resolve()
        sniff(src)  # fail fast on an unsupported or mislabeled file, before anything is written
        sha = path_sha256(src)
        settings, recorded = self._effective(options)
        if settings.storage.vectors == "lancedb":
            lance_store.require()
        return BuildJob(source=str(src), sha256=sha, doc_id=sha[:16], name=src.name, settings=settings,
                        recorded=recorded)

    def add(self, path: str | Path, *, on_event: Any = None, progress: bool = False,
            replaces: tuple[str, ...] | list[str] = (), **options: Any) -> StoredDocument:
        """Index one file (PDF, MinerU JSON or folder, Markdown, text) into the library.

        Unchanged content with the same options: a no-op (status "unchanged"), unless graph
        extraction failed for some nodes: then only those are retried (status "retried"). A changed file
        from the same source path, or new options: rebuilt and swapped in atomically
        (status "replaced"). Otherwise status "added". `replaces`: document ids that the same
        commit removes (status "replaced"), as if they had come from the same path (the server's
        uploads live at one path per content); they keep serving until then.
        """
        job = self.job_for(path, **options)
        if replaces:
            job = dataclasses.replace(job, replaces=tuple(replaces))
        created_root = not self.root.exists()
        emit = on_event or (lambda e, i: None)
        with self.writer(on_wait=lambda holder: emit("lock_wait", {"holder": holder})):
            emit("locked", {"doc_id": job.doc_id})
            return self._add_locked(job, created_root, emit, progress)

    def current(self, job: BuildJob, on_event: Any = None, progress: bool = False) -> StoredDocument | None:
        """Under the writer lock: the stored document when `job` needs no build (status
        "unchanged", or "retried" after re-extracting its failed graph nodes), else None."""
        existing = self._catalog["documents"].get(job.doc_id)
        if existing is None:
            return None
        doc = self._doc(job.doc_id)
        if doc.manifest.get("options") != job.recorded or doc.manifest.get("format_version") != FORMAT_VERSION:
            doc.close()
            return None
        failed = failed_graph_nodes(doc.dir) if job.settings.graph.enabled else []
        if failed:  # issue 4: a re-run retries only the nodes whose extraction failed
            return self._retry_graph(doc, failed, job.settings, on_event or (lambda e, i: None), progress)
        doc.status = "unchanged"
        return doc

    def _add_locked(self, job: BuildJob, created_root: bool, on_event: Any, progress: bool) -> StoredDocument:
        """add() under the writer lock: a second writer of the same file finds it current here."""
        done = self.current(job, on_event, progress)
        if done is not None:
            return done
        tmp_root = self.root / ".tmp"
        build_dir = new_build_dir(tmp_root, job.doc_id)
        try:
            build_into(job, build_dir, llm=self.llm, embedder=self.embedder,
                       reranker=self.reranker if job.settings.graph.enabled else None,
                       on_event=on_event, progress=progress)
            status = self._commit_locked(job, build_dir, on_event)
        except BaseException:
            shutil.rmtree(build_dir, ignore_errors=True)
            if created_root:
                _remove_if_empty_library(self.root)
            else:
                with contextlib.suppress(OSError):
                    tmp_root.rmdir()
            raise
        with contextlib.suppress(OSError):
            tmp_root.rmdir()
        return self._doc(job.doc_id, status)

    def staging_root(self) -> Path:
        """Where builds in progress live (.tmp/: same file system as docs/, so a commit is a rename)."""
        return self.root / ".tmp"

    def commit_build(self, job: BuildJob, build_dir: Path, on_event: Any = None) -> StoredDocument:
        """Commit a finished staging folder (built by `build_staged` anywhere, then moved or
        unpacked under `staging_root()`): one rename into docs/, one os.replace of library.json.
        The caller holds the writer lock (a batch commits many builds under one lock)."""
        try:
            status = self._commit_locked(job, build_dir, on_event or (lambda e, i: None))
        except BaseException:
            shutil.rmtree(build_dir, ignore_errors=True)
            raise
        return self._doc(job.doc_id, status)

    def _commit_locked(self, job: BuildJob, build_dir: Path, on_event: Any) -> str:
        """Move `build_dir` into docs/ and swap the catalog; the status ("added" or "replaced")."""
        src = job.source
        with self._locked():
            stale = [i for i, e in self._catalog["documents"].items()
                     if (e.get("source") == src or i in job.replaces) and i != job.doc_id]
            on_event("commit", {"doc_id": job.doc_id})
            (self.root / "docs").mkdir(exist_ok=True)
            final = self.root / "docs" / build_dir.name
            os.replace(build_dir, final)
            docs = self._catalog["documents"]
            status = "replaced" if (job.doc_id in docs or stale) else "added"
            for i in stale:
                docs.pop(i, None)
            docs[job.doc_id] = {"name": job.name, "source": src, "sha256": job.sha256, "dir": final.name}
            on_event("catalog", {"doc_id": job.doc_id, "dir": final.name})  # moved, not yet committed
            self._commit()  # the commit point: one os.replace of library.json
            self._sweep()
        return status

    def _retry_graph(self, doc: StoredDocument, failed: list[str], settings: Any, on_event: Any,
                     progress: bool) -> StoredDocument:
        """Re-extract a stored document's failed graph nodes; swap the result in atomically.

        The update happens in a copy of the document folder under .tmp/ (files hard-linked:
        every file the update writes is a new one renamed into place), which then replaces the
        catalog entry with one os.replace of library.json, as add() does. Status "retried";
        `doc.retry` holds the outcome (nodes, recovered, still_failed, llm_calls, ...).
        """

        tmp_root = self.root / ".tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        stamp = f"{int(time.time()):x}{uuid.uuid4().hex[:6]}"
        build_dir = tmp_root / f"{doc.doc_id}.{stamp}"
        try:
            shutil.copytree(doc.dir, build_dir, copy_function=_link_or_copy)
            outcome = retry_graph_nodes(build_dir, failed, settings=settings, llm=self.llm,
                                        embedder=self.embedder, reranker=self.reranker,
                                        on_event=on_event or (lambda e, i: None), progress=progress)
            manifest = dict(doc.manifest, updated=_now(), graph_failed=outcome["still_failed"])
            write_json_atomic(build_dir / MANIFEST, manifest)
            with self._locked():
                entry = self._catalog["documents"].get(doc.doc_id)
                if entry is None or entry["dir"] != doc.dir.name:
                    raise InputError(f"{doc.name}: changed by another process during the graph retry; "
                                     "run `bookindex index` again")
                final = self.root / "docs" / build_dir.name
                os.replace(build_dir, final)
                entry["dir"] = final.name
                self._commit()  # the commit point, as in add()
                self._sweep()
        except BaseException:
            shutil.rmtree(build_dir, ignore_errors=True)
            raise
        finally:
            with contextlib.suppress(OSError):
                tmp_root.rmdir()
        new = self._doc(doc.doc_id, "retried")
        new.retry = outcome
        return new

    def remove(self, doc: str) -> StoredDocument:
        """Remove a document (by id or name); atomic like add()."""
        target = self.get(doc)
        with self._locked():
            if target.doc_id not in self._catalog["documents"]:
                raise InputError(f"{self.root}: {target.name} ({target.doc_id}) was removed by another process")
            target.close()  # what is returned only describes the removed document
            self._catalog["documents"].pop(target.doc_id, None)
            self._commit()
            self._sweep()
        target.status = "removed"
        return target


def _link_or_copy(src: str, dst: str) -> None:
    """Hard-link when possible (same file system, no data copied), else copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _remove_if_empty_library(root: Path) -> None:
    """After a failed first add into a new folder, leave no trace of the folder."""
    if (root / CATALOG).exists():
        return
    shutil.rmtree(root / ".tmp", ignore_errors=True)
    shutil.rmtree(root / leases.LEASES, ignore_errors=True)
    for name in (".lock", leases.GUARD):
        with contextlib.suppress(OSError):
            (root / name).unlink()
    with contextlib.suppress(OSError):
        root.rmdir()


def _get_dotted(obj: Any, key: str) -> Any:
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def _stat_of(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)
