"""The knowledge graph on disk, next to the document's tree.

Layout inside a document directory:
- `graph.json`   entities and relations (format 1) - what `load_graph` reads; one JSON parse,
  so opening a 300-page document's graph stays well under a second;
- `entity_vectors.npz` the entity ids and vectors, as numpy (bookindex.storage.vector_mirror),
  or with `storage.vectors = "lancedb"` instead `graph.lance/` (bookindex.storage.lance_store).
All are written to unique temporary names first and then renamed, so a crash never leaves a
half-written file behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.atomic import write_json_atomic
from bookindex.core.errors import IndexFormatError
from bookindex.core.graph import KnowledgeGraph
from bookindex.storage import lance_store
from bookindex.storage.vector_mirror import load_mirror, save_mirror

try:  # orjson parses the graph about twice as fast; the stdlib is the fallback
    import orjson

    def _loads(b: bytes) -> Any:
        return orjson.loads(b)
except ImportError:  # pragma: no cover
    def _loads(b: bytes) -> Any:
        return json.loads(b)

GRAPH_FILE = "graph.json"
LANCE_DIR = lance_store.GRAPH_DIR
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


def save_graph(graph: KnowledgeGraph, doc_dir: str | Path, embedder: Any = None,
               vectors_backend: str = "npz") -> None:
    """Write `graph.json` and the entity vectors (`entity_vectors.npz`, or with backend
    "lancedb" the graph.lance tables) into `doc_dir`; each file is replaced atomically."""
    doc_dir = Path(doc_dir)
    doc_dir.mkdir(parents=True, exist_ok=True)
    vectors = _vectors_for(graph, embedder)
    if vectors_backend == "lancedb":
        lance_store.write_graph_tables(doc_dir, graph, vectors)
        # a retry in a copy of an npz-built folder: the old mirror would shadow the new table
        (doc_dir / ENTITY_MIRROR).unlink(missing_ok=True)
    else:
        if vectors is not None and len(vectors):
            save_mirror(doc_dir / ENTITY_MIRROR, list(graph.entities), vectors)
        else:
            (doc_dir / ENTITY_MIRROR).unlink(missing_ok=True)
        lance_store.remove(doc_dir, LANCE_DIR)  # tables of an older build would now be stale
    write_json_atomic(doc_dir / GRAPH_FILE, {"format": FORMAT, **graph.to_dict()}, indent=None)


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
    """(entity ids, float32 matrix): entity_vectors.npz, else the LanceDB entity table (backend
    "lancedb", or an index from before the npz files); empty when none were stored."""
    mirrored = load_mirror(Path(doc_dir) / ENTITY_MIRROR)
    if mirrored is not None:
        return mirrored
    stored = lance_store.read_entity_table(Path(doc_dir))
    return stored if stored is not None else ([], np.zeros((0, 0), np.float32))
