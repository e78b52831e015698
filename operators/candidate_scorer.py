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

from bookindex.operators.candidate_features import FEATURES, feature_rows

WEIGHTS_FILE = Path(__file__).with_name("candidate_weights.json")


@dataclass
class CandidateWeights:
    """A linear score over standardised features: (x - mean) / scale · coef + intercept."""

    features: tuple[str, ...]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    meta: dict[str, Any] = field(default_factory=dict)

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """Each row's score (a log-odds of being right)."""
        x = (rows - np.asarray(self.mean)) / np.asarray(self.scale)
        return x @ np.asarray(self.coef) + self.intercept

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": self.mean, "scale": self.scale, "coef": self.coef,
                "intercept": self.intercept, "meta": self.meta}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CandidateWeights:
        """Weights from `to_json`'s form; ValueError when they were fitted on other features than
        today's (the file is stale: refit)."""
        if tuple(data["features"]) != FEATURES:
            raise ValueError("candidate weights were fitted on other features than candidate_features.FEATURES")
        return cls(FEATURES, list(data["mean"]), list(data["scale"]), list(data["coef"]),
                   float(data["intercept"]), dict(data.get("meta", {})))


@lru_cache(maxsize=1)
def shipped_weights() -> CandidateWeights | None:
    """The weights shipped with the package; None when there are none."""
    if not WEIGHTS_FILE.is_file():
        return None
    return CandidateWeights.from_json(json.loads(WEIGHTS_FILE.read_text(encoding="utf-8")))


def fitted_choice(a: Any, cands: list[Any], weights: CandidateWeights) -> Any:
    """The candidate the weights score best (ties: the earlier one)."""
    return cands[int(np.argmax(weights.scores(feature_rows(a, cands))))]
