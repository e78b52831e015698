"""Fitted weights over the declared candidate features, and the choice they make.

`scripts/fit_reader.py` fits a logistic regression of "this candidate renders a right answer"
on `candidate_features.FEATURES` over every development question and writes the weights here
as package data (`candidate_weights.json`, with the commit and the data they were fitted on).
The reader uses them when `answer.reader_choice` is "fitted"; the hand-set order
(`reader.best_candidate`) otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.operators.candidate_features import FEATURES, feature_rows, hand_set_pool, rule_ranked

WEIGHTS_FILE = Path(__file__).with_name("candidate_weights.json")


@dataclass
class CandidateWeights:
    """A linear score over standardised features: (x - mean) / scale · coef + intercept, that
    re-ranks the `top_k` candidates of the hand-set order (0: every candidate)."""

    features: tuple[str, ...]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    top_k: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def pool(self, cands: list[Any]) -> list[int]:
        """The indices of the candidates the weights choose among: the hand-set order's first
        `top_k`, in that order."""
        return hand_set_pool(cands, self.top_k)

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """Each row's score (a log-odds of being right)."""
        x = (rows - np.asarray(self.mean)) / np.asarray(self.scale)
        return x @ np.asarray(self.coef) + self.intercept

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": self.mean, "scale": self.scale, "coef": self.coef,
                "intercept": self.intercept, "top_k": self.top_k, "meta": self.meta}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CandidateWeights:
        """Weights from `to_json`'s form; ValueError when they were fitted on other features than
        today's (the file is stale: refit)."""
        if tuple(data["features"]) != FEATURES:
            raise ValueError("candidate weights were fitted on other features than candidate_features.FEATURES")
        return cls(FEATURES, list(data["mean"]), list(data["scale"]), list(data["coef"]),
                   float(data["intercept"]), int(data.get("top_k", 0)), dict(data.get("meta", {})))


@lru_cache(maxsize=1)
def shipped_weights() -> CandidateWeights | None:
    """The weights shipped with the package; None when there are none."""
    if not WEIGHTS_FILE.is_file():
        return None
    return CandidateWeights.from_json(json.loads(WEIGHTS_FILE.read_text(encoding="utf-8")))


def fitted_choice(a: Any, cands: list[Any], weights: CandidateWeights) -> Any:
    """The candidate of the weights' pool they score best (ties: the hand-set order's)."""
    pool = weights.pool(cands)
    rows = feature_rows(a, cands, only=pool)
    return cands[pool[int(np.argmax(weights.scores(rows)))]]


def _contributions(weights: CandidateWeights, row: np.ndarray, top: int = 3) -> dict[str, float]:
    """The features that moved a candidate's fitted score most, with what each added."""
    parts = (row - np.asarray(weights.mean)) / np.asarray(weights.scale) * np.asarray(weights.coef)
    order = np.argsort(-np.abs(parts))[:top]
    return {FEATURES[i]: round(float(parts[i]), 3) for i in order}


def choice_report(a: Any, cands: list[Any], chosen: Any, weights: CandidateWeights | None, top: int = 5
                  ) -> dict[str, Any]:
    """What `--explain` shows of the reader's choice: how it chose, among how many candidates,
    and the best `top` by that choice's order, each with its generator, passage, span, sentence
    start and scores (with fitted weights: the features that decided)."""
    # the hand-set order's head; with weights, their pool (its first top_k) re-ordered by them
    n_pool = (weights.top_k or len(cands)) if weights is not None else 0
    head = rule_ranked(cands)[:max(top, n_pool)]
    rows = dict(zip(head, feature_rows(a, cands, only=head))) if weights is not None else {}
    fitted: dict[int, float] = {}
    if weights is not None:
        pool = head[:n_pool]
        fitted = dict(zip(pool, weights.scores(np.array([rows[i] for i in pool])).tolist()))
        head = sorted(pool, key=lambda i: -fitted[i]) + head[n_pool:]
    shown = []
    for i in head[:top]:
        c = cands[i]
        entry = {"via": c.via, "passage": c.number, "span": c.span[:80], "sentence": c.sentence[:80],
                 "rule_score": round(c.score, 3), "fits": c.fits, "chosen": c is chosen}
        if weights is not None:
            if i in fitted:
                entry["fitted_score"] = round(fitted[i], 3)
            entry["features"] = _contributions(weights, rows[i])
        shown.append(entry)
    return {"choice": "fitted" if weights is not None else "rules", "kind": a.kind, "candidates": len(cands),
            "top": shown}
