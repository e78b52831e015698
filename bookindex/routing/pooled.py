"""Flat library search, the alternative to routing: every block of every document in one ranked
collection (one BM25 index with one library-wide IDF, one vector matrix), fused per block by
reciprocal rank, so the top blocks may come from several documents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from bookindex.core.model import LEAF_TYPES, DocumentTree, node_text
from bookindex.providers.lexical import LexicalIndex
from bookindex.retrieval.fusion import reciprocal_rank_fusion

# fused over thousands of blocks: the constant of TREC's runs (Cormack et al.), not the router's
RRF_K = 60


@dataclass
class PooledHit:
    doc_id: str
    node_id: str
    score: float


class PooledIndex:
    """Every leaf of every document as one ranked collection: BM25 (one IDF) + cosine, RRF."""

    def __init__(self, trees: Sequence[DocumentTree], node_vectors: Sequence[tuple[list[str], np.ndarray | None]]) -> None:
        self.keys: list[tuple[str, str]] = []
        texts: list[str] = []
        for tree in trees:
            for n in tree.leaves():
                if n.type in LEAF_TYPES:
                    self.keys.append((tree.doc_id, n.id))
                    texts.append(node_text(tree, n))
        self.lexical = LexicalIndex([f"{d}/{n}" for d, n in self.keys], texts)
        row = {k: i for i, k in enumerate(self.keys)}
        dim = next((m.shape[1] for _, m in node_vectors if m is not None), 0)
        self.vectors = np.zeros((len(self.keys), dim), dtype=np.float32)
        for tree, (ids, mat) in zip(trees, node_vectors):
            if mat is None:
                continue
            for nid, vec in zip(ids, mat):
                i = row.get((tree.doc_id, nid))
                if i is not None:
                    self.vectors[i] = vec

    @classmethod
    def from_parts(cls, keys: Sequence[tuple[str, str]], lexical: LexicalIndex, vectors: np.ndarray) -> PooledIndex:
        """An index of parts already built (`routing.stored` reads them from a folder)."""
        pooled = cls.__new__(cls)
        pooled.keys, pooled.lexical, pooled.vectors = list(keys), lexical, vectors
        return pooled

    def search(self, question: str, qvec: np.ndarray, k: int = 10, pool: int = 100) -> list[PooledHit]:
        """The k best blocks: the top `pool` of each ranking (BM25: matches only) fused."""
        lex = np.asarray(self.lexical.scores(question), dtype=np.float32)
        dense = self.vectors @ qvec if self.vectors.shape[1] == len(qvec) else np.zeros(len(self.keys), np.float32)
        rankings: list[list[int]] = []
        for scores, only_positive in ((lex, True), (dense, False)):
            order = [int(i) for i in np.argsort(-scores, kind="stable")[:pool]]
            # BM25 ranks its matches only: the ranking ends at the first block scoring <= 0
            end = next((j for j, i in enumerate(order) if scores[i] <= 0), len(order)) if only_positive else len(order)
            rankings.append(order[:end])
        fused = np.zeros(len(self.keys), dtype=np.float64)
        for i, score in reciprocal_rank_fusion(rankings, k=RRF_K).items():
            fused[cast(int, i)] = score
        top = np.argsort(-fused, kind="stable")[:k]
        return [PooledHit(self.keys[i][0], self.keys[i][1], round(float(fused[i]), 6)) for i in top if fused[i] > 0]
