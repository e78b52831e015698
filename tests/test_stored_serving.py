"""What a query process opens is stored ready to read: the library router (`.router/`), a
document's BM25 index marked with the tree it was read from, and its graph's query form
(`graph_index/`: entities alone, the entity adjacency); the opened documents are kept within a
budget of bytes. A library written before these files existed still opens and answers, and
`bookindex refresh` adds them without parsing or embedding anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from fakes import ExtractionScript, FakeEmbedder, FakeLLM
from library_helpers import handbook_markdown
from typer.testing import CliRunner

from bookindex.cli.app import app
from bookindex.core.config import load_settings
from bookindex.engine import Engine
from bookindex.indexing import stored_document
from bookindex.indexing.document_folder import LEXICAL_DIR, load_graph, load_tree, tree_digest
from bookindex.indexing.graph_index import GRAPH_INDEX_DIR, GT_LINKS_FILE, StoredGraph, graph_index_current
from bookindex.indexing.library import DocumentLibrary
from bookindex.indexing.stored_document import StoredDocument
from bookindex.operators.graph_matrices import graph_adjacency, gt_matrix, gt_matrix_from_links
from bookindex.providers import lexical
from bookindex.providers.lexical import document_lexical_index, document_row_index, save_document_lexical_index
from bookindex.routing.pooled import PooledIndex
from bookindex.services.stored_router import ROUTER_DIR

TOPICS = {
    "bakery.md": ("Bread baking", "Knead the dough, proof the yeast and bake the loaf in a hot oven until the crust browns."),
    "rockets.md": ("Rocket engines", "The booster burns liquid fuel; the engine's thrust lifts the rocket into orbit."),
    "gardens.md": ("Garden care", "Water the roses at dawn, prune the hedges in spring and mulch the vegetable beds."),
    "harbour.md": ("Harbour pilots", "A pilot boards each tanker at the breakwater and steers it past the sandbanks."),
}
QUESTIONS = ["How long is the dough proofed before the loaf is baked?", "What lifts the rocket into orbit?",
             "When are the hedges pruned?", "Who steers a tanker past the sandbanks?"]


def _settings(cache: Path, **overrides: object) -> object:
    return load_settings(env={}, overrides={"llm.provider": "none", "cache.path": str(cache), **overrides})


def _write(folder: Path, name: str) -> Path:
    title, text = TOPICS[name]
    f = folder / name
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(f"# {title}\n\n## Overview\n\n{text}\n\n## Details\n\n{text} {text}\n", encoding="utf-8")
    return f


@pytest.fixture
def three(tmp_path: Path) -> Path:
    """A library of three small documents on different topics (no graph)."""
    engine = Engine(tmp_path / "lib", _settings(tmp_path / "cache"), embedder=FakeEmbedder.words())
    for name in list(TOPICS)[:3]:
        engine.index(_write(tmp_path / "src", name), graph=False)
    return tmp_path / "lib"


def _ranking(engine: Engine, question: str) -> list[tuple[str, float]]:
    return [(r.doc_id, r.score) for r in engine.routing.rank(question)]


def test_a_stored_router_ranks_as_the_built_one_and_opens_no_document(three: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    first = Engine(three, _settings(tmp_path / "cache"), embedder=FakeEmbedder.words())
    built = {q: _ranking(first, q) for q in QUESTIONS}
    (stored,) = [p for p in (three / ROUTER_DIR).iterdir() if p.name.startswith("router-")]
    assert (stored / "router.json").is_file() and (stored / "node_vectors.npy").is_file()

    def no_tree(self: StoredDocument) -> None:
        raise AssertionError(f"{self.name}: a tree was read to route")

    monkeypatch.setattr(StoredDocument, "tree", property(no_tree))
    embedder = FakeEmbedder.words()
    second = Engine(three, _settings(tmp_path / "cache"), embedder=embedder)
    assert {q: _ranking(second, q) for q in QUESTIONS} == built
    assert embedder.calls == len(QUESTIONS)  # the questions only: no document embedded again


def test_the_pooled_index_of_flat_search_is_stored_and_read_back(three: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    first = Engine(three, _settings(tmp_path / "cache"), embedder=FakeEmbedder.words())
    hits = {q: [(h.node_id, h.scores) for h in first.routing.search(q, k=3)] for q in QUESTIONS}
    assert [p.name.split("-")[0] for p in sorted((three / ROUTER_DIR).iterdir())] == ["pooled"]

    def no_build(self: PooledIndex, *args: object) -> None:
        raise AssertionError("the pooled index was built again")

    monkeypatch.setattr(PooledIndex, "__init__", no_build)
    second = Engine(three, _settings(tmp_path / "cache"), embedder=FakeEmbedder.words())
    assert {q: [(h.node_id, h.scores) for h in second.routing.search(q, k=3)] for q in QUESTIONS} == hits


def test_a_changed_library_stores_a_new_router_and_drops_the_old(three: Path, tmp_path: Path) -> None:
    engine = Engine(three, _settings(tmp_path / "cache"), embedder=FakeEmbedder.words())
    engine.routing.router()
    before = {p.name for p in (three / ROUTER_DIR).iterdir()}
    assert len(before) == 1
    added = engine.index(_write(tmp_path / "src", "harbour.md"), graph=False)
    ids = engine.routing.router().doc_ids
    assert len(ids) == 4 and added.doc_id in ids
    after = {p.name for p in (three / ROUTER_DIR).iterdir()}
    assert len(after) == 1 and after != before
    fresh = Engine(three, _settings(tmp_path / "cache"), embedder=FakeEmbedder.words())
    assert fresh.routing.rank(QUESTIONS[3])[0].doc_id == added.doc_id


def test_the_document_cache_keeps_what_fits_its_budget_of_bytes(three: Path, tmp_path: Path) -> None:
    engine = Engine(three, _settings(tmp_path / "cache"), embedder=FakeEmbedder.words())
    docs = [d.doc_id for d in engine.library.documents]
    cache = engine.cache
    sizes = {d: cache.resident_bytes(engine.library.get(d)) for d in docs}
    assert all(s > 0 for s in sizes.values())
    assert cache.budget_bytes == 300 * 2**20  # storage.open_documents_mb's default
    for d in docs:
        cache.open(d)
    assert cache.held_bytes() == sum(sizes.values())  # all three fit 300 MB

    budget = sizes[docs[1]] + sizes[docs[2]]
    tight = Engine(three, _settings(tmp_path / "cache", **{"storage.open_documents_mb": budget / 2**20}),
                   embedder=FakeEmbedder.words())
    for d in docs:
        tight.cache.open(d)
    assert tight.cache.held_bytes() <= budget
    kept = [k[0] for k in tight.cache._opened]
    assert kept == docs[1:]  # the least recently used went first

    tiny = Engine(three, _settings(tmp_path / "cache", **{"storage.open_documents_mb": 0.0001}),
                  embedder=FakeEmbedder.words())
    for d in docs:
        tiny.cache.open(d)
    assert [k[0] for k in tiny.cache._opened] == docs[-1:]  # larger than the budget: the one in use stays


def test_a_bm25_index_marked_with_its_tree_opens_without_reading_the_passages(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    lib = Engine(tmp_path / "lib", _settings(tmp_path / "cache"), embedder=FakeEmbedder.words())
    doc = lib.library.get(lib.index(_write(tmp_path / "src", "bakery.md"), graph=False).doc_id)
    tree, digest = load_tree(doc.dir), tree_digest(doc.dir)
    expected = document_lexical_index(tree).scores("bake the loaf")
    folder = tmp_path / "marked"
    save_document_lexical_index(tree, folder, digest)

    def no_passages(tree: object) -> None:
        raise AssertionError("the passages were read again")

    monkeypatch.setattr(lexical, "document_passages", no_passages)
    monkeypatch.setattr(lexical, "table_row_passages", no_passages)
    opened = document_lexical_index(tree, folder, digest)
    assert list(opened.scores("bake the loaf")) == list(expected)
    assert document_row_index(tree, folder, digest) is None  # no tables, known without reading them
    with pytest.raises(AssertionError, match="read again"):  # another tree.json: compared the slow way
        document_lexical_index(tree, folder, "0" * 64)


def _graph_library(tmp_path: Path) -> tuple[Path, DocumentLibrary]:
    """The fixture handbook indexed with a graph (scripted extraction)."""
    src = tmp_path / "src" / "handbook.md"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(handbook_markdown())
    settings = load_settings(env={}, overrides={"cache.enabled": False, "graph.extractor": "llm",
                                                "graph.batch_tokens": 200})
    lib = DocumentLibrary.open(tmp_path / "lib", settings, embedder=FakeEmbedder(),
                               llm=FakeLLM(ExtractionScript.for_library(), model="scripted"))
    lib.add(src)
    return tmp_path / "lib", lib


def test_the_stored_graph_reads_entities_and_adjacency_and_relations_only_when_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, lib = _graph_library(tmp_path)
    (doc,) = lib.documents
    assert graph_index_current(doc.dir)
    whole = load_graph(doc.dir)
    assert whole.relations
    reads: list[Path] = []
    real = stored_document.load_graph
    monkeypatch.setattr(stored_document, "load_graph", lambda d: reads.append(d) or real(d))

    g = doc.graph
    assert isinstance(g, StoredGraph) and list(g.entities) == list(whole.entities)
    ids, index, a = doc.entity_adjacency() or ([], {}, None)
    want_ids, want_index, want = graph_adjacency(whole)
    assert ids == want_ids and index == want_index and a is not None and (a != want).nnz == 0
    assert reads == []  # neither the relations nor graph.json were read for them
    assert g.relations == whole.relations and len(reads) == 1


def test_the_stored_gt_links_give_the_matrix_the_entities_give(tmp_path: Path) -> None:
    _, lib = _graph_library(tmp_path)
    (doc,) = lib.documents
    whole, tree = load_graph(doc.dir), load_tree(doc.dir)
    links = doc.gt_links()
    assert links is not None and len(links[1]) == len(whole.entities) + 1
    want = gt_matrix(whole, tree)
    got = gt_matrix_from_links(tree, links)
    assert got.node_ids == want.node_ids and got.column == want.column and got.n_tree == want.n_tree
    assert got.by_entity.shape == want.by_entity.shape and (got.by_entity != want.by_entity).nnz == 0
    assert np.array_equal(got.idf, want.idf) and want.by_entity.nnz > 0
    (doc.dir / GRAPH_INDEX_DIR / GT_LINKS_FILE).unlink()  # an index written before the links
    assert doc.gt_links() is None


def test_a_library_from_before_the_stored_files_answers_and_refresh_adds_them_without_parsing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, lib = _graph_library(tmp_path)
    (doc,) = lib.documents
    old = doc.dir
    # what today's main writes: no graph index, a BM25 index that names no tree file
    shutil.rmtree(old / GRAPH_INDEX_DIR)
    for meta in (old / LEXICAL_DIR).rglob("lexical.json"):
        meta.write_text(json.dumps({k: v for k, v in json.loads(meta.read_text()).items() if k != "source"}))
    graph_inode = (old / "graph.json").stat().st_ino
    del doc, lib

    emb = FakeEmbedder()
    engine = Engine(root, _settings(tmp_path / "cache"), embedder=emb)
    opened = engine.library.get("handbook.md")
    assert not isinstance(opened.graph, StoredGraph) and opened.entity_adjacency() is None
    answer = engine.ask("What does the parser read?", doc="handbook.md")
    assert answer.evidence and answer.answer
    del opened, engine

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("refresh parsed the document again")

    def no_encode(*args: object, **kwargs: object) -> None:
        raise AssertionError("refresh embedded again")

    monkeypatch.setattr("bookindex.indexing.library.build_into", no_build)
    monkeypatch.setattr(FakeEmbedder, "encode", no_encode)
    monkeypatch.setattr(DocumentLibrary, "embedder", property(lambda self: emb))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BOOKINDEX_LLM__PROVIDER", "none")
    r = CliRunner().invoke(app, ["refresh", str(root)])
    assert r.exit_code == 0, r.output
    assert "lexical index stored" in r.output and "graph index stored" in r.output
    (new,) = DocumentLibrary.open(root).documents
    assert new.dir != old and graph_index_current(new.dir)
    assert (new.dir / "graph.json").stat().st_ino == graph_inode  # hard-linked: read, never rewritten
    assert isinstance(new.graph, StoredGraph) and new.entity_adjacency() is not None
    meta = json.loads((new.dir / LEXICAL_DIR / "lexical.json").read_text())
    assert meta["source"].startswith(tree_digest(new.dir))
    r = CliRunner().invoke(app, ["refresh", str(root)])
    assert r.exit_code == 0 and "0 of 1 documents refreshed" in r.output
