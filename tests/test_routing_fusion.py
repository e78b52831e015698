"""Routing's reciprocal-rank fusion goes through the one `retrieval.fusion` copy: the router's
weighted, sparse fusion and the pooled search's BM25-matches-only ranking give the scores their
hand-written formulas give."""

from __future__ import annotations

import numpy as np
import pytest

from bookindex.core.model import Block, build_tree
from bookindex.retrieval.fusion import reciprocal_rank_fusion
from bookindex.routing.pooled import RRF_K as POOLED_RRF_K
from bookindex.routing.pooled import PooledIndex
from bookindex.routing.router import RRF_K, LibraryRouter, RoutedDocument, decided_by, top_nodes


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
    assert [(h.node_id, h.score) for h in hits] == [("doc-00000", round(2.0 / (POOLED_RRF_K + 1), 6)),
                                                   ("doc-00001", round(1.0 / (POOLED_RRF_K + 2), 6))]


def test_nodes_signal_reads_the_same_share_of_every_document() -> None:
    # a long document whose three best nodes match (1,000 nodes) and a short one (100 nodes)
    # matching a little less on more of them: the long one's best three are a more extreme draw
    q = np.array([1, 0], dtype=np.float32)
    def nodes(n: int, good: int, cos: float) -> np.ndarray:
        m = np.tile(np.array([[0.0, 1.0]], dtype=np.float32), (n, 1))
        m[:good] = [cos, np.sqrt(1 - cos * cos)]
        return m
    long_doc, short_doc = nodes(1000, 3, 0.9), nodes(100, 5, 0.6)
    r = LibraryRouter(["long", "short"], ["x", "y"], np.zeros((2, 2), dtype=np.float32), [long_doc, short_doc])
    values = r.signals("q", q)["nodes"]
    assert top_nodes(100) == 3 and top_nodes(1000) == 10
    assert values[0] == pytest.approx(0.9 * 3 / 10, abs=1e-6)   # the best tenth of a thousand
    assert values[1] == pytest.approx(0.6, abs=1e-6)             # the best three of a hundred
    assert [d.doc_id for d in r.rank("q", q)][0] == "short"


def test_decided_by_names_the_signal_that_separated_the_two_first() -> None:
    # both first on `name` (a tie decides nothing); the first is ahead on lexical, behind on nodes
    first = RoutedDocument("a", 0.0, {}, {"nodes": 3, "lexical": 2, "vector": 2, "name": 1})
    second = RoutedDocument("b", 0.0, {}, {"nodes": 1, "lexical": 9, "vector": 1, "name": 1})
    assert decided_by([first, second]) == "fused (lexical)"
    assert decided_by([first, first]) == "fused"   # nothing separates them: the document id did
    assert decided_by([first]) == "only"


def test_passages_signal_finds_the_document_holding_the_words_together() -> None:
    # two manuals of one kind share every word of the question, each word on its own page; only
    # "b" has one passage holding them together: passages decide (whole-document texts kept equal)
    shared = ["gallery settings", "watch face options", "time display"]
    passages = [shared + ["battery care"], shared + ["set the time of a gallery watch face"]]
    r = LibraryRouter(["a", "b"], ["watch manual", "watch manual"], np.zeros((2, 2), dtype=np.float32), [None, None], passages=passages)
    values = r.signals("time on the gallery watch face", np.zeros(2, dtype=np.float32))
    assert values["passages"][1] > values["passages"][0] > 0
    ranked = r.rank("time on the gallery watch face", np.zeros(2, dtype=np.float32))
    assert ranked[0].doc_id == "b" and ranked[0].ranks["passages"] == 1 and ranked[1].ranks["passages"] == 2
    assert decided_by(ranked) == "fused (passages)"


def test_passages_signal_without_passages_is_zero() -> None:
    r = LibraryRouter(["a", "b"], ["x", "y"], np.zeros((2, 2), dtype=np.float32), [None, None])
    assert list(r.signals("x", np.zeros(2, dtype=np.float32))["passages"]) == [0.0, 0.0]
