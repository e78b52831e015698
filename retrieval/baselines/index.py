"""Per-document baseline indexes, built lazily and cached in memory for repeated questions.

All baselines work over the same parsed tree leaves (the layout blocks) and the same embedder
as bookindex, so differences in the comparison come from the retrieval method alone.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from bookindex.core.model import DocumentTree, Node

CHUNK_TOKENS = 500
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_CACHE_SIZE = 64


class Embedder(Protocol):
    dim: int

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray: ...


@dataclass
class Chunk:
    """A ~500-token window of the document's concatenated leaf text.

    `node_id` is the leaf where the chunk's text starts: chunk evidence points there (its page
    and bbox), so a chunk spanning pages contributes its first node's page.
    """

    index: int
    text: str
    node_id: str
    node_ids: list[str]


@dataclass
class DocIndex:
    tree: DocumentTree
    leaves: list[Node]
    texts: list[str]
    bm25: Any = None
    leaf_vectors: np.ndarray | None = None
    chunks: list[Chunk] | None = None
    chunk_vectors: np.ndarray | None = None
    section_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    embedder_id: int | None = None
    page_bm25: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock)


_cache: "OrderedDict[tuple[str, int], DocIndex]" = OrderedDict()
_cache_lock = threading.Lock()


def _tokens(text: str) -> list[str]:
    import bm25s

    return bm25s.tokenize([text], stopwords="en", show_progress=False, return_ids=False)[0]


def get_index(doc: Any) -> DocIndex:
    """The cached DocIndex of a StoredDocument-like object (keyed by doc id and tree size)."""
    tree: DocumentTree = doc.tree
    key = (tree.doc_id, len(tree))
    with _cache_lock:
        idx = _cache.get(key)
        if idx is not None:
            _cache.move_to_end(key)
            return idx
        leaves = [n for n in tree.leaves() if n.content.strip()]
        idx = DocIndex(tree=tree, leaves=leaves, texts=[n.content for n in leaves])
        _cache[key] = idx
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
        return idx


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def bm25_scores(idx: DocIndex, question: str) -> np.ndarray:
    """BM25 (bm25s, Lucene variant, English stopwords) score of every leaf for the question."""
    import bm25s

    with idx.lock:
        if idx.bm25 is None:
            corpus = bm25s.tokenize(idx.texts, stopwords="en", show_progress=False, return_ids=False)
            retriever = bm25s.BM25()
            if idx.texts:
                retriever.index(corpus, show_progress=False)
            idx.bm25 = retriever
    q = _tokens(question)
    if not q or not idx.texts:
        return np.zeros(len(idx.texts), dtype=np.float32)
    return np.asarray(idx.bm25.get_scores(q), dtype=np.float32)


def _check_embedder(idx: DocIndex, embedder: Embedder) -> None:
    """Vectors belong to one embedder: a different one invalidates them (caller holds lock)."""
    if idx.embedder_id != id(embedder):
        idx.leaf_vectors = idx.chunk_vectors = None
        idx.section_vectors = {}
        idx.embedder_id = id(embedder)


def _stored_vectors(doc: Any, dim: int) -> dict[str, np.ndarray]:
    """The library's node vectors by id (empty when absent or from another embedder)."""
    getter = getattr(doc, "node_vectors", None)
    if getter is None:
        return {}
    ids, mat = getter()
    if mat is None or not len(ids):
        return {}
    mat = np.asarray(mat, dtype=np.float32)
    if mat.ndim != 2 or mat.shape[1] != dim:
        return {}
    return {nid: mat[i] for i, nid in enumerate(ids)}


def leaf_vectors(idx: DocIndex, doc: Any, embedder: Embedder) -> np.ndarray:
    """Leaf embeddings: the library's stored node vectors, encoding only leaves it lacks."""
    with idx.lock:
        _check_embedder(idx, embedder)
        if idx.leaf_vectors is not None:
            return idx.leaf_vectors
        stored = _stored_vectors(doc, embedder.dim)
        vecs = np.zeros((len(idx.leaves), embedder.dim), dtype=np.float32)
        missing: list[int] = []
        for i, n in enumerate(idx.leaves):
            if n.id in stored:
                vecs[i] = stored[n.id]
            else:
                missing.append(i)
        if missing:
            enc = embedder.encode([idx.texts[i] for i in missing], progress=False)
            vecs[missing] = np.asarray(enc, dtype=np.float32)
        idx.leaf_vectors = _normalize(vecs)
        sec_ids = [nid for nid in stored if nid in idx.tree.nodes and idx.tree.nodes[nid].type == "section"]
        if sec_ids:
            sec = _normalize(np.stack([stored[nid] for nid in sec_ids]))
            idx.section_vectors = {nid: sec[i] for i, nid in enumerate(sec_ids)}
        return idx.leaf_vectors


def build_chunks(idx: DocIndex, size: int = CHUNK_TOKENS) -> list[Chunk]:
    """Split the concatenated leaf text into windows of `size` word/punctuation tokens.

    Vanilla RAG ignores layout: windows may cut through a block. Each chunk records the leaf
    where it starts (its evidence node) and every leaf it touches.
    """
    starts: list[int] = []
    parts: list[str] = []
    pos = 0
    for text in idx.texts:
        starts.append(pos)
        parts.append(text)
        pos += len(text) + 1
    full = "\n".join(parts)
    spans = [m.span() for m in _TOKEN_RE.finditer(full)]
    chunks: list[Chunk] = []
    for ci, t0 in enumerate(range(0, len(spans), size)):
        window = spans[t0:t0 + size]
        a, b = window[0][0], window[-1][1]
        first = bisect.bisect_right(starts, a) - 1
        last = bisect.bisect_right(starts, b - 1) - 1
        node_ids = [idx.leaves[i].id for i in range(first, last + 1)]
        chunks.append(Chunk(index=ci, text=full[a:b], node_id=node_ids[0], node_ids=node_ids))
    return chunks


def chunk_vectors(idx: DocIndex, embedder: Embedder) -> tuple[list[Chunk], np.ndarray]:
    with idx.lock:
        _check_embedder(idx, embedder)
        if idx.chunks is None:
            idx.chunks = build_chunks(idx)
        if idx.chunk_vectors is None:
            if idx.chunks:
                enc = embedder.encode([c.text for c in idx.chunks], progress=False)
                idx.chunk_vectors = _normalize(np.asarray(enc, dtype=np.float32))
            else:
                idx.chunk_vectors = np.zeros((0, embedder.dim), dtype=np.float32)
        return idx.chunks, idx.chunk_vectors


def section_vectors(idx: DocIndex, embedder: Embedder) -> dict[str, np.ndarray]:
    """Embeddings of each section's heading path ("Chapter > Section"), for tree descent:
    the library's stored section vectors (same text), else encoded here. Call after
    `leaf_vectors`, which picks up the stored ones."""
    with idx.lock:
        _check_embedder(idx, embedder)
        secs = idx.tree.sections()
        if secs and not all(s.id in idx.section_vectors for s in secs):
            secs = [s for s in secs if s.id not in idx.section_vectors]
            if secs:
                paths = [" > ".join([p.title for p in idx.tree.parent_path(s) if p.type == "section"] + [s.title])
                         for s in secs]
                enc = _normalize(np.asarray(embedder.encode(paths, progress=False), dtype=np.float32))
                idx.section_vectors.update({s.id: enc[i] for i, s in enumerate(secs)})
        return idx.section_vectors


def query_vector(embedder: Embedder, question: str) -> np.ndarray:
    return _normalize(np.asarray(embedder.encode([question], progress=False), dtype=np.float32))[0]


def _normalize(m: np.ndarray) -> np.ndarray:
    if m.size == 0:
        return m
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms
