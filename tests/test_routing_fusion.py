"""Routing's reciprocal-rank fusion goes through the one `retrieval.fusion` copy: the router's
weighted, sparse fusion and the pooled search's BM25-matches-only ranking give the scores their
hand-written formulas give."""

from __future__ import annotations

import numpy as np
import pytest

from bookindex.core.model import Block, build_tree
from bookindex.retrieval.fusion import reciprocal_rank_fusion
from bookindex.routing.pooled import PooledIndex
from bookindex.routing.router import RRF_K, LibraryRouter


def test_fusion_sums_weight_over_k_plus_rank() -> None:
    fused = reciprocal_rank_fusion([["a", "b"], ["b"]], [1.0, 0.5], k=60)
    assert fused == {"a": 1.0 / 61, "b": 1.0 / 62 + 0.5 / 61}
    assert reciprocal_rank_fusion([["x"], []]) == {"x": 1.0 / 61}
    assert reciprocal_rank_fusion([]) == {}


def test_router_scores_are_the_weighted_rank_sums() -> None:
    vecs = np.eye(3, 4, dtype=np.float32)
    r = LibraryRouter(["d0", "d1", "d2"], ["tax refund", "tax", "oven bread"], vecs, [None, vecs[1:2], None],
                      names=["AMAZON_2017.pdf", "", ""], weights={"nodes": 1.0, "lexical": 1.0, "vector": 0.5, "name": 0.5})
    ranked = r.rank("Amazon tax refund", np.array([0, 1, 0, 0], dtype=np.float32))
    for doc in ranked:
        # `name` is sparse: only the documents it matches have a rank from it
        want = sum(w / (RRF_K + doc.ranks[s]) for s, w in r.weights.items() if s in doc.ranks)
        assert doc.score == pytest.approx(round(want, 6), abs=1e-9)
    assert [d.doc_id for d in ranked][0] == "d1"


def test_pooled_search_ranks_bm25_matches_only() -> None:
    tree = build_tree("doc", "Doc", [Block(type="text", content="tax refund rules", page_idx=0),
                                     Block(type="text", content="oven bread", page_idx=0)])
    pooled = PooledIndex([tree], [([], None)])   # no stored vectors: every block's cosine is 0
    hits = pooled.search("tax refund", np.zeros(0, dtype=np.float32), k=5)
    # the dense ranking holds both blocks (ties in order); BM25 only the block that matches
    assert [(h.node_id, h.score) for h in hits] == [("doc-00000", round(2.0 / (RRF_K + 1), 6)),
                                                   ("doc-00001", round(1.0 / (RRF_K + 2), 6))]
