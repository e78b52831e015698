"""The `DocumentIndex` contract: one indexed document as operators read it.

Operators look up vector rows by id, follow GT-links into the tree and score leaves with the
lexical index, so ids and rows must line up and every id must name a node (or entity) that
exists; the lexical index is built once per opened document and shared by every question.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import DocumentTree
from bookindex.core.protocols import DocumentIndex, LexicalIndex


def _check_aligned(ids: list[str], mat: np.ndarray | None, known: set[str]) -> None:
    assert isinstance(ids, list) and len(set(ids)) == len(ids)
    if mat is None:
        assert ids == []
        return
    assert isinstance(mat, np.ndarray) and mat.dtype == np.float32 and mat.ndim == 2
    assert mat.shape[0] == len(ids) > 0
    assert set(ids) <= known
    assert np.allclose(np.linalg.norm(mat, axis=1), 1.0, atol=1e-4)


class DocumentIndexContract:
    """Every `DocumentIndex`. A subclass provides `document_index` and states what its document
    holds: node vectors, a graph with entity vectors, the printed page labels (None: none)."""

    HAS_VECTORS = False
    HAS_ENTITIES = False
    PAGE_LABELS: list[str] | None = None

    @pytest.fixture
    def document_index(self) -> DocumentIndex:
        raise NotImplementedError("subclass provides `document_index`")

    def test_satisfies_the_protocol(self, document_index: DocumentIndex) -> None:
        assert isinstance(document_index, DocumentIndex)
        assert isinstance(document_index.tree, DocumentTree)
        assert isinstance(document_index.graph, KnowledgeGraph)
        assert isinstance(document_index.manifest, dict)

    def test_identity_matches_the_tree(self, document_index: DocumentIndex) -> None:
        assert document_index.doc_id == document_index.tree.doc_id and document_index.doc_id
        assert isinstance(document_index.name, str) and document_index.name
        folder = document_index.folder
        assert folder is None or (isinstance(folder, Path) and folder.is_dir())

    def test_node_vectors_are_row_aligned_with_tree_nodes(self, document_index: DocumentIndex) -> None:
        ids, mat = document_index.node_vectors()
        _check_aligned(ids, mat, set(document_index.tree.nodes))
        assert (mat is not None) == self.HAS_VECTORS
        ids2, mat2 = document_index.node_vectors()
        assert ids2 == ids and (mat2 is None if mat is None else mat2 is not None and np.array_equal(mat2, mat))

    def test_entity_vectors_are_row_aligned_with_graph_entities(self, document_index: DocumentIndex) -> None:
        ids, mat = document_index.entity_vectors()
        _check_aligned(ids, mat, set(document_index.graph.entities))
        assert (mat is not None) == self.HAS_ENTITIES
        if mat is not None:
            assert set(ids) == set(document_index.graph.entities)

    def test_graph_links_point_at_tree_nodes(self, document_index: DocumentIndex) -> None:
        graph, tree = document_index.graph, document_index.tree
        assert bool(graph.entities) == self.HAS_ENTITIES
        for e in graph.entities.values():
            assert e.node_ids and set(e.node_ids) <= set(tree.nodes), e
            assert all(e.id in {x.id for x in graph.entities_of(n)} for n in e.node_ids)
        assert all(r.source in graph.entities and r.target in graph.entities for r in graph.relations)

    def test_lexical_index_covers_the_leaves_with_text(self, document_index: DocumentIndex) -> None:
        tree = document_index.tree
        lex = document_index.lexical_index()
        assert isinstance(lex, LexicalIndex)
        assert document_index.lexical_index() is lex  # built once per opened index
        leaves = {n.id for n in tree.leaves() if n.content.strip()}
        assert leaves and len(set(lex.ids)) == len(lex.ids) and set(lex.ids) == leaves
        leaf = tree.nodes[lex.ids[-1]]
        scores = lex.scores(leaf.content)
        assert scores.shape == (len(lex.ids),) and scores[-1] > 0

    def test_page_labels_are_strings_one_per_page(self, document_index: DocumentIndex) -> None:
        labels = document_index.page_labels
        assert labels == self.PAGE_LABELS
        if labels is None:
            return
        assert type(labels) is list and all(isinstance(x, str) for x in labels)
        assert len(labels) == document_index.tree.page_count
        labels.append("mutated")  # a copy: callers cannot change the index
        assert len(document_index.page_labels or []) == document_index.tree.page_count
