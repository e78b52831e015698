"""Vectors as numpy files (ids + float32 matrix, one .npz): the default vector store.

Why: a query process needs the vectors of one document as a matrix. Reading an .npz takes
milliseconds; importing lancedb alone takes over a second, which would be most of the open
budget (docs/architecture.md, "Vector storage"). The name "mirror" stays from the time these
files copied LanceDB tables; with `storage.vectors = "npz"` they are the store of record.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bookindex.core.atomic import atomic_open


def save_mirror(path: Path, ids: list[str], vectors: np.ndarray) -> None:
    """Write ids and vectors to `path` atomically (a reader never sees a half-written file)."""
    with atomic_open(path, "wb") as fh:
        np.savez(fh, ids=np.asarray(ids, dtype=str), vectors=np.asarray(vectors, dtype=np.float32))


def load_mirror(path: Path) -> tuple[list[str], np.ndarray] | None:
    """(ids, matrix), or None when there is no mirror (an index written before mirrors)."""
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        ids = data["ids"].tolist()
        return ids, np.ascontiguousarray(data["vectors"], dtype=np.float32)
