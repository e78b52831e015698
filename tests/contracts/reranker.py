"""The `Reranker` contract: one float per passage, higher = more relevant, order-independent.

Evidence is reranked in whatever order retrieval produced it and cut by score, so a passage's
score may depend on the query and the passage only, never on its neighbours or position.
"""

from __future__ import annotations

import math

import pytest

from bookindex.core.protocols import Reranker

QUERY = "How do I install the package with pip?"
PASSAGES = [
    "Zebras are striped animals of the African savanna.",
    "Install the package with pip: run pip install on Linux and macOS.",
    "The png terminal writes bitmap images through the cairo library.",
]
RELEVANT = 1  # the index of the passage that answers QUERY


class RerankerContract:
    """Every `Reranker`. A subclass provides the `reranker` fixture."""

    @pytest.fixture
    def reranker(self) -> Reranker:
        raise NotImplementedError("subclass provides `reranker`")

    def test_satisfies_the_protocol(self, reranker: Reranker) -> None:
        assert isinstance(reranker, Reranker)

    def test_one_finite_float_per_passage(self, reranker: Reranker) -> None:
        scores = reranker.score(QUERY, PASSAGES)
        assert isinstance(scores, list) and len(scores) == len(PASSAGES)
        assert all(type(s) is float and math.isfinite(s) for s in scores)

    def test_no_passages_no_scores(self, reranker: Reranker) -> None:
        assert reranker.score(QUERY, []) == []

    def test_the_relevant_passage_scores_highest(self, reranker: Reranker) -> None:
        scores = reranker.score(QUERY, PASSAGES)
        assert max(range(len(scores)), key=scores.__getitem__) == RELEVANT, scores

    def test_a_score_depends_on_query_and_passage_only(self, reranker: Reranker) -> None:
        scores = reranker.score(QUERY, PASSAGES)
        assert reranker.score(QUERY, PASSAGES[::-1]) == pytest.approx(scores[::-1], abs=1e-5)
        assert reranker.score(QUERY, [PASSAGES[RELEVANT]]) == pytest.approx([scores[RELEVANT]], abs=1e-5)
        assert reranker.score(QUERY, PASSAGES) == pytest.approx(scores, abs=1e-6)  # deterministic
