"""Query-time vectors shared by everything that embeds a question.

A question asked of a library is embedded by the router (to rank the documents) and then by the
chosen document's retrieval; a multi-hop question's sub-questions are embedded once per document
they are searched in. One model call costs as much for one short text as for a few, and about
20 ms on the CPU, a tenth of a first ask: the vectors are cached once per embedder, keyed by the
exact text, least recently used dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from bookindex.core.protocols import Embedder

QUERY_VECTOR_CACHE = 2048  # query texts whose vectors stay cached (384 floats each: ~3 MB)


class QueryVectors:
    """The vectors of query texts from one embedder, encoded once per text (thread-safe)."""

    def __init__(self, embedder: Embedder, size: int = QUERY_VECTOR_CACHE) -> None:
        if size < 1:
            raise ValueError(f"query vector cache size must be at least 1, got {size}")
        self.embedder = embedder
        self.size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    def vectors(self, texts: list[str]) -> list[np.ndarray]:
        """One float32 vector per text, in order; the texts not cached are encoded in one call."""
        with self._lock:
            hits = {t: self._cache[t] for t in texts if t in self._cache}
            for t in hits:
                self._cache.move_to_end(t)
        todo = list(dict.fromkeys(t for t in texts if t not in hits))
        if todo:
            # encoded outside the lock: a slow model call must not hold up cached lookups
            encoded = np.asarray(self.embedder.encode(todo), dtype=np.float32)
            if encoded.shape[0] != len(todo):
                raise ValueError(f"embedder {self.embedder.name!r} returned {encoded.shape[0]} vectors "
                                 f"for {len(todo)} texts")
            hits.update(zip(todo, encoded))
            with self._lock:
                for t in todo:
                    self._cache[t] = hits[t]
                while len(self._cache) > self.size:
                    self._cache.popitem(last=False)
        return [hits[t] for t in texts]
