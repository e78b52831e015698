"""Per-document baseline indexes, built lazily and kept on the opened document for repeated questions.

All baselines work over the same parsed tree leaves (the layout blocks), the same embedder and
the same BM25 index and analyser (`bookindex.providers.lexical`) as bookindex, so differences in
the comparison come from the retrieval method alone. A `DocIndex` lives as long as the opened
document (`IndexContext.views.baseline`), so no module-level cache outlives a re-index.
"""

from __future__ import annotations

import bisect
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bookindex.core.model import DocumentTree, Node
from bookindex.core.protocols import Embedder
from bookindex.operators.context import IndexContext
from bookindex.providers.lexical import LexicalIndex

CHUNK_TOKENS = 500
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_create_lock = threading.Lock()


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
class PageIndex:
    """BM25 over whole pages: each page's leaf texts joined, represented by its first leaf."""

    lexical: LexicalIndex
    first_leaf: list[int]
    chars: list[int]


@dataclass
class DocIndex:
    tree: DocumentTree
    leaves: list[Node]
    texts: list[str]
    bm25: LexicalIndex | None = None
    leaf_vectors: np.ndarray | None = None
    chunks: list[Chunk] | None = None
    chunk_vectors: np.ndarray | None = None
    section_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    embedder_id: int | None = None
    page_bm25: PageIndex | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


def get_index(ctx: IndexContext) -> DocIndex:
    """The opened document's DocIndex, created on first use and kept with its other views."""
    idx = ctx.views.baseline
    if isinstance(idx, DocIndex):
        return idx
    with _create_lock:
        idx = ctx.views.baseline
        if not isinstance(idx, DocIndex):
            leaves = [n for n in ctx.tree.leaves() if n.content.strip()]
            idx = ctx.views.baseline = DocIndex(tree=ctx.tree, leaves=leaves, texts=[n.content for n in leaves])
        return idx


def bm25_scores(idx: DocIndex, question: str) -> np.ndarray:
    """BM25 score of every leaf (its content, no section titles) for the question."""
    with idx.lock:
        if idx.bm25 is None:
            idx.bm25 = LexicalIndex([n.id for n in idx.leaves], idx.texts)
    return idx.bm25.scores(question)


def page_index(idx: DocIndex) -> PageIndex:
    """BM25 over whole pages (the bm25-pages calibration ranker)."""
    with idx.lock:
        if idx.page_bm25 is None:
            by_page: dict[int, list[int]] = {}
            for i, n in enumerate(idx.leaves):
                by_page.setdefault(n.page_idx, []).append(i)
            pages = sorted(by_page)
            texts = ["\n".join(idx.texts[i] for i in by_page[p]) for p in pages]
            idx.page_bm25 = PageIndex(LexicalIndex([str(p) for p in pages], texts),
                                      [by_page[p][0] for p in pages], [len(t) for t in texts])
        return idx.page_bm25


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
