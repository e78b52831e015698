"""The `LexicalIndex` contract: one non-negative score per passage, row-aligned with `ids`.

Text_Reasoning, library routing and the baselines index `ids` by the row of the score vector, so
the rows must stay aligned with the ids given, and a query that matches nothing must score zero
everywhere rather than fail or rank by accident.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from bookindex.core.protocols import LexicalIndex

MakeIndex = Callable[[list[str], list[str]], LexicalIndex]

IDS = ["n-3", "n-1", "n-2", "n-0"]  # deliberately not sorted: the order given is the order kept
TEXTS = [
    "Install the package with pip on Linux and macOS.",
    "The png terminal writes bitmap images through the cairo library.",
    "Zebras are striped animals of the African savanna.",
    "The pdf terminal writes vector output; the png terminal writes bitmaps.",
]


class LexicalIndexContract:
    """Every `LexicalIndex`. A subclass provides `make_index(ids, texts)`."""

    @pytest.fixture
    def make_index(self) -> MakeIndex:
        raise NotImplementedError("subclass provides `make_index`")

    def test_satisfies_the_protocol_and_keeps_the_ids(self, make_index: MakeIndex) -> None:
        index = make_index(IDS, TEXTS)
        assert isinstance(index, LexicalIndex)
        assert list(index.ids) == IDS

    def test_one_score_per_passage(self, make_index: MakeIndex) -> None:
        scores = make_index(IDS, TEXTS).scores("cairo bitmap images")
        assert isinstance(scores, np.ndarray) and scores.shape == (len(IDS),)
        assert np.issubdtype(scores.dtype, np.floating) and np.isfinite(scores).all() and (scores >= 0).all()

    def test_rows_follow_the_ids(self, make_index: MakeIndex) -> None:
        index = make_index(IDS, TEXTS)
        scores = index.scores("zebras savanna")
        assert index.ids[int(np.argmax(scores))] == "n-2"
        assert scores[IDS.index("n-2")] > 0 and np.count_nonzero(scores) == 1  # only it has the words

    def test_a_rarer_term_outweighs_a_common_one(self, make_index: MakeIndex) -> None:
        scores = make_index(IDS, TEXTS).scores("cairo terminal")  # both terminals match, one has cairo
        assert int(np.argmax(scores)) == IDS.index("n-1") and scores[IDS.index("n-0")] > 0

    def test_no_match_scores_zero(self, make_index: MakeIndex) -> None:
        index = make_index(IDS, TEXTS)
        assert not index.scores("quaternion holography").any()
        assert not index.scores("").any() and index.scores("").shape == (len(IDS),)

    def test_deterministic(self, make_index: MakeIndex) -> None:
        a = make_index(IDS, TEXTS).scores("png terminal")
        assert np.array_equal(a, make_index(IDS, TEXTS).scores("png terminal"))

    def test_an_empty_index(self, make_index: MakeIndex) -> None:
        index = make_index([], [])
        assert list(index.ids) == [] and index.scores("anything").shape == (0,)
