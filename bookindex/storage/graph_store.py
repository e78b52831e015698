"""The knowledge graph on disk, next to the document's tree.

Layout inside a document directory:
- `graph.json`   entities and relations (format 1) - what `load_graph` reads; one JSON parse,
  so opening a 300-page document's graph stays well under a second;
- `graph.lance/` a LanceDB database with table `entities` (id, name, type, description,
  aliases, node_ids, vector) for vector search over entities, and table `relations`
  (source, target, description, keywords, weight, node_ids) alongside;
- `entity_vectors.npz` the entity ids and vectors again, as numpy (see bookindex.storage.vector_mirror).
All are written to temporary names first and then renamed, so a crash never leaves a
half-written graph behind.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.errors import IndexFormatError
from bookindex.core.graph import KnowledgeGraph
from bookindex.storage.vector_mirror import load_mirror, save_mirror

try:  # orjson parses the graph about twice as fast; the stdlib is the fallback
    import orjson

    def _loads(b: bytes) -> Any:
        return orjson.loads(b)
except ImportError:  # pragma: no cover
    def _loads(b: bytes) -> Any:
        return json.loads(b)

GRAPH_FILE = "graph.json"
LANCE_DIR = "graph.lance"
ENTITY_MIRROR = "entity_vectors.npz"  # numpy copy of the entity vectors (fast query-time load)
FORMAT = 1


def _vectors_for(graph: KnowledgeGraph, embedder: Any) -> np.ndarray | None:
    """One vector per entity (in `graph.entities` order): reuse build vectors, encode the rest."""
    ids = list(graph.entities)
    known: dict[str, np.ndarray] = {}
    pre = graph.meta.get("vectors")
    if pre is not None:
        for eid, v in zip(pre[0], pre[1]):
            known[eid] = v
    missing = [eid for eid in ids if eid not in known]
    if missing:
        if embedder is None:
            return None
        enc = np.asarray(embedder.encode([graph.entities[e].name for e in missing]), dtype=np.float32)
        known.update(zip(missing, enc))
    if not ids:
        return None
    return np.stack([known[e] for e in ids]).astype(np.float32)


def _write_lance(graph: KnowledgeGraph, path: Path, vectors: np.ndarray | None) -> None:
    import lancedb
    import pyarrow as pa

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
        flat = pa.array(vectors.reshape(-1), pa.float32())
        cols["vector"] = pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])
    rels = graph.relations
    rel_tab = pa.table({
        "source": pa.array([r.source for r in rels], pa.string()),
        "target": pa.array([r.target for r in rels], pa.string()),
        "description": pa.array([r.description for r in rels], pa.string()),
        "keywords": pa.array([list(r.keywords) for r in rels], pa.list_(pa.string())),
        "weight": pa.array([float(r.weight) for r in rels], pa.float32()),
        "node_ids": pa.array([list(r.node_ids) for r in rels], pa.list_(pa.string())),
    })
    db = lancedb.connect(str(path))  # `path` is a fresh folder (save_graph removes any leftover):
    db.create_table("entities", pa.table(cols))  # mode="overwrite" would log a lance WARN per table
    db.create_table("relations", rel_tab)


def save_graph(graph: KnowledgeGraph, doc_dir: str | Path, embedder: Any = None) -> None:
    """Write `graph.json` and the LanceDB entity/relation tables into `doc_dir`, atomically."""
    doc_dir = Path(doc_dir)
    doc_dir.mkdir(parents=True, exist_ok=True)
    vectors = _vectors_for(graph, embedder)
    tmp_lance = doc_dir / (LANCE_DIR + ".tmp")
    shutil.rmtree(tmp_lance, ignore_errors=True)
    _write_lance(graph, tmp_lance, vectors)
    data = {"format": FORMAT, **graph.to_dict()}
    tmp_json = doc_dir / (GRAPH_FILE + ".tmp")
    with open(tmp_json, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
    final_lance = doc_dir / LANCE_DIR
    old = doc_dir / (LANCE_DIR + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if final_lance.exists():
        os.replace(final_lance, old)
    os.replace(tmp_lance, final_lance)
    if vectors is not None and len(vectors):
        save_mirror(doc_dir / ENTITY_MIRROR, [e for e in graph.entities], vectors)
    else:
        (doc_dir / ENTITY_MIRROR).unlink(missing_ok=True)
    os.replace(tmp_json, doc_dir / GRAPH_FILE)
    shutil.rmtree(old, ignore_errors=True)


def load_graph(doc_dir: str | Path) -> KnowledgeGraph:
    """The document's graph; an empty graph when it was indexed without one (--no-graph)."""
    path = Path(doc_dir) / GRAPH_FILE
    if not path.exists():
        return KnowledgeGraph()
    import gc

    gc_was = gc.isenabled()
    gc.disable()  # tens of thousands of small objects: collection passes would dominate
    try:
        data = _loads(path.read_bytes())
        if data.get("format") != FORMAT:
            raise IndexFormatError(f"{path}: graph format {data.get('format')!r}, expected {FORMAT}; "
                                   "re-index the document")
        return KnowledgeGraph.from_dict(data)
    except IndexFormatError:
        raise
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise IndexFormatError(f"{path}: unreadable graph ({exc}); re-index the document") from exc
    finally:
        if gc_was:
            gc.enable()


def load_entity_vectors(doc_dir: str | Path) -> tuple[list[str], np.ndarray]:
    """(entity ids, float32 matrix): the numpy mirror, else the LanceDB entity table; empty when
    none were stored."""
    mirrored = load_mirror(Path(doc_dir) / ENTITY_MIRROR)
    if mirrored is not None:
        return mirrored
    path = Path(doc_dir) / LANCE_DIR
    if not path.exists():
        return [], np.zeros((0, 0), np.float32)
    import lancedb

    tab = lancedb.connect(str(path)).open_table("entities").to_arrow()
    ids = tab.column("id").to_pylist()
    if "vector" not in tab.column_names or not ids:
        return [], np.zeros((0, 0), np.float32)
    col = tab.column("vector").combine_chunks()
    mat = col.values.to_numpy(zero_copy_only=False).reshape(len(ids), -1).astype(np.float32)
    return ids, mat
