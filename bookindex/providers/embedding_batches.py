"""Bulk encoding for index builds: each distinct text once, in batches of similar length.

Why: a document repeats itself. Running heads, footers, repeated table rows, boilerplate
paragraphs and equal section paths come back page after page (3-30 % of a document's nodes
are copies of another node's text), and encoding the same string twice gives the same vector.
Encoding each distinct text once and handing its vector to every copy removes that work
without changing a single vector beyond float rounding (a row's padding partners change, so
results agree to ~1e-6). Batches are cut from the texts sorted by length, so a batch is padded
to a length its members nearly share, instead of to the longest of an arbitrary mix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bookindex.core.errors import BookIndexError

__all__ = ["BULK_BATCH", "distinct", "encode_distinct"]

BULK_BATCH = 64  # texts handed to the embedder per call (it may split them further)


def distinct(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(the distinct texts in first-seen order, for each input the row of its text in that list)."""
    index: dict[str, int] = {}
    rows = [index.setdefault(t, len(index)) for t in texts]
    return list(index), np.asarray(rows, dtype=np.int64)


def encode_distinct(embedder: Any, texts: Sequence[str], *, batch: int = BULK_BATCH,
                    on_batch: Callable[[int], None] | None = None) -> np.ndarray:
    """The vectors of `texts` (float32, one row per input, in input order), each distinct text
    encoded once. `on_batch(n)`: n more inputs done (progress; n counts copies too, so the
    calls add up to len(texts))."""
    uniq, rows = distinct(texts)
    copies = np.bincount(rows, minlength=len(uniq)) if len(uniq) else np.zeros(0, np.int64)
    order = sorted(range(len(uniq)), key=lambda i: len(uniq[i]))
    chunks: list[np.ndarray] = []
    for k in range(0, len(order), batch):
        part = order[k:k + batch]
        chunks.append(np.asarray(embedder.encode([uniq[i] for i in part], progress=False), dtype=np.float32))
        if on_batch is not None:
            on_batch(int(copies[part].sum()))
    dim = int(getattr(embedder, "dim", 0) or (chunks[0].shape[1] if chunks else 0))
    if not chunks:
        return np.zeros((len(texts), dim), dtype=np.float32)
    sorted_vecs = np.vstack(chunks)
    if sorted_vecs.shape != (len(uniq), dim):
        raise BookIndexError(f"embedder returned shape {sorted_vecs.shape}, expected ({len(uniq)}, {dim})")
    vecs = np.empty_like(sorted_vecs)
    vecs[np.asarray(order, dtype=np.int64)] = sorted_vecs
    return vecs[rows]
