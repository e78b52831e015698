"""The flat baselines: BM25 over blocks, dense top-k, hybrid (RRF) and vanilla chunk RAG."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from bookindex.core.model import Evidence
from bookindex.core.protocols import Embedder
from bookindex.retrieval.baselines.index import (
    DocIndex,
    bm25_scores,
    chunk_vectors,
    leaf_vectors,
    page_index,
    query_vector,
)
from bookindex.retrieval.fusion import reciprocal_rank_fusion

RRF_K = 60
FUSION_DEPTH = 100  # candidates taken from each ranking before fusion
H = TypeVar("H", bound=Hashable)


def rrf_fuse(rankings: Sequence[Sequence[H]], k: int = RRF_K) -> list[tuple[H, float]]:
    """Reciprocal rank fusion (`reciprocal_rank_fusion`), best first.

    Ties are broken by the item's rank in the first list that holds it, then by that list's
    position, so the result is deterministic.
    """
    scores = cast("dict[H, float]", reciprocal_rank_fusion(rankings, k=k))
    first_seen: dict[H, tuple[int, int]] = {}
    for li, ranking in enumerate(rankings):
        for r, item in enumerate(ranking, start=1):
            first_seen.setdefault(item, (r, li))
    return sorted(scores.items(), key=lambda kv: (-kv[1], first_seen[kv[0]]))


def _evidence(idx: DocIndex, order: Sequence[int], scores: Sequence[dict[str, float]]) -> list[Evidence]:
    return [Evidence.from_node(idx.tree, idx.leaves[i], scores=s, rank=r)
            for r, (i, s) in enumerate(zip(order, scores), start=1)]


def bm25_ranking(idx: DocIndex, question: str, depth: int) -> tuple[list[int], np.ndarray]:
    """Leaf indices with a positive BM25 score, best first (BM25 returns only matches)."""
    s = bm25_scores(idx, question)
    order = [int(i) for i in np.argsort(-s, kind="stable")[:depth] if s[i] > 0]
    return order, s


def dense_ranking(idx: DocIndex, doc: Any, question: str, embedder: Embedder,
                  depth: int) -> tuple[list[int], np.ndarray]:
    if not idx.leaves:
        return [], np.zeros(0, dtype=np.float32)
    vecs = leaf_vectors(idx, doc, embedder)
    s = vecs @ query_vector(embedder, question)
    return [int(i) for i in np.argsort(-s, kind="stable")[:depth]], s


def bm25(idx: DocIndex, question: str, k: int) -> list[Evidence]:
    order, s = bm25_ranking(idx, question, k)
    return _evidence(idx, order, [{"bm25": float(s[i])} for i in order])


def dense(idx: DocIndex, doc: Any, question: str, k: int, embedder: Embedder) -> list[Evidence]:
    order, s = dense_ranking(idx, doc, question, embedder, k)
    return _evidence(idx, order, [{"dense": float(s[i])} for i in order])


def hybrid(idx: DocIndex, doc: Any, question: str, k: int, embedder: Embedder) -> list[Evidence]:
    depth = max(k, FUSION_DEPTH)
    b_order, b_s = bm25_ranking(idx, question, depth)
    d_order, d_s = dense_ranking(idx, doc, question, embedder, depth)
    fused = rrf_fuse([b_order, d_order])[:k]
    b_rank = {i: r for r, i in enumerate(b_order, start=1)}
    d_rank = {i: r for r, i in enumerate(d_order, start=1)}
    order = [int(i) for i, _ in fused]
    scores = []
    for i, f in fused:
        sc = {"rrf": float(f), "dense": float(d_s[i])}
        if i in b_rank:
            sc["bm25"], sc["bm25_rank"] = float(b_s[i]), float(b_rank[i])
        if i in d_rank:
            sc["dense_rank"] = float(d_rank[i])
        scores.append(sc)
    return _evidence(idx, order, scores)


def chunks(idx: DocIndex, question: str, k: int, embedder: Embedder) -> list[Evidence]:
    """Vanilla RAG: dense top-k over ~500-token chunks. Evidence points at the chunk's first
    node (page, bbox); `chunk_chars` records the text a reader would get."""
    chs, vecs = chunk_vectors(idx, embedder)
    if not chs:
        return []
    s = vecs @ query_vector(embedder, question)
    out: list[Evidence] = []
    for r, ci in enumerate(np.argsort(-s, kind="stable")[:k], start=1):
        ch = chs[int(ci)]
        ev = Evidence.from_node(idx.tree, idx.tree.nodes[ch.node_id], rank=r, scores={
            "dense": float(s[ci]), "chunk_index": float(ch.index), "chunk_chars": float(len(ch.text)),
            "chunk_nodes": float(len(ch.node_ids))})
        ev.snippet = " ".join(ch.text.split())[:400]
        out.append(ev)
    return out


def bm25_pages(idx: DocIndex, question: str, k: int) -> list[Evidence]:
    """Calibration baseline: BM25 over whole pages (k pages, not nodes), the unit of the
    reference figures in the data README. Each page is represented by its first leaf; the
    `page_unit` score tells the scorer to count exactly that page."""
    pages = page_index(idx)
    s = pages.lexical.scores(question)
    order = [int(i) for i in np.argsort(-s, kind="stable")[:k] if s[i] > 0]
    return _evidence(idx, [pages.first_leaf[i] for i in order],
                     [{"bm25": float(s[i]), "page_unit": 1.0, "chunk_chars": float(pages.chars[i])} for i in order])
