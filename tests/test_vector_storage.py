"""storage.vectors: npz files by default, LanceDB tables as the optional backend, same vectors.

The LanceDB backend is written only when selected and is then what queries read; a library
holding both kinds of document answers from each. The default query path importing neither
lancedb nor torch is checked in tests/test_fast_open.py.
"""

from __future__ import annotations

import builtins
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes import FakeEmbedder
from pdf_fixtures import build_handbook

from bookindex.core.config import load_settings
from bookindex.core.errors import ConfigError
from bookindex.engine import Engine
from bookindex.indexing import document_folder
from bookindex.indexing.document_folder import (
    ENTITY_VECTORS_FILE,
    GRAPH_DB,
    NODE_VECTORS_DB,
    NODE_VECTORS_FILE,
    load_entity_vectors,
    load_graph,
    save_graph,
)
from bookindex.indexing.library import DocumentLibrary
from bookindex.storage import lance_store

lancedb = pytest.importorskip("lancedb")  # the optional `bookindex[lancedb]` extra (in `dev`)


def _settings(vectors: str = "npz") -> Any:
    return load_settings(overrides={"llm.provider": "none", "cache.enabled": False,
                                    "storage.vectors": vectors}, env={})


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same handbook indexed once per backend, into two libraries."""
    tmp = tmp_path_factory.mktemp("vectors")
    pdf = build_handbook(tmp / "handbook.pdf")
    docs = {}
    for backend in ("npz", "lancedb"):
        lib = DocumentLibrary.open(tmp / backend, _settings(backend), embedder=FakeEmbedder(dim=64))
        docs[backend] = lib.add(pdf)
    return {"pdf": pdf, "tmp": tmp, **docs}


def test_default_build_writes_npz_and_no_lance_tables(built: dict[str, Any]) -> None:
    d = built["npz"].dir
    assert (d / NODE_VECTORS_FILE).is_file() and (d / ENTITY_VECTORS_FILE).is_file()
    assert not list(d.glob("*.lance"))
    assert "vectors" not in built["npz"].manifest["options"]  # older manifests still match


def test_lancedb_build_writes_only_tables_and_reads_the_same_vectors(built: dict[str, Any]) -> None:
    npz, lance = built["npz"], built["lancedb"]
    assert (lance.dir / NODE_VECTORS_DB).is_dir() and (lance.dir / GRAPH_DB).is_dir()
    assert not list(lance.dir.glob("*.npz"))
    assert lance.manifest["options"]["vectors"] == "lancedb"
    ids, mat = document_folder.read_node_vectors(npz.dir)
    lids, lmat = document_folder.read_node_vectors(lance.dir)
    assert len(ids) > 5 and lids == ids and lmat.dtype == np.float32 and np.array_equal(lmat, mat)
    eids, emat = load_entity_vectors(npz.dir)
    leids, lemat = load_entity_vectors(lance.dir)
    assert len(eids) > 0 and leids == eids and np.array_equal(lemat, emat)
    assert lance.node_vectors()[0] == ids and lance.entity_vectors()[0] == eids


def test_node_table_rows_carry_node_metadata(built: dict[str, Any]) -> None:
    doc = built["lancedb"]
    rows = lancedb.connect(str(doc.dir / NODE_VECTORS_DB)).open_table("nodes").to_arrow().to_pylist()
    assert {"node_id", "doc_id", "type", "level", "page_idx", "page_end_idx", "vector"} <= set(rows[0])
    assert {r["doc_id"] for r in rows} == {doc.doc_id}
    first = doc.tree.nodes[rows[0]["node_id"]]
    assert (rows[0]["type"], rows[0]["page_idx"]) == (first.type, first.page_idx)
    relations = lancedb.connect(str(doc.dir / GRAPH_DB)).open_table("relations").to_arrow()
    assert relations.num_rows == len(doc.graph.relations)


def test_queries_answer_the_same_from_either_backend(built: dict[str, Any]) -> None:
    question = "How many seconds did the beta run take when parsing?"
    hits = {}
    for backend in ("npz", "lancedb"):
        engine = Engine(built["tmp"] / backend, _settings(backend), embedder=FakeEmbedder(dim=64))
        hits[backend] = [(m, e.node_id, e.scores) for m in ("dense", "bookindex")
                         for e in engine.search(question, method=m, k=5)]
    assert {m for m, _, _ in hits["npz"]} == {"dense", "bookindex"}
    assert hits["lancedb"] == hits["npz"]


def test_switching_backend_rebuilds_the_document(built: dict[str, Any], tmp_path: Path) -> None:
    lib_dir = tmp_path / "lib"
    shutil.copytree(built["tmp"] / "lancedb", lib_dir)
    again = DocumentLibrary.open(lib_dir, _settings("lancedb"), embedder=FakeEmbedder(dim=64)).add(built["pdf"])
    assert again.status == "unchanged"
    switched = DocumentLibrary.open(lib_dir, _settings("npz"), embedder=FakeEmbedder(dim=64)).add(built["pdf"])
    assert switched.status == "replaced"
    assert (switched.dir / NODE_VECTORS_FILE).is_file() and not list(switched.dir.glob("*.lance"))


def test_missing_extra_fails_before_the_build_naming_the_install(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_lancedb(name: str, *args: Any, **kw: Any) -> Any:
        if name == "lancedb":
            raise ImportError("No module named 'lancedb'", name="lancedb")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_lancedb)
    lib = DocumentLibrary.open(tmp_path / "lib", _settings("lancedb"), embedder=FakeEmbedder(dim=64))
    events: list[str] = []
    with pytest.raises(ConfigError, match=r"bookindex\[lancedb\].*storage.vectors=npz"):
        lib.add(build_handbook(tmp_path / "handbook.pdf"), on_event=lambda e, i: events.append(e))
    assert events == [] and not (tmp_path / "lib").exists()


def test_saving_the_graph_with_one_backend_drops_the_others_stale_vectors(built: dict[str, Any],
                                                                          tmp_path: Path) -> None:
    """A graph retry works in a copy of the document folder; the vectors it writes must be the
    ones read afterwards, whichever backend wrote the folder first."""
    folder = tmp_path / "doc"
    shutil.copytree(built["lancedb"].dir, folder)
    graph = load_graph(folder)
    emb = FakeEmbedder(dim=64)
    save_graph(graph, folder, embedder=emb, vectors_backend="npz")
    assert (folder / ENTITY_VECTORS_FILE).is_file() and not (folder / GRAPH_DB).exists()
    save_graph(graph, folder, embedder=emb, vectors_backend="lancedb")
    assert (folder / GRAPH_DB).is_dir() and not (folder / ENTITY_VECTORS_FILE).exists()
    assert load_entity_vectors(folder)[0] == list(graph.entities)


@pytest.mark.parametrize("fail_at", ["create_table", "swap"])
def test_a_failed_table_write_keeps_the_old_tables(built: dict[str, Any], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch, fail_at: str) -> None:
    folder = tmp_path / "doc"
    shutil.copytree(built["lancedb"].dir, folder)
    before = document_folder.read_node_vectors(folder)
    doc = built["lancedb"]
    nodes = [doc.tree.nodes[i] for i in before[0]]
    if fail_at == "create_table":
        class Broken:
            def create_table(self, *args: Any, **kw: Any) -> None:
                raise OSError("disk full")

        monkeypatch.setattr(lancedb, "connect", lambda path: Broken())
    else:  # the old database is moved aside, then renaming the new one into place fails
        real_replace, calls = lance_store.os.replace, []

        def second_fails(src: Any, dst: Any) -> None:
            calls.append(src)
            if len(calls) == 2:
                raise OSError("disk full")
            real_replace(src, dst)

        monkeypatch.setattr(lance_store.os, "replace", second_fails)
    with pytest.raises(OSError, match="disk full"):
        lance_store.write_node_table(folder / NODE_VECTORS_DB, doc.doc_id, nodes, before[1] * 0)
    monkeypatch.undo()
    after = document_folder.read_node_vectors(folder)
    assert after[0] == before[0] and np.array_equal(after[1], before[1])
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []
