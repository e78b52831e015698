"""Plain-numpy copies of the LanceDB vector tables (ids + float32 matrix, one .npz file).

Why: a query process needs the vectors of one document as a matrix. Reading an .npz takes
milliseconds; importing lancedb alone takes over a second, which would be most of the open
budget. LanceDB stays the store of record; the mirror is written next to it, atomically.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def save_mirror(path: Path, ids: list[str], vectors: np.ndarray) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, ids=np.asarray(ids, dtype=str), vectors=np.asarray(vectors, dtype=np.float32))
    os.replace(tmp, path)


def load_mirror(path: Path) -> tuple[list[str], np.ndarray] | None:
    """(ids, matrix), or None when there is no mirror (an index written before mirrors)."""
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        ids = data["ids"].tolist()
        return ids, np.ascontiguousarray(data["vectors"], dtype=np.float32)
