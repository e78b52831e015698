"""One indexed document read from its generation folder: the on-disk `DocumentIndex`.

Everything is read through bookindex.indexing.document_folder on first use and kept, so one
opened document answers many questions without touching the disk again. A reader lease (taken
by the catalog) keeps the folder on disk while the object lives.
"""

from __future__ import annotations

import weakref
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import DocumentTree, Entity, Relation
from bookindex.core.protocols import LexicalIndex
from bookindex.indexing.document_folder import (
    LEXICAL_DIR,
    load_entity_vectors,
    load_graph,
    read_build_report,
    read_node_vectors,
    read_tree,
)
from bookindex.indexing.graph_index import StoredGraph, read_adjacency, read_graph_index, read_gt_links
from bookindex.indexing.stored_statements import offer_stored_statements
from bookindex.providers.lexical import document_lexical_index, document_row_index
from bookindex.storage.leases import Lease

if TYPE_CHECKING:
    from bookindex.indexing.library import DocumentLibrary


class StoredDocument:
    """One indexed document: its manifest, and lazily its tree, graph, vectors and lexical index.

    It is the indexing layer's `DocumentIndex` over a document folder: everything is read on
    first use and kept, so one opened document answers many questions without touching the
    disk again.
    """

    def __init__(self, library: DocumentLibrary, doc_id: str, directory: Path, manifest: dict[str, Any],
                 status: str = "stored", lease: Lease | None = None) -> None:
        self.library = library
        # the generation folder stays on disk while this object lives (or until close())
        self._release = weakref.finalize(self, lease.release) if lease is not None else None
        self.doc_id = doc_id
        self.dir = directory
        self.manifest = manifest
        self.status = status  # "added", "replaced", "unchanged", "retried" after DocumentLibrary.add; else "stored"
        self.retry: dict[str, Any] | None = None  # after status "retried": the graph retry outcome
        self.graph_stale = False  # after refresh_identity: its graph index was missing or of another graph.json
        self.lexical_stale = False  # after refresh_identity: its stored BM25 index was missing or of other passages
        self.statements_stale = False  # after refresh_identity: its stored tables' rows were missing or stale
        self.tree_regrouped = 0  # after refresh_identity: nodes its tree regrouped (contents, index, numbers)
        self._tree: DocumentTree | None = None
        self._tree_digest = ""  # of the tree.json read: the stored BM25 indexes say which tree they are of
        self._graph: KnowledgeGraph | None = None
        self._lexical: LexicalIndex | None = None
        self._rows: LexicalIndex | None = None  # None is also a value: a document without tables
        self._rows_read = False
        self._node_vectors: tuple[list[str], np.ndarray | None] | None = None
        self._entity_vectors: tuple[list[str], np.ndarray | None] | None = None

    def unload(self) -> None:
        """Forget what was loaded (tree, graph, lexical index, vectors); they load again on use.
        A pass over every document of a library (its router) reads one at a time: kept, the
        whole library would be in memory at once (and its freed memory not given back)."""
        self._tree = None
        self._graph = None
        self._lexical = None
        self._rows, self._rows_read = None, False
        self._node_vectors = None
        self._entity_vectors = None

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
            self._tree, self._tree_digest = read_tree(self.dir)
            offer_stored_statements(self.dir, self._tree, self._tree_digest)
        return self._tree

    @property
    def graph(self) -> KnowledgeGraph:
        """G: the stored entities with the relations read on first use (`graph_index`), else
        graph.json whole (a folder indexed before the graph index was stored)."""
        if self._graph is None:
            stored = read_graph_index(self.dir, partial(_relations, self.dir))
            self._graph = stored if stored is not None else load_graph(self.dir)
        return self._graph

    def entity_adjacency(self) -> tuple[list[str], dict[str, int], Any] | None:
        """The graph's weighted entity adjacency as stored (`graph_index`); None when the folder
        stores none for its graph (the reasoner then builds it from the relations)."""
        graph = self.graph
        if not isinstance(graph, StoredGraph):
            return None
        return read_adjacency(self.dir, list(graph.entities))

    def gt_links(self) -> tuple[list[str], Any, Any] | None:
        """The graph's GT-links as stored (`graph_index`); None when the folder stores none."""
        graph = self.graph
        if not isinstance(graph, StoredGraph):
            return None
        return read_gt_links(self.dir, len(graph.entities))

    @property
    def page_labels(self) -> list[str] | None:
        labels = self.tree.meta.get("page_labels")
        return list(labels) if labels else None

    @property
    def build_report(self) -> dict[str, Any]:
        """build.json: stage timings, graph report (failed nodes, retries), LLM ledger."""
        return read_build_report(self.dir)

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
            tree = self.tree
            self._lexical = document_lexical_index(tree, self.dir / LEXICAL_DIR, self._tree_digest)
        return self._lexical

    def table_row_index(self) -> LexicalIndex | None:
        if not self._rows_read:
            tree = self.tree
            self._rows, self._rows_read = document_row_index(tree, self.dir / LEXICAL_DIR, self._tree_digest), True
        return self._rows

    def image_file(self, node_id: str) -> Path | None:
        """Absolute path of a node's image (stored relative to the document folder)."""
        p = self.tree[node_id].meta.get("image_path")
        if not p:
            return None
        q = Path(p)
        return q if q.is_absolute() else self.dir / q

    def __repr__(self) -> str:
        return f"StoredDocument({self.doc_id!r}, {self.name!r}, pages={self.manifest.get('pages')})"


def _relations(doc_dir: Path) -> list[Relation]:
    """The relations of a folder's graph.json (a module function: a bound method would tie each
    stored graph to its document in a reference cycle)."""
    return load_graph(doc_dir).relations
