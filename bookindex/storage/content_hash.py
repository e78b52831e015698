"""A content hash over what a build produces: trees, graphs and vectors, not timestamps.

Why: a parallel or distributed build must produce the same library as a serial one. Comparing
folders byte for byte fails on what legitimately differs (manifest times, build.json timings and
ledgers, generation stamps), so this hashes only the content a query reads: each document's
tree.json and graph.json as canonical JSON, and its node and entity vectors (ids + float32
matrix bytes) from whichever backend holds them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.indexing.construction import TREE_FILE, read_node_vectors
from bookindex.storage.graph_store import GRAPH_FILE, load_entity_vectors

CATALOG = "library.json"


def _canonical(path: Path) -> bytes:
    if not path.exists():
        return b"absent"
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _vectors(ids: list[str], mat: np.ndarray) -> bytes:
    h = hashlib.sha256()
    h.update(json.dumps(list(ids)).encode("utf-8"))
    arr = np.ascontiguousarray(mat, dtype=np.float32)
    h.update(str(arr.shape).encode())
    h.update(arr.tobytes())
    return h.digest()


def document_hash(folder: Path) -> dict[str, str]:
    """sha256 (hex) of one generation folder's tree, graph, node vectors and entity vectors."""
    parts = {"tree": _canonical(folder / TREE_FILE), "graph": _canonical(folder / GRAPH_FILE)}
    node_ids, node_mat = read_node_vectors(folder)
    parts["node_vectors"] = _vectors(node_ids, node_mat)
    try:
        ent_ids, ent_mat = load_entity_vectors(folder)
    except (FileNotFoundError, OSError, ValueError, KeyError):
        ent_ids, ent_mat = [], np.zeros((0, 0), dtype=np.float32)
    parts["entity_vectors"] = _vectors(list(ent_ids), np.asarray(ent_mat))
    return {k: hashlib.sha256(v).hexdigest() for k, v in parts.items()}


def library_hashes(root: Path) -> dict[str, dict[str, str]]:
    """{doc_id: document_hash} for every document in a library folder's catalog."""
    catalog = json.loads((Path(root) / CATALOG).read_text(encoding="utf-8"))
    return {doc_id: document_hash(Path(root) / "docs" / entry["dir"])
            for doc_id, entry in sorted(catalog["documents"].items())}


def library_hash(root: Path) -> str:
    """One sha256 over a whole library's content (equal for a serial and a parallel build)."""
    h = hashlib.sha256()
    for doc_id, parts in library_hashes(root).items():
        h.update(doc_id.encode())
        for key in sorted(parts):
            h.update(f"{key}={parts[key]};".encode())
    return h.hexdigest()
