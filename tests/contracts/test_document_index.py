"""Every `DocumentIndex` passes the DocumentIndex contract: the in-memory MemoryIndex (bare, and
with a graph, vectors and page labels) and the library's on-disk StoredDocument (a Markdown file
with an offline graph, and a PDF with printed page labels)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from fakes import FakeEmbedder
from library_helpers import handbook_markdown
from retrieval_fixture import make_graph, make_tree

from bookindex.core.config import load_settings
from bookindex.core.protocols import DocumentIndex
from bookindex.indexing.library import DocumentLibrary
from bookindex.operators.context import MemoryIndex
from contracts.document_index import DocumentIndexContract

LABELS = ["i", "ii", "iii", "iv"] + [str(k) for k in range(1, 9)]  # 12 pages: front matter, then 1..8


class TestBareMemoryIndex(DocumentIndexContract):
    @pytest.fixture
    def document_index(self) -> DocumentIndex:
        return MemoryIndex(tree=make_tree())


class TestMemoryIndexWithGraphVectorsAndLabels(DocumentIndexContract):
    HAS_VECTORS = True
    HAS_ENTITIES = True
    PAGE_LABELS = LABELS

    @pytest.fixture
    def document_index(self) -> DocumentIndex:
        tree = make_tree()
        tree.meta["page_labels"] = tuple(LABELS)  # as stored: any sequence; handed out as a list
        graph = make_graph(tree)
        emb = FakeEmbedder(dim=64, word=r"\w+")
        nodes = [n for n in tree.walk() if n.type != "document"]
        ents = sorted(graph.entities)
        return MemoryIndex(tree=tree, graph=graph,
                           node_ids=[n.id for n in nodes], node_matrix=emb.encode([n.content for n in nodes]),
                           entity_ids=ents, entity_matrix=emb.encode([graph.entities[e].name for e in ents]))


def _settings(**over: object) -> object:
    return load_settings(env={}, overrides={"cache.enabled": False, **over})


class TestStoredMarkdownDocument(DocumentIndexContract):
    """Built once for the class: a Markdown handbook with an offline (no-LLM) graph."""

    HAS_VECTORS = True
    HAS_ENTITIES = True

    @pytest.fixture(scope="class")
    def document_index(self, tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
        root = tmp_path_factory.mktemp("stored-md")
        src = root / "handbook.md"
        src.write_text(handbook_markdown())
        lib = DocumentLibrary.open(root / "lib", _settings(**{"graph.extractor": "offline"}), embedder=FakeEmbedder())
        doc_id = lib.add(src).doc_id
        return DocumentLibrary.open(root / "lib").get(doc_id)  # read back from disk by a fresh store


def _labelled_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    for k, text in enumerate(["Preface: why this manual exists.", "Contents of the manual.",
                              "Installation with the package manager needs a C compiler."]):
        page = doc.new_page(width=400, height=400)
        page.insert_text((50, 60), f"{k + 1} Chapter {k + 1}", fontsize=16)
        page.insert_text((50, 100), text, fontsize=10)
    doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
                         {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1}])
    doc.save(str(path))
    return path


class TestStoredPdfWithPageLabels(DocumentIndexContract):
    HAS_VECTORS = True
    PAGE_LABELS = ["i", "ii", "1"]

    @pytest.fixture(scope="class")
    def document_index(self, tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
        root = tmp_path_factory.mktemp("stored-pdf")
        src = _labelled_pdf(root / "labelled.pdf")
        lib = DocumentLibrary.open(root / "lib", _settings(**{"graph.enabled": False}), embedder=FakeEmbedder())
        doc_id = lib.add(src).doc_id
        return DocumentLibrary.open(root / "lib").get(doc_id)
