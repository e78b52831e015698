"""The document folder format: every file of one indexed document, and the code that reads and writes it.

One generation folder (bookindex.storage.catalog commits it under the library's docs/) holds:
- `manifest.json`       identity, options and sizes of the build (FORMAT_VERSION in "format_version");
- `tree.json`           the document tree T;
- `build.json`          the build report: stage timings, graph report (failed nodes, retries), LLM ledger;
- `graph.json`          the knowledge graph G with its GT-links M (format GRAPH_FORMAT); absent without a graph;
- `graph_index/`        G as a question reads it: the entities alone and the entity adjacency
                        (bookindex.indexing.graph_index, which names these files and graph.json);
- `node_vectors.npz`    node ids + vectors (storage.vectors = "npz", the default), or `vectors.lance/`
                        (storage.vectors = "lancedb": bookindex.storage.lance_store);
- `entity_vectors.npz`  entity ids + vectors, or `graph.lance/` with the LanceDB backend;
- `images/`             figures and tables cut out by the parser (tree nodes name them relative
                        to the folder, so renaming the folder keeps them valid).
While parsing, `mineru-out/` holds the parser's work files; it is removed before the commit.
Every file is written to a unique temporary name first and then renamed, so a crash never leaves
a half-written file behind. Why one module: the pipeline, the on-disk document (StoredDocument),
the content hash and the scripts all read the same files; this is the only place naming them.
"""

from __future__ import annotations

import gc
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.atomic import write_json_atomic
from bookindex.core.errors import IndexFormatError
from bookindex.core.fastjson import loads as loads_json
from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import DocumentTree
from bookindex.indexing.graph_index import GRAPH_FILE, GRAPH_INDEX_DIR, write_graph_index
from bookindex.providers.lexical import save_document_lexical_index, stored_indexes_current
from bookindex.storage import content_hash, lance_store
from bookindex.storage.vector_mirror import load_mirror, save_mirror

FORMAT_VERSION = 1  # the document folder format, recorded in every manifest
MANIFEST = "manifest.json"
TREE_FILE = "tree.json"
BUILD_FILE = "build.json"
GRAPH_FORMAT = 1  # graph.json's "format"
# node ids and vectors as numpy (storage.vectors = "npz", the default): reading it takes
# milliseconds, where importing lancedb alone takes over a second of every query process's start.
NODE_VECTORS_FILE = "node_vectors.npz"
ENTITY_VECTORS_FILE = "entity_vectors.npz"  # numpy copy of the entity vectors (fast query-time load)
NODE_VECTORS_DB = "vectors.lance"  # node vectors with storage.vectors = "lancedb"
GRAPH_DB = "graph.lance"  # entities and relations with storage.vectors = "lancedb"
# the BM25 index of the tree's passages (providers.lexical): read in a millisecond where building
# it on a document's first question took 50-90 ms on a filing; ignored when the passages differ
LEXICAL_DIR = "lexical"
IMAGES_DIR = "images"
PARSER_WORK_DIR = "mineru-out"


# -- manifest.json ----------------------------------------------------------------------------
def read_manifest(doc_dir: Path) -> dict[str, Any]:
    """The manifest; OSError or ValueError when it is missing or unreadable."""
    data: dict[str, Any] = json.loads((doc_dir / MANIFEST).read_text(encoding="utf-8"))
    return data


def write_manifest(doc_dir: Path, manifest: dict[str, Any]) -> None:
    write_json_atomic(doc_dir / MANIFEST, manifest)


# -- tree.json --------------------------------------------------------------------------------
def write_tree(doc_dir: Path, tree: DocumentTree) -> None:
    write_json_atomic(doc_dir / TREE_FILE, tree.to_dict(), indent=None)


def write_lexical_index(doc_dir: Path, tree: DocumentTree) -> None:
    """Store the tree's BM25 index in `doc_dir` (replacing any there: never written through, since
    a refreshed generation's files are hard links to the previous generation's), marked with the
    digest of the folder's tree.json (written before it) so a first question opens it at once."""
    shutil.rmtree(doc_dir / LEXICAL_DIR, ignore_errors=True)
    save_document_lexical_index(tree, doc_dir / LEXICAL_DIR, tree_digest(doc_dir))


def lexical_index_current(doc_dir: Path, tree: DocumentTree) -> bool:
    """Whether `doc_dir` stores the BM25 indexes (passages, table rows) of exactly this tree,
    marked as read from its tree.json (an index stored before they were marked is not current:
    `bookindex refresh` marks it)."""
    return stored_indexes_current(tree, doc_dir / LEXICAL_DIR, tree_digest(doc_dir) or None)


def tree_digest(doc_dir: Path) -> str:
    """sha256 of the folder's tree.json ("" without one): what its stored indexes are read from."""
    try:
        return hashlib.sha256((doc_dir / TREE_FILE).read_bytes()).hexdigest()
    except OSError:
        return ""


def load_tree(doc_dir: Path) -> DocumentTree:
    return read_tree(doc_dir)[0]


def read_tree(doc_dir: Path) -> tuple[DocumentTree, str]:
    """The tree and the digest of its file (`tree_digest`, from the same bytes)."""
    f = doc_dir / TREE_FILE
    try:
        data = f.read_bytes()
        return DocumentTree.from_dict(loads_json(data)), hashlib.sha256(data).hexdigest()
    except FileNotFoundError:
        raise IndexFormatError(f"{doc_dir}: {TREE_FILE} is missing; re-index the document") from None
    except (ValueError, KeyError, TypeError) as e:
        raise IndexFormatError(f"{f}: unreadable tree ({e}); re-index the document") from None


# -- build.json -------------------------------------------------------------------------------
def load_build_report(doc_dir: Path) -> dict[str, Any]:
    """build.json as stored; OSError or ValueError when it is missing or unreadable."""
    data: dict[str, Any] = json.loads((doc_dir / BUILD_FILE).read_text(encoding="utf-8"))
    return data


def read_build_report(doc_dir: Path) -> dict[str, Any]:
    """build.json, or {} when it is missing or unreadable (a report must never fail a query)."""
    try:
        data = load_build_report(doc_dir)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_build_report(doc_dir: Path, report: dict[str, Any]) -> None:
    write_json_atomic(doc_dir / BUILD_FILE, report, default=str)


def failed_graph_nodes(doc_dir: Path) -> list[str]:
    """Tree nodes whose graph extraction failed in the stored build (build.json), in order."""
    try:
        report = load_build_report(doc_dir)
    except (OSError, ValueError):
        return []
    graph = report.get("graph") or {}
    if not graph.get("built"):
        return []
    return [str(i) for i in graph.get("failed_node_ids") or []]


# -- working folders ----------------------------------------------------------------------------
def images_dir(doc_dir: Path) -> Path:
    """Where the parser cuts figures and tables out to."""
    return doc_dir / IMAGES_DIR


def parser_work_dir(doc_dir: Path) -> Path:
    """The parser's scratch folder inside a build (removed once the tree is written)."""
    return doc_dir / PARSER_WORK_DIR


# -- node vectors ---------------------------------------------------------------------------------
def write_node_vectors(doc_dir: Path, tree: DocumentTree, ids: list[str], vectors: np.ndarray,
                       backend: str = "npz") -> None:
    """Node vectors (rows in `ids` order): node_vectors.npz, or with `backend` "lancedb" the
    LanceDB table vectors.lance/nodes."""
    if backend == "lancedb":
        lance_store.write_node_table(doc_dir / NODE_VECTORS_DB, tree.doc_id, [tree.nodes[i] for i in ids], vectors)
    else:
        save_mirror(doc_dir / NODE_VECTORS_FILE, ids, vectors)


def read_node_vectors(doc_dir: Path) -> tuple[list[str], np.ndarray]:
    """(node ids, matrix) from a stored document's vectors, in tree order: node_vectors.npz when
    present, else the LanceDB table (backend "lancedb", or an index from before the npz files)."""
    mirrored = load_mirror(doc_dir / NODE_VECTORS_FILE)
    if mirrored is not None:
        return mirrored
    stored = lance_store.read_node_table(doc_dir / NODE_VECTORS_DB)
    return stored if stored is not None else ([], np.zeros((0, 0), dtype=np.float32))


# -- graph.json and entity vectors -------------------------------------------------------------
def _entity_vectors_for(graph: KnowledgeGraph, embedder: Any) -> np.ndarray | None:
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
    vectors = _entity_vectors_for(graph, embedder)
    if vectors_backend == "lancedb":
        lance_store.write_graph_tables(doc_dir / GRAPH_DB, graph, vectors)
        # a retry in a copy of an npz-built folder: the old mirror would shadow the new table
        (doc_dir / ENTITY_VECTORS_FILE).unlink(missing_ok=True)
    else:
        if vectors is not None and len(vectors):
            save_mirror(doc_dir / ENTITY_VECTORS_FILE, list(graph.entities), vectors)
        else:
            (doc_dir / ENTITY_VECTORS_FILE).unlink(missing_ok=True)
        lance_store.remove(doc_dir / GRAPH_DB)  # tables of an older build would now be stale
    write_json_atomic(doc_dir / GRAPH_FILE, {"format": GRAPH_FORMAT, **graph.to_dict()}, indent=None)
    write_graph_index(doc_dir, graph)  # after graph.json: it names the file it indexes


def load_graph(doc_dir: str | Path) -> KnowledgeGraph:
    """The document's graph; an empty graph when it was indexed without one (--no-graph)."""
    path = Path(doc_dir) / GRAPH_FILE
    if not path.exists():
        return KnowledgeGraph()
    gc_was = gc.isenabled()
    gc.disable()  # tens of thousands of small objects: collection passes would dominate
    try:
        data = loads_json(path.read_bytes())
        if data.get("format") != GRAPH_FORMAT:
            raise IndexFormatError(f"{path}: graph format {data.get('format')!r}, expected {GRAPH_FORMAT}; "
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
    mirrored = load_mirror(Path(doc_dir) / ENTITY_VECTORS_FILE)
    if mirrored is not None:
        return mirrored
    stored = lance_store.read_entity_table(Path(doc_dir) / GRAPH_DB)
    return stored if stored is not None else ([], np.zeros((0, 0), np.float32))


# -- size -------------------------------------------------------------------------------------------
QUERY_FILES = (TREE_FILE, GRAPH_FILE, NODE_VECTORS_FILE, ENTITY_VECTORS_FILE)


def query_files_bytes(doc_dir: Path) -> int:
    """The bytes on disk of what a question reads of a document (tree, graph, vectors, BM25
    indexes): the measure the document cache estimates an opened document's memory by."""
    total = 0
    for name in QUERY_FILES:
        try:
            total += (doc_dir / name).stat().st_size
        except OSError:
            continue
    for sub in (doc_dir / LEXICAL_DIR, doc_dir / NODE_VECTORS_DB, doc_dir / GRAPH_DB, doc_dir / GRAPH_INDEX_DIR):
        if sub.is_dir():
            total += sum(f.stat().st_size for f in sub.rglob("*") if f.is_file())
    return total


# -- content hash ---------------------------------------------------------------------------------
def document_hash(folder: Path) -> dict[str, str]:
    """sha256 (hex) of one generation folder's tree, graph, node vectors and entity vectors: the
    content a query reads, not manifest times, build timings or generation stamps."""
    parts = {"tree": content_hash.canonical_json(folder / TREE_FILE),
             "graph": content_hash.canonical_json(folder / GRAPH_FILE)}
    node_ids, node_mat = read_node_vectors(folder)
    parts["node_vectors"] = content_hash.vectors_digest(node_ids, node_mat)
    try:
        ent_ids, ent_mat = load_entity_vectors(folder)
    except (FileNotFoundError, OSError, ValueError, KeyError):
        ent_ids, ent_mat = [], np.zeros((0, 0), dtype=np.float32)
    parts["entity_vectors"] = content_hash.vectors_digest(list(ent_ids), np.asarray(ent_mat))
    return content_hash.hex_digests(parts)


def library_hashes(root: Path) -> dict[str, dict[str, str]]:
    """{doc_id: document_hash} for every document in a library folder's catalog."""
    return content_hash.library_hashes(root, document_hash)


def library_hash(root: Path) -> str:
    """One sha256 over a whole library's content (equal for a serial and a parallel build)."""
    return content_hash.combined_hash(library_hashes(root))
