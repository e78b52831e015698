"""The optional LanceDB vector backend (`storage.vectors = "lancedb"`, extra `bookindex[lancedb]`).

Two databases, each a folder the caller names (bookindex.indexing.document_folder places them in
a document folder, written only when that backend is selected):
- a node database: table `nodes` (node_id, doc_id, type, level, page_idx, page_end_idx, vector);
- a graph database: table `entities` (id, name, type, description, aliases, node_ids, vector) and
  table `relations` (source, target, description, keywords, weight, node_ids).
A query reads the tables into the same (ids, float32 matrix) the npz files give. Each database is
written into a uniquely named temporary folder and swapped in, so a crash leaves the old one.

lancedb and pyarrow are imported inside the functions: they are an optional extra, and importing
lancedb costs over a second that the default (npz) query path must not pay.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

from bookindex.core.errors import ConfigError
from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import Node

NODE_TABLE = "nodes"
ENTITY_TABLE = "entities"
RELATION_TABLE = "relations"
INSTALL_HINT = "pip install 'bookindex[lancedb]'"


def require() -> None:
    """Fail before a build starts, not after its embedding stage, when the extra is missing."""
    _lancedb()


def _lancedb() -> tuple[ModuleType, ModuleType]:
    """(lancedb, pyarrow), or a ConfigError saying how to install the optional extra."""
    try:
        import lancedb  # optional heavy dependency (the `lancedb` extra); >1 s to import
        import pyarrow
    except ImportError as exc:
        raise ConfigError(f"storage.vectors=lancedb needs the optional LanceDB backend ({exc.name} is "
                          f"not installed): {INSTALL_HINT}, or use storage.vectors=npz") from None
    return lancedb, pyarrow


def _vector_column(pa: ModuleType, vectors: np.ndarray) -> Any:
    dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1), type=pa.float32())
    return pa.FixedSizeListArray.from_arrays(flat, dim)


def _swap_in(folder: Path, write: Callable[[Any], None]) -> None:
    """Write a LanceDB database into a fresh unique folder next to `folder`, then swap it in."""
    lancedb, _ = _lancedb()
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".tmp"))
    old = tmp.with_suffix(".old")
    try:
        write(lancedb.connect(str(tmp)))  # a fresh folder: no mode="overwrite" (it logs a WARN per table)
        if folder.exists():
            os.replace(folder, old)
        os.replace(tmp, folder)
    except BaseException:
        if old.exists() and not folder.exists():
            os.replace(old, folder)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_node_table(database: Path, doc_id: str, nodes: list[Node], vectors: np.ndarray) -> None:
    """The node vectors of one document as the LanceDB table `nodes` in the folder `database`."""
    _, pa = _lancedb()
    schema = pa.schema([
        ("node_id", pa.string()), ("doc_id", pa.string()), ("type", pa.string()),
        ("level", pa.int32()), ("page_idx", pa.int32()), ("page_end_idx", pa.int32()),
        ("vector", pa.list_(pa.float32(), int(vectors.shape[1]))),
    ])
    table = pa.table({
        "node_id": [n.id for n in nodes], "doc_id": [doc_id] * len(nodes),
        "type": [n.type for n in nodes], "level": [n.level for n in nodes],
        "page_idx": [n.page_idx for n in nodes], "page_end_idx": [n.page_end_idx for n in nodes],
        "vector": _vector_column(pa, vectors),
    }, schema=schema)
    _swap_in(database, lambda db: db.create_table(NODE_TABLE, data=table))


def write_graph_tables(database: Path, graph: KnowledgeGraph, vectors: np.ndarray | None) -> None:
    """Entities (with their vectors, when any) and relations in the folder `database`."""
    _, pa = _lancedb()
    ents = list(graph.entities.values())
    cols: dict[str, Any] = {
        "id": pa.array([e.id for e in ents], pa.string()),
        "name": pa.array([e.name for e in ents], pa.string()),
        "type": pa.array([e.type for e in ents], pa.string()),
        "description": pa.array([e.description for e in ents], pa.string()),
        "aliases": pa.array([list(e.aliases) for e in ents], pa.list_(pa.string())),
        "node_ids": pa.array([list(e.node_ids) for e in ents], pa.list_(pa.string())),
    }
    if vectors is not None and len(vectors):
        cols["vector"] = _vector_column(pa, vectors)
    rels = graph.relations
    relations = pa.table({
        "source": pa.array([r.source for r in rels], pa.string()),
        "target": pa.array([r.target for r in rels], pa.string()),
        "description": pa.array([r.description for r in rels], pa.string()),
        "keywords": pa.array([list(r.keywords) for r in rels], pa.list_(pa.string())),
        "weight": pa.array([float(r.weight) for r in rels], pa.float32()),
        "node_ids": pa.array([list(r.node_ids) for r in rels], pa.list_(pa.string())),
    })

    def write(db: Any) -> None:
        db.create_table(ENTITY_TABLE, pa.table(cols))
        db.create_table(RELATION_TABLE, relations)

    _swap_in(database, write)


def _read_vectors(folder: Path, table: str, id_column: str) -> tuple[list[str], np.ndarray] | None:
    """(ids, float32 matrix) of a table's id and vector columns; None without the database."""
    if not folder.is_dir():
        return None
    lancedb, _ = _lancedb()
    tab = lancedb.connect(str(folder)).open_table(table).to_arrow()
    ids = tab.column(id_column).to_pylist()
    if "vector" not in tab.column_names or not ids:
        return [], np.zeros((0, 0), np.float32)
    col = tab.column("vector").combine_chunks()
    mat = col.values.to_numpy(zero_copy_only=False).reshape(len(ids), -1)
    return ids, np.ascontiguousarray(mat, dtype=np.float32)


def read_node_table(database: Path) -> tuple[list[str], np.ndarray] | None:
    """(node ids, matrix) from the node database, in the order written; None without it."""
    return _read_vectors(database, NODE_TABLE, "node_id")


def read_entity_table(database: Path) -> tuple[list[str], np.ndarray] | None:
    """(entity ids, matrix) from the graph database; None without it."""
    return _read_vectors(database, ENTITY_TABLE, "id")


def remove(database: Path) -> None:
    """Drop a database a build of the other backend made stale (a retry on an older layout)."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(database)
