"""Reciprocal-rank fusion (RRF), the one copy: several rankings of the same items into one score.

Used wherever rankings of different kinds (BM25, cosine, a name match, ...) are combined: their
raw scores are not comparable, their ranks are.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hashable]], weights: Sequence[float] | None = None,
                           k: int = 60) -> dict[Hashable, float]:
    """Each item's summed weight / (k + rank) over the rankings that hold it, rank 1-based.

    `weights` has one weight per ranking (all 1.0 when omitted). An item no ranking holds is
    absent. The sums are taken ranking by ranking in the order given, so the same rankings give
    bit-identical scores.
    """
    fused: dict[Hashable, float] = {}
    for j, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[j]
        for rank, item in enumerate(ranking, 1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused
