"""Reciprocal-rank fusion: one score per item from several rankings of the same items.

RRF (Cormack et al., 2009) needs no score calibration between the rankings, only their orders,
which is why BM25, dense and name rankings can be fused with it. Used by the hybrid baseline and
by library routing; written once here so both fuse the same way.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hashable]], weights: Sequence[float] | None = None,
                           k: int = 60) -> dict[Hashable, float]:
    """Σ over the rankings of weight / (k + rank) per item, ranks 1-based (weights default to 1).

    Items appear in the result in order of first appearance (earlier rankings first, better ranks
    first within one), so a caller that sorts by score with a stable sort gets deterministic ties.
    """
    if weights is not None and len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: dict[Hashable, float] = {}
    for i, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[i]
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores
