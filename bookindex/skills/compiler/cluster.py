"""One level of the hierarchy: K-Means on L2-normalised vectors, small groups merged away.

Paper §3.2: each level partitions its n items into ceil(n/p) groups with K-Means (hard
assignments, so every document has exactly one path), and groups below a minimum size merge into
the nearest centroid so no orphan folders appear. A fixed seed and a fixed `n_init` make the
result a function of the input rows alone; the caller sorts its rows so input order does not
matter either.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

N_INIT = 1        # k-means++ restarts; one is deterministic and keeps SciFact's 519-way split fast
MAX_ITER = 100


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float32."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


def n_groups(n: int, branching: int) -> int:
    """ceil(n / p), at least one."""
    return max(1, math.ceil(n / max(2, branching)))


def partition(vectors: np.ndarray, k: int, *, min_size: int, seed: int) -> list[list[int]]:
    """Row indices of each group, groups ordered by their first row, rows ascending.

    Groups smaller than `min_size` are merged, smallest first, into the group whose centroid is
    nearest theirs, until every group is large enough or one group is left.
    """
    n = len(vectors)
    if n == 0:
        return []
    x = normalise(vectors)
    k = max(1, min(k, n))
    if k == 1:
        return [list(range(n))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # duplicate rows: fewer distinct clusters
        labels = KMeans(n_clusters=k, n_init=N_INIT, max_iter=MAX_ITER, random_state=seed).fit_predict(x)
    groups: dict[int, list[int]] = {}
    for i, lab in enumerate(labels):
        groups.setdefault(int(lab), []).append(i)
    merged = merge_small([g for g in groups.values() if g], x, min_size)
    return sorted((sorted(g) for g in merged), key=lambda g: g[0])


def merge_small(groups: list[list[int]], x: np.ndarray, min_size: int) -> list[list[int]]:
    """Fold each group below `min_size` into the group with the nearest centroid."""
    groups = [list(g) for g in groups]
    while len(groups) > 1:
        small = [i for i, g in enumerate(groups) if len(g) < min_size]
        if not small:
            break
        s = min(small, key=lambda i: (len(groups[i]), groups[i][0]))
        cents = np.stack([centroid(x[g]) for g in groups])
        sims = cents @ cents[s]
        sims[s] = -np.inf
        target = int(np.argmax(sims))
        groups[target].extend(groups[s])
        del groups[s]
    return groups


def centroid(rows: np.ndarray) -> np.ndarray:
    """The normalised mean of some rows (a zero vector stays zero)."""
    return normalise(np.asarray(rows, dtype=np.float32).mean(axis=0, keepdims=True))[0]


def cap_size(groups: list[list[int]], vectors: np.ndarray, max_size: int, *, seed: int) -> list[list[int]]:
    """Groups larger than `max_size` split by 2-means until none is (the same rule incremental
    updates apply, so a fresh leaf does not split on the first document added to it)."""
    out: list[list[int]] = []
    todo = [sorted(g) for g in groups]
    while todo:
        g = todo.pop(0)
        if len(g) <= max_size:
            out.append(g)
            continue
        a, b = split_in_two(vectors[g], seed=seed)
        todo[:0] = [[g[i] for i in a], [g[i] for i in b]]
    return sorted(out, key=lambda g: g[0])


def split_in_two(vectors: np.ndarray, *, seed: int) -> tuple[list[int], list[int]]:
    """2-means of an oversized leaf (incremental updates); falls back to halves when the rows
    cannot be separated (identical vectors)."""
    n = len(vectors)
    parts = partition(vectors, 2, min_size=1, seed=seed)
    if len(parts) < 2:
        return list(range(n // 2)), list(range(n // 2, n))
    return parts[0], parts[1]


def soft_members(x: np.ndarray, groups: list[list[int]], extra: int, margin: float) -> list[list[int]]:
    """For each group, the rows of other groups it should list too (soft membership).

    A row is listed in up to `extra` other groups whose centroid is within `margin` cosine of its
    own group's centroid similarity (nearest first): a document on a border is then found from
    either side, where hard K-Means gives it one path only. Rows within each group ascending.
    """
    if extra <= 0 or len(groups) < 2:
        return [[] for _ in groups]
    cents = np.stack([centroid(x[g]) for g in groups])
    home = np.empty(len(x), dtype=np.int64)
    for gi, g in enumerate(groups):
        home[g] = gi
    sims = x @ cents.T                                   # (rows, groups)
    own = sims[np.arange(len(x)), home]
    sims[np.arange(len(x)), home] = -np.inf
    out: list[list[int]] = [[] for _ in groups]
    top = np.argsort(-sims, axis=1, kind="stable")[:, :extra]
    for r in range(len(x)):
        for gi in top[r]:
            if sims[r, gi] >= own[r] - margin:
                out[int(gi)].append(r)
    return [sorted(rows) for rows in out]
