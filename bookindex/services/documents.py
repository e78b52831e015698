"""The one cache of opened documents, and the views read from a stored document.

Two kinds of opened document are kept, each least recently used out:
- a query context (`IndexContext`): the stored `DocumentIndex` with the providers attached and the
  views operators derive from it (text index, query vectors, units, graph adjacency), which cost
  seconds to rebuild, so they are kept across questions;
- a browsed document (`StoredDocument`): its tree and graph read once per generation for UIs
  clicking through a tree, with no providers loaded (0.2-0.4 s saved per request on a 300-page
  manual).
Both are keyed by (doc_id, generation folder), so a re-indexed document is opened afresh and the
superseded generation is dropped (`forget`, `prune`). Each holds its generation's reader lease
for as long as it lives (files are read lazily: tree, graph, vectors, images), so a request still
using a dropped one reads on undisturbed; when the last one lets go the lease is released and
storage removes the superseded folder.

It also keeps what is built over all of a library's documents at once (the document router, the
pooled library-wide index), rebuilt when the catalog changes, and the skill folders opened for
navigation, re-read when their skills.json changes: every opened thing of a process lives here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from bookindex.core.errors import IndexFormatError, InputError
from bookindex.core.memory import release_freed_memory
from bookindex.core.model import Node
from bookindex.indexing.document_folder import query_files_bytes
from bookindex.indexing.library import DocumentLibrary
from bookindex.indexing.stored_document import StoredDocument
from bookindex.operators.context import IndexContext
from bookindex.services.providers import ProviderSet
from bookindex.services.views import DocumentInfo, NodeView, PageInfo
from bookindex.skills.model import is_skill_dir
from bookindex.skills.navigator.opened import OpenedSkills

T = TypeVar("T")


class StoredView(Protocol[T]):
    """A library-wide view kept on disk for one state of the catalog (`DocumentCache.library_view`)."""

    def load(self, key: tuple[tuple[str, str], ...]) -> T | None: ...

    def save(self, key: tuple[tuple[str, str], ...], view: T) -> None: ...


# what an opened document holds in memory, as a multiple of its query files on disk (tree, graph,
# vectors, BM25 index): parsed JSON, the derived views, the vectors as read. Measured 2.0-4.0x
# (median 2.4x) on MMLongBench documents, RSS after one question against the files' sizes.
RESIDENT_PER_STORED_BYTE = 2.5
BROWSED_SHARE = 0.25  # browsed documents (tree and graph only) may hold this share of the budget


class DocumentCache:
    """Opened documents of one library, bounded in bytes, shared by every request of the process.

    The budget is `storage.open_documents_mb` (`budget_mb` overrides it): query contexts are
    dropped, least recently used first, until the estimated memory of those kept fits (the one
    just opened always stays); browsed documents get a quarter of it. `capacity`, when given,
    also caps how many contexts are kept (an evaluation harness opening every document once)."""

    def __init__(self, library: Callable[[], DocumentLibrary], providers: ProviderSet, capacity: int | None = None,
                 budget_mb: float | None = None) -> None:
        self._library = library
        self.providers = providers
        self._capacity = max(1, capacity) if capacity is not None else None
        self._budget_mb = budget_mb
        self._opened: OrderedDict[tuple[str, str], IndexContext] = OrderedDict()
        self._browsed: OrderedDict[tuple[str, str], StoredDocument] = OrderedDict()
        self._sizes: dict[tuple[str, str], int] = {}  # estimated resident bytes per generation
        self._library_views: dict[str, tuple[tuple[tuple[str, str], ...], Any]] = {}
        self._skill_folders: dict[str, tuple[int, OpenedSkills]] = {}
        self._lock = threading.RLock()

    @property
    def budget_bytes(self) -> int:
        """The memory opened query contexts may hold, in bytes (an estimate: `resident_bytes`)."""
        mb = self._budget_mb if self._budget_mb is not None else self.providers.settings.storage.open_documents_mb
        return int(mb * 2**20)

    def resident_bytes(self, stored: StoredDocument) -> int:
        """The estimated memory of `stored` opened and asked: `RESIDENT_PER_STORED_BYTE` times
        its query files' size (read once per generation)."""
        key = (stored.doc_id, stored.dir.name)
        size = self._sizes.get(key)
        if size is None:
            size = self._sizes[key] = int(RESIDENT_PER_STORED_BYTE * query_files_bytes(stored.dir))
        return size

    def held_bytes(self) -> int:
        """The estimated memory of the query contexts kept now."""
        with self._lock:
            return sum(self._sizes.get(k, 0) for k in self._opened)

    @property
    def library(self) -> DocumentLibrary:
        """The library the documents come from (opened by the Engine on first use)."""
        return self._library()

    def open(self, doc: str) -> IndexContext:
        """The query context of `doc` (id, file name or stem). It holds the reader lease of its
        generation (through its `StoredDocument`) for as long as anyone holds the context: a
        request still reading a dropped context keeps its folder on disk until it lets go."""
        stored = self.library.get(doc)
        key = (stored.doc_id, stored.dir.name)
        with self._lock:
            ctx = self._opened.get(key)
            if ctx is not None:
                self._opened.move_to_end(key)
                return ctx
        ctx = self._context(stored)
        with self._lock:
            dropped = [k for k in self._opened if k[0] == stored.doc_id and k != key]
            for old in dropped:
                del self._opened[old]  # a superseded generation: its reader lease goes with it
            self._opened[key] = ctx
            self.resident_bytes(stored)
            evicted = self._evict(self._opened, self.budget_bytes, self._capacity)
            dropped += evicted
        self._retire(dropped)
        if evicted:  # a document's tree, graph and indexes were freed: give the memory back
            release_freed_memory()
        return ctx

    def browse(self, doc: str) -> StoredDocument:
        """`doc` opened for reading its tree and graph, without providers."""
        stored = self.library.get(doc)
        key = (stored.doc_id, stored.dir.name)
        with self._lock:
            ctx = self._opened.get(key)
            opened = ctx.index if ctx is not None else None
            if isinstance(opened, StoredDocument):  # already in memory: not read a second time
                stored.close()
                return opened
            kept = self._browsed.get(key)
            if kept is not None:
                self._browsed.move_to_end(key)
                stored.close()
                return kept
            dropped = [k for k in self._browsed if k[0] == stored.doc_id]
            for old in dropped:
                del self._browsed[old]
            self._browsed[key] = stored
            self.resident_bytes(stored)
            dropped += self._evict(self._browsed, int(BROWSED_SHARE * self.budget_bytes), None)
        self._retire(dropped)
        return stored

    def _evict(self, kept: OrderedDict[tuple[str, str], Any], budget: int, count: int | None) -> list[tuple[str, str]]:
        """Drop the least recently used of `kept` until their estimated memory fits `budget`
        (and their number `count`); the most recent one always stays. The keys dropped."""
        held = sum(self._sizes.get(k, 0) for k in kept)
        out: list[tuple[str, str]] = []
        while len(kept) > 1 and (held > budget or (count is not None and len(kept) > count)):
            old, _ = kept.popitem(last=False)
            held -= self._sizes.get(old, 0)
            out.append(old)
        return out

    def forget(self, doc_id: str) -> None:
        """Drop every opened generation of a document (after it was re-indexed or removed)."""
        with self._lock:
            dropped = [k for k in [*self._opened, *self._browsed] if k[0] == doc_id]
            for key in dropped:
                self._opened.pop(key, None)
                self._browsed.pop(key, None)
        self._retire(dropped)

    def prune(self) -> None:
        """Drop the opened generations the catalog no longer names: versions another process
        (a server's build process, `bookindex index`) replaced or removed. Without this they
        stayed cached, with their leases, until the same document was next opened."""
        entries = self.library.catalog.entries()
        with self._lock:
            dropped = [k for k in [*self._opened, *self._browsed]
                       if (entries.get(k[0]) or {}).get("dir") != k[1]]
            for key in dropped:
                self._opened.pop(key, None)
                self._browsed.pop(key, None)
        self._retire(dropped)

    def _retire(self, dropped: list[tuple[str, str]]) -> None:
        """After dropping generations: their leases go when the last request using them lets
        go, and the folder of a superseded one with its last lease (storage's sweeping thread;
        asked here too, so a version kept only by unreachable objects is collected)."""
        if dropped:
            with self._lock:
                for key in dropped:
                    if key not in self._opened and key not in self._browsed:
                        self._sizes.pop(key, None)
            self.library.catalog.sweep_soon({generation for _, generation in dropped})

    def library_view(self, name: str, build: Callable[[list[StoredDocument]], T],
                     stored: StoredView[T] | None = None) -> T:
        """A view over all the library's documents (`build(documents)`), kept until the catalog
        changes: the document router, the pooled library-wide index. With `stored`, the view is
        first looked for on disk for this state of the catalog, and stored once built (the
        router: a process then starts without reading any document)."""
        key = self.catalog_key()
        with self._lock:
            kept = self._library_views.get(name)
            if kept is not None and kept[0] == key:
                return kept[1]
        view = stored.load(key) if stored is not None else None
        if view is None:
            view = build(self.library.documents)
            release_freed_memory()  # building it read every document
            if stored is not None:
                stored.save(key, view)
        with self._lock:
            self._library_views[name] = (key, view)
        return view

    def catalog_key(self) -> tuple[tuple[str, str], ...]:
        """The library's state as its catalog names it: (doc id, generation folder) of each
        document, in catalog order. A kept view of the same state costs no document opened."""
        catalog = self.library.catalog
        entries = catalog.entries()
        return tuple((i, str(entries[i]["dir"])) for i in catalog.ids())

    def skill_folder(self, folder: str | Path) -> OpenedSkills:
        """A skill folder opened once (re-read when its skills.json changes)."""
        path = Path(folder).expanduser().resolve()
        if not is_skill_dir(path):
            raise InputError(f"{folder}: not a skill tree (no skills.json); build one with `bookindex skills build`")
        stamp = (path / "skills.json").stat().st_mtime_ns
        with self._lock:
            kept = self._skill_folders.get(str(path))
            if kept is None or kept[0] != stamp:
                kept = (stamp, OpenedSkills(path))
                self._skill_folders[str(path)] = kept
            return kept[1]

    def _context(self, stored: StoredDocument) -> IndexContext:
        p = self.providers
        embedder = p.embedder
        ids, mat = stored.node_vectors()
        if mat is not None and mat.shape[1] != embedder.dim:
            built = stored.manifest.get("embedding") or {}
            raise IndexFormatError(
                f"{stored.dir}: node vectors were built with embedding model {built.get('model', '?')!r} "
                f"(dim {mat.shape[1]}), but the configured embedder {embedder.name!r} has dim "
                f"{embedder.dim}; re-index the document or configure that model")
        return IndexContext(index=stored, settings=p.settings, llm=p.llm, embedder=embedder,
                            reranker=p.reranker, vlm=p.vlm, queries=p.query_vectors)

    # -- views of a browsed document ------------------------------------------------------
    def node(self, node_id: str) -> NodeView:
        """One node with where it sits (document, page, box, ancestors' titles)."""
        return node_view(self.browse(self.library.doc_of_node(node_id).doc_id), node_id)

    def page_info(self, doc: str) -> PageInfo:
        """Page sizes and printed page labels of a document (for page viewers)."""
        d = self.browse(doc)
        meta = d.tree.meta
        sizes = [(float(w), float(h)) for w, h in meta.get("page_sizes") or []]
        return PageInfo(doc_id=d.doc_id, pages=int(d.manifest.get("pages") or meta.get("pages") or len(sizes)),
                        sizes=sizes, labels=d.page_labels)


def node_view(d: StoredDocument, node_id: str) -> NodeView:
    tree = d.tree
    if node_id not in tree.nodes:
        raise InputError(f"{d.name}: no node {node_id!r}")
    n: Node = tree.nodes[node_id]
    image = d.image_file(node_id)
    return NodeView(id=n.id, doc_id=d.doc_id, document=d.name, type=n.type, level=n.level,
                    title=n.title, text=n.text, page_idx=n.page_idx, page_end_idx=n.page_end_idx,
                    bbox=n.bbox, parent_path=[p.title for p in tree.parent_path(n)],
                    children=list(n.children), meta=dict(n.meta),
                    image_file=str(image) if image is not None else None,
                    page_label=tree.page_label(n.page_idx), page_end_label=tree.page_label(n.page_end_idx),
                    number=n.number, role=n.role)


def document_info(d: StoredDocument) -> DocumentInfo:
    m = d.manifest
    return DocumentInfo(doc_id=d.doc_id, name=d.name, source=m.get("source"), pages=m.get("pages"),
                        parser=m.get("parser"), nodes=m.get("nodes"), sections=m.get("sections"),
                        graph=bool(m.get("graph")), created=m.get("created"), manifest=dict(m))
