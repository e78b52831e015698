"""A library of indexed documents: add (build, then commit atomically), list, get, remove.

`DocumentLibrary` is the `LibraryStore` (bookindex.core.protocols) over a library folder. It
joins the two halves that meet here: the storage catalog (bookindex.storage.catalog: library.json,
generation folders, the writer lock, reader leases, atomic commits) and the build pipeline
(bookindex.indexing.build_job, .construction). A build runs into a staging folder the catalog
hands out and is committed by the catalog with one rename and one `os.replace` of library.json,
so adding, replacing and removing a document are each atomic. Documents come back as
`StoredDocument`s, read through the document folder format (bookindex.indexing.document_folder).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from bookindex.core.config import Settings, load_settings
from bookindex.core.errors import IndexFormatError, InputError
from bookindex.core.model import tree_blocks
from bookindex.core.protocols import LLM, Embedder, Providers, Reranker
from bookindex.indexing.build_job import BuildJob, build_into
from bookindex.indexing.construction import retry_graph_nodes
from bookindex.indexing.document_folder import (
    FORMAT_VERSION,
    failed_graph_nodes,
    lexical_index_current,
    load_graph,
    read_manifest,
    tree_digest,
    write_lexical_index,
    write_manifest,
    write_tree,
)
from bookindex.indexing.graph_index import graph_index_current, write_graph_index
from bookindex.indexing.stored_document import StoredDocument
from bookindex.indexing.stored_statements import statements_current, write_statements
from bookindex.parsing.dispatch import check_path, regroup_tree, sniff
from bookindex.parsing.identity import identify
from bookindex.providers.embedding import get_embedder
from bookindex.providers.llm import get_llm
from bookindex.providers.reranker import get_reranker
from bookindex.storage import lance_store
from bookindex.storage.catalog import Catalog, generation_name, now, remove_if_empty
from bookindex.storage.content_hash import path_sha256

T = TypeVar("T")

# DocumentLibrary.add keyword options -> settings keys (CLI flags map onto the same names).
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


class DocumentLibrary:
    """Documents indexed under one folder. Open with `DocumentLibrary.open(dir)`."""

    def __init__(self, catalog: Catalog, settings: Settings | None = None, embedder: Embedder | None = None,
                 llm: LLM | None = None, reranker: Reranker | None = None,
                 providers: Providers | None = None) -> None:
        self.catalog = catalog
        self._settings = settings
        self._embedder = embedder
        self._llm = llm
        self._reranker = reranker
        self._providers = providers

    @classmethod
    def open(cls, directory: str | Path, settings: Settings | None = None, *, embedder: Embedder | None = None,
             llm: LLM | None = None, reranker: Reranker | None = None,
             providers: Providers | None = None) -> DocumentLibrary:
        """Open (or prepare) a library. Nothing is written until the first document is added."""
        return cls(Catalog.open(directory), settings, embedder, llm, reranker, providers)

    @property
    def root(self) -> Path:
        return self.catalog.root

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

    # -- the catalog -----------------------------------------------------------------------
    def refresh(self) -> None:
        self.catalog.refresh()

    @contextlib.contextmanager
    def writer(self, command: str | None = None, wait: bool = True, timeout: float | None = None,
               on_wait: Callable[[dict[str, Any] | None], None] | None = None) -> Iterator[DocumentLibrary]:
        """Hold the library's writer lock (re-entrant; see `Catalog.writer`)."""
        with self.catalog.writer(command, wait=wait, timeout=timeout, on_wait=on_wait):
            yield self

    def staging_root(self) -> Path:
        """Where builds in progress live (.tmp/: same file system as docs/, so a commit is a rename)."""
        return self.catalog.staging_root()

    # -- reading -------------------------------------------------------------------------
    def _doc(self, doc_id: str, status: str = "stored") -> StoredDocument:
        """The document's current generation, with a reader lease on it."""
        entry, d, lease = self.catalog.lease(doc_id)
        try:
            manifest = read_manifest(d)
        except (OSError, ValueError) as e:
            if lease is not None:
                lease.release()
            raise IndexFormatError(f"{d}: unreadable manifest ({e}); remove and re-index {entry.get('name')}") from None
        return StoredDocument(self, doc_id, d, manifest, status, lease)

    @property
    def documents(self) -> list[StoredDocument]:
        out = []
        for i in self.catalog.ids():
            try:
                out.append(self._doc(i))
            except InputError:  # removed by another process since the listing: skip it
                continue
        return out

    def __len__(self) -> int:
        return len(self.catalog.entries())

    def get(self, doc: str) -> StoredDocument:
        """A document by id (or unique id prefix), file name, file stem or source path."""
        return self._doc(self.catalog.find(doc))

    def doc_of_node(self, node_id: str) -> StoredDocument:
        doc_id = node_id.split("-", 1)[0]
        if doc_id not in self.catalog.entries():
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

    def recorded_options(self, **options: Any) -> dict[str, Any]:
        """The options a build with these would record in its manifest (`manifest["options"]`),
        to tell whether a stored document was built with them."""
        return dict(self._effective(options)[1])

    def add(self, path: str | Path, *, on_event: Any = None, progress: bool = False,
            replaces: tuple[str, ...] | list[str] = (), force: bool = False, **options: Any) -> StoredDocument:
        """Index one file (PDF, MinerU JSON or folder, Markdown, text) into the library.

        Unchanged content with the same options: a no-op (status "unchanged"), unless graph
        extraction failed for some nodes: then only those are retried (status "retried"). A changed file
        from the same source path, or new options: rebuilt and swapped in atomically
        (status "replaced"). Otherwise status "added". `replaces`: document ids that the same
        commit removes (status "replaced"), as if they had come from the same path (the server's
        uploads live at one path per content); they keep serving until then. `force`: rebuild
        even unchanged content with the same options (a re-index; status "replaced").
        """
        job = self.job_for(path, **options)
        if replaces:
            job = dataclasses.replace(job, replaces=tuple(replaces))
        created_root = not self.root.exists()
        emit = on_event or (lambda e, i: None)
        with self.writer(on_wait=lambda holder: emit("lock_wait", {"holder": holder})):
            emit("locked", {"doc_id": job.doc_id})
            return self._add_locked(job, created_root, emit, progress, force)

    def current(self, job: BuildJob, on_event: Any = None, progress: bool = False) -> StoredDocument | None:
        """Under the writer lock: the stored document when `job` needs no build (status
        "unchanged", or "retried" after re-extracting its failed graph nodes), else None."""
        if job.doc_id not in self.catalog.entries():
            return None
        doc = self._doc(job.doc_id)
        if doc.manifest.get("options") != job.recorded or doc.manifest.get("format_version") != FORMAT_VERSION:
            doc.close()
            return None
        failed = failed_graph_nodes(doc.dir) if job.settings.graph.enabled else []
        if failed:  # a re-run retries only the nodes whose extraction failed
            return self._retry_graph(doc, failed, job.settings, on_event or (lambda e, i: None), progress)
        doc.status = "unchanged"
        return doc

    def _add_locked(self, job: BuildJob, created_root: bool, on_event: Any, progress: bool,
                    force: bool = False) -> StoredDocument:
        """add() under the writer lock: a second writer of the same file finds it current here."""
        done = None if force else self.current(job, on_event, progress)
        if done is not None:
            return done
        build_dir = self.catalog.new_staging_dir(job.doc_id)
        try:
            build_into(job, build_dir, llm=self.llm, embedder=self.embedder,
                       reranker=self.reranker if job.settings.graph.enabled else None,
                       on_event=on_event, progress=progress)
            status = self._commit_locked(job, build_dir, on_event)
        except BaseException:
            shutil.rmtree(build_dir, ignore_errors=True)
            if created_root:
                remove_if_empty(self.root)
            else:
                self.catalog.discard_staging_root()
            raise
        self.catalog.discard_staging_root()
        return self._doc(job.doc_id, status)

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
        return self.catalog.commit_generation(job.doc_id, build_dir, name=job.name, source=job.source,
                                              sha256=job.sha256, replaces=job.replaces, on_event=on_event)

    def _retry_graph(self, doc: StoredDocument, failed: list[str], settings: Any, on_event: Any,
                     progress: bool) -> StoredDocument:
        """Re-extract a stored document's failed graph nodes; swap the result in atomically.

        The update happens in a copy of the document folder under .tmp/ (files hard-linked:
        every file the update writes is a new one renamed into place), which then replaces the
        catalog entry with one os.replace of library.json, as add() does. Status "retried";
        `doc.retry` holds the outcome (nodes, recovered, still_failed, llm_calls, ...).
        """
        def retry(build_dir: Path) -> dict[str, Any]:
            outcome = retry_graph_nodes(build_dir, failed, settings=settings, llm=self.llm,
                                        embedder=self.embedder, reranker=self.reranker,
                                        on_event=on_event or (lambda e, i: None), progress=progress)
            write_manifest(build_dir, dict(doc.manifest, updated=now(), graph_failed=outcome["still_failed"]))
            return outcome

        outcome = self._new_generation(doc, retry, "the graph retry", "bookindex index")
        new = self._doc(doc.doc_id, "retried")
        new.retry = outcome
        return new

    def refresh_identity(self, doc: str, *, write: bool = True) -> tuple[StoredDocument, dict[str, Any], dict[str, Any]]:
        """Read a stored document's identity (`parsing.identity`) again from its stored tree, the
        blocks it was built from (`tree_blocks`): no parsing, no embedding, so a library built
        before an identity change is brought up to it in seconds. Returns the document, the
        identity its manifest held and the one read now.

        The stored BM25 index is checked the same way (`lexical_index_current`): a library built
        before documents stored one gets it here (`lexical_stale` on the returned document says
        whether it was missing or of other passages). The tree itself gets today's grouping of
        its contents, lists and index and its headings' numbers where that keeps every node id
        and text (`parsing.dispatch.regroup_tree`; `tree_regrouped` says how many nodes changed).

        When any differs (and `write`), the new manifest, tree and/or index replace the old in a new
        generation, as a graph retry does: the folder hard-linked under .tmp/, the changed files
        written there, the catalog entry swapped with one os.replace of library.json (so routers
        and caches keyed by the catalog see the change). Status "refreshed", else "unchanged" (or
        "stale" without `write`).
        """
        target = self.get(doc)
        tree, regrouped = regroup_tree(target.tree)
        old = dict(target.manifest.get("identity") or {})
        new = identify(tree_blocks(tree)).to_dict()
        lexical_ok = lexical_index_current(target.dir, tree)
        graph_ok = graph_index_current(target.dir)
        statements_ok = statements_current(target.dir, tree_digest(target.dir)) and not regrouped
        target.unload()
        target.tree_regrouped = regrouped
        current = new == old and lexical_ok and graph_ok and statements_ok and not regrouped
        if current or not write:
            target.status = "unchanged" if current else "stale"
            target.lexical_stale, target.graph_stale = not lexical_ok, not graph_ok
            target.statements_stale = not statements_ok
            return target, old, new

        def rewrite(build_dir: Path) -> None:
            target.close()  # the copy holds its files: the old generation can go with the swap
            manifest = dict(target.manifest, identity=new) if new != old else dict(target.manifest)
            if regrouped:  # same ids, same texts: the vectors and the graph stay as they are
                write_tree(build_dir, tree)
                manifest.update(nodes=len(tree), sections=len(tree.sections()))
            if manifest != target.manifest:
                write_manifest(build_dir, dict(manifest, updated=now()))
            if not lexical_ok or regrouped:  # from before the folder stored one, of other passages, or another tree.json
                write_lexical_index(build_dir, tree)
            if not graph_ok:  # from before the folder stored G's query form: graph.json read, not rebuilt
                write_graph_index(build_dir, load_graph(build_dir))
            if not statements_ok:  # from before the folder stored its tables' rows, of other code or another tree
                write_statements(build_dir, tree, tree_digest(build_dir))

        with self.writer("refresh"):
            self._new_generation(target, rewrite, "the refresh", "bookindex refresh")
        refreshed = self._doc(target.doc_id, "refreshed")
        refreshed.lexical_stale, refreshed.graph_stale = not lexical_ok, not graph_ok
        refreshed.statements_stale = not statements_ok
        refreshed.tree_regrouped = regrouped
        return refreshed, old, new

    def _new_generation(self, doc: StoredDocument, change: Callable[[Path], T], during: str, again: str) -> T:
        """Copy `doc`'s generation folder under .tmp/ (files hard-linked: whatever `change` writes
        there must be a new file renamed into place, never written through), let `change` write
        into the copy, then swap it in for `doc`'s generation with one os.replace of library.json,
        as add() does. Another process changing the document meanwhile is an InputError telling
        the user to run `again`; the copy is removed on any failure."""
        tmp_root = self.catalog.staging_root()
        tmp_root.mkdir(parents=True, exist_ok=True)
        build_dir = tmp_root / generation_name(doc.doc_id)
        try:
            shutil.copytree(doc.dir, build_dir, copy_function=_link_or_copy)
            result = change(build_dir)
            if not self.catalog.swap_generation(doc.doc_id, doc.dir.name, build_dir):
                raise InputError(f"{doc.name}: changed by another process during {during}; run `{again}` again")
        except BaseException:
            shutil.rmtree(build_dir, ignore_errors=True)
            raise
        finally:
            self.catalog.discard_staging_root()
        return result

    def remove(self, doc: str) -> StoredDocument:
        """Remove a document (by id or name); atomic like add()."""
        target = self.get(doc)
        with self.catalog.locked():
            if target.doc_id not in self.catalog.entries():
                raise InputError(f"{self.root}: {target.name} ({target.doc_id}) was removed by another process")
            target.close()  # what is returned only describes the removed document
            self.catalog.drop(target.doc_id)
        target.status = "removed"
        return target


def _link_or_copy(src: str, dst: str) -> None:
    """Hard-link when possible (same file system, no data copied), else copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _get_dotted(obj: Any, key: str) -> Any:
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj
