"""A document's graph as a question reads it: its entities, and its adjacency ready to load.

graph.json holds G whole: entities and relations, and the relations are two thirds of it (a
filing: 32,100 relations beside 6,392 entities, 9 MB). A question reads the entities (linking a
mention, GT-links) and the weighted entity adjacency PageRank walks, which was built from every
relation when the document was first asked about: parsing graph.json and building the adjacency
took 0.5-0.7 s of a filing's first question on a loaded machine. Stored beside it:
- `graph_index/adjacency.npz`  the symmetric entity adjacency (CSR arrays, entities in
                               graph.json's order), as `operators.reasoner.graph_adjacency` builds it;
- `graph_index/gt_links.npz`   the entities' GT-links (entity -> tree nodes) as CSR arrays, so a
                               question's M is one sparse build, not a loop over every link;
- `graph_index/entities.json`  the entities alone, and what graph.json they come from (its size,
                               modification time and sha256); written last, so its presence
                               marks a whole index.
A question then parses only the entities; the relations are read from graph.json the first time
something asks for them (browsing a neighbourhood). An index of another graph.json (a folder
whose graph was rewritten by a tool not writing this) is not read: size and time first, else the
digest (a copied library), decide.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from bookindex.core.atomic import atomic_open, write_json_atomic
from bookindex.core.fastjson import loads as loads_json
from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import Entity, Relation
from bookindex.operators.graph_matrices import GTLinks, graph_adjacency, gt_links

GRAPH_INDEX_DIR = "graph_index"
ENTITIES_FILE = "entities.json"
ADJACENCY_FILE = "adjacency.npz"
GT_LINKS_FILE = "gt_links.npz"
GRAPH_INDEX_FORMAT = 1
GRAPH_FILE = "graph.json"  # the graph file; bookindex.indexing.document_folder imports the name from here


class StoredGraph(KnowledgeGraph):
    """A KnowledgeGraph whose relations are read on first use (`relations_of()`): a question
    reads entities and the stored adjacency, never the relations themselves."""

    def __init__(self, entities: dict[str, Entity], relations_of: Callable[[], list[Relation]]) -> None:
        super().__init__(entities, [])
        self._relations: list[Relation] | None = None
        self._relations_of = relations_of

    @property
    def relations(self) -> list[Relation]:
        if self._relations is None:
            self._relations = list(self._relations_of())
        return self._relations

    @relations.setter
    def relations(self, value: list[Relation]) -> None:
        self._relations = value


def _source(graph_file: Path, digest: bool) -> dict[str, Any]:
    st = graph_file.stat()
    out: dict[str, Any] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    if digest:
        out["sha256"] = hashlib.sha256(graph_file.read_bytes()).hexdigest()
    return out


def write_graph_index(doc_dir: Path, graph: KnowledgeGraph) -> None:
    """Store `graph`'s entities and adjacency under `doc_dir/graph_index/` (after graph.json is
    written: the index names that file). Each file is renamed into place; entities.json last."""
    folder = doc_dir / GRAPH_INDEX_DIR
    shutil.rmtree(folder, ignore_errors=True)  # never written through: a refreshed copy's files are links
    folder.mkdir(parents=True)
    _, _, a = graph_adjacency(graph)
    with atomic_open(folder / ADJACENCY_FILE) as fh:
        np.savez(fh, data=a.data.astype(np.float64), indices=a.indices.astype(np.int32),
                 indptr=a.indptr.astype(np.int64), shape=np.asarray(a.shape, dtype=np.int64))
    linked, indptr, indices = gt_links(graph)
    with atomic_open(folder / GT_LINKS_FILE) as fh:
        np.savez(fh, linked=np.asarray(linked, dtype=str), indptr=indptr, indices=indices.astype(np.int32))
    meta = {"format": GRAPH_INDEX_FORMAT, "graph": _source(doc_dir / GRAPH_FILE, digest=True),
            "entities": [asdict(e) for e in graph.entities.values()]}
    write_json_atomic(folder / ENTITIES_FILE, meta, indent=None)


def _meta(doc_dir: Path) -> dict[str, Any] | None:
    """entities.json when it is of this folder's graph.json; None otherwise."""
    try:
        meta = loads_json((doc_dir / GRAPH_INDEX_DIR / ENTITIES_FILE).read_bytes())
        if not isinstance(meta, dict) or meta.get("format") != GRAPH_INDEX_FORMAT:
            return None
        stored = meta.get("graph") or {}
        now = _source(doc_dir / GRAPH_FILE, digest=False)
        if stored.get("size") == now["size"] and stored.get("mtime_ns") == now["mtime_ns"]:
            return meta
        if stored.get("size") == now["size"] and stored.get("sha256") == _source(doc_dir / GRAPH_FILE, True)["sha256"]:
            return meta  # the same file, copied (its time changed)
    except (OSError, ValueError):
        return None
    return None


def graph_index_current(doc_dir: Path) -> bool:
    """Whether `doc_dir` stores the whole graph index of its graph.json, GT-links included (True
    without a graph): `bookindex refresh` writes it where not."""
    if not (doc_dir / GRAPH_FILE).exists():
        return True
    return (doc_dir / GRAPH_INDEX_DIR / GT_LINKS_FILE).exists() and _meta(doc_dir) is not None


def read_graph_index(doc_dir: Path, relations_of: Callable[[], list[Relation]]) -> StoredGraph | None:
    """The graph's entities, its relations left to `relations_of`, when the folder stores the
    index of its graph.json; None otherwise (the caller reads graph.json)."""
    meta = _meta(doc_dir)
    if meta is None:
        return None
    try:
        ents = {d["id"]: Entity(**d) for d in meta["entities"]}
    except (KeyError, TypeError):
        return None
    return StoredGraph(ents, relations_of)


def read_adjacency(doc_dir: Path, entity_ids: list[str]) -> tuple[list[str], dict[str, int], sp.csr_matrix] | None:
    """The stored adjacency as `graph_adjacency` returns it, for the entities `entity_ids` (in
    graph.json's order); None when there is none or it is of another shape."""
    try:
        with np.load(doc_dir / GRAPH_INDEX_DIR / ADJACENCY_FILE) as z:
            rows, cols = (int(x) for x in z["shape"])
            shape = (rows, cols)
            a = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=shape)
    except (OSError, ValueError, KeyError):
        return None
    if shape != (len(entity_ids), len(entity_ids)):
        return None
    return list(entity_ids), {e: i for i, e in enumerate(entity_ids)}, a


def read_gt_links(doc_dir: Path, n_entities: int) -> GTLinks | None:
    """The stored GT-links (operators.graph_matrices.GTLinks) of a graph of `n_entities` entities;
    None when there are none (an index written before them) or they are of another graph."""
    try:
        with np.load(doc_dir / GRAPH_INDEX_DIR / GT_LINKS_FILE) as z:
            linked, indptr, indices = z["linked"].tolist(), z["indptr"], z["indices"].astype(np.int64)
    except (OSError, ValueError, KeyError):
        return None
    if len(indptr) != n_entities + 1 or (len(indices) and int(indices.max()) >= len(linked)):
        return None
    return linked, indptr, indices
