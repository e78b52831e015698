"""The query-vector cache: each text encoded once, in one call for the texts not cached, the least
recently used dropped first, and a clear error for an embedder that returns the wrong count."""

from __future__ import annotations

import numpy as np
import pytest
from fakes import FakeEmbedder

from bookindex.providers.query_vectors import QueryVectors


class RecordingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=16, word=r"\w+")
        self.batches: list[list[str]] = []

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        self.batches.append(list(texts))
        return super().encode(texts, progress)


def test_each_text_is_encoded_once_and_misses_in_one_call() -> None:
    emb = RecordingEmbedder()
    qv = QueryVectors(emb)
    a, = qv.vectors(["tax refund"])
    b, a2, c = qv.vectors(["oven bread", "tax refund", "oven bread rolls"])
    assert emb.batches == [["tax refund"], ["oven bread", "oven bread rolls"]]
    assert np.array_equal(a, a2) and np.allclose(a, emb.encode(["tax refund"])[0])
    assert not np.allclose(b, c)
    qv.vectors(["oven bread", "oven bread"])
    assert len(emb.batches) == 3   # the check above encoded once more; the cache call did not


def test_least_recently_used_is_dropped() -> None:
    emb = RecordingEmbedder()
    qv = QueryVectors(emb, size=2)
    qv.vectors(["a one"])
    qv.vectors(["b two"])
    qv.vectors(["a one"])          # "a one" used last: "b two" goes first
    qv.vectors(["c three"])
    assert len(qv) == 2
    emb.batches.clear()
    qv.vectors(["a one", "c three", "b two"])
    assert emb.batches == [["b two"]]


def test_bad_size_and_bad_embedder_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        QueryVectors(FakeEmbedder(), size=0)

    class Short(FakeEmbedder):
        def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
            return super().encode(texts[:1], progress)

    with pytest.raises(ValueError, match="returned 1 vectors for 2 texts"):
        QueryVectors(Short()).vectors(["a", "b"])
