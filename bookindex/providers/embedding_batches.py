"""Bulk encoding for index builds: each distinct text once, in batches of similar length.

Why: a document repeats itself. Running heads, footers, repeated table rows, boilerplate
paragraphs and equal section paths come back page after page (3-30 % of a document's nodes
are copies of another node's text), and encoding the same string twice gives the same vector.
Encoding each distinct text once and handing its vector to every copy removes that work
without changing a single vector beyond float rounding (a row's padding partners change, so
results agree to ~1e-6). Batches are cut from the texts sorted by length, so a batch is padded
to a length its members nearly share, instead of to the longest of an arbitrary mix.

Documents of one library repeat each other too: filings of one company year after year, the
entity names every report shares ("net sales", "fiscal year"). A `VectorMemo` keeps the vectors
of the last short texts an embedder encoded in this process (bounded: MEMO_ENTRIES of at most
MEMO_MAX_CHARS characters, ~30 MB for MiniLM), so a build worker embeds such a text once for all
the documents it builds; a vector from the memo is the vector that text was given before.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bookindex.core.errors import BookIndexError

__all__ = ["BULK_BATCH", "VectorMemo", "distinct", "encode_distinct", "memo_for"]

BULK_BATCH = 64  # texts handed to the embedder per call (it may split them further)
MEMO_ENTRIES = 16384  # texts a memo keeps (least recently used dropped first)
MEMO_MAX_CHARS = 200  # longer texts rarely recur across documents: not kept


class VectorMemo:
    """The vectors of short texts one embedder encoded, least recently used dropped first."""

    def __init__(self, entries: int = MEMO_ENTRIES, max_chars: int = MEMO_MAX_CHARS) -> None:
        self.entries, self.max_chars = entries, max_chars
        self._vecs: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # a server builds documents in threads

    def __len__(self) -> int:
        return len(self._vecs)

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vec = self._vecs.get(text)
            if vec is not None:
                self._vecs.move_to_end(text)
            return vec

    def put(self, texts: Sequence[str], vecs: np.ndarray) -> None:
        with self._lock:
            for t, v in zip(texts, vecs):
                if len(t) <= self.max_chars:
                    self._vecs[t] = np.array(v, dtype=np.float32)  # a copy: callers may edit theirs
                    self._vecs.move_to_end(t)
            while len(self._vecs) > self.entries:
                self._vecs.popitem(last=False)


_MEMOS: weakref.WeakKeyDictionary[Any, VectorMemo] = weakref.WeakKeyDictionary()
_MEMOS_LOCK = threading.Lock()


def memo_for(embedder: Any) -> VectorMemo | None:
    """The process's memo of `embedder` (created on first use; it goes with the embedder), or
    None for an embedder that cannot be referenced weakly."""
    with _MEMOS_LOCK:
        try:
            memo = _MEMOS.get(embedder)
            if memo is None:
                memo = _MEMOS[embedder] = VectorMemo()
        except TypeError:
            return None
        return memo


def distinct(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(the distinct texts in first-seen order, for each input the row of its text in that list)."""
    index: dict[str, int] = {}
    rows = [index.setdefault(t, len(index)) for t in texts]
    return list(index), np.asarray(rows, dtype=np.int64)


def encode_distinct(embedder: Any, texts: Sequence[str], *, batch: int = BULK_BATCH,
                    on_batch: Callable[[int], None] | None = None,
                    memo: VectorMemo | None = None) -> np.ndarray:
    """The vectors of `texts` (float32, one row per input, in input order), each distinct text
    encoded once, and not at all when `memo` has it. `on_batch(n)`: n more inputs done
    (progress; n counts copies too, so the calls add up to len(texts))."""
    uniq, rows = distinct(texts)
    copies = np.bincount(rows, minlength=len(uniq)) if len(uniq) else np.zeros(0, np.int64)
    known = {i: v for i, v in ((i, memo.get(t)) for i, t in enumerate(uniq)) if v is not None} if memo else {}
    if known and on_batch is not None:
        on_batch(int(copies[list(known)].sum()))
    order = sorted((i for i in range(len(uniq)) if i not in known), key=lambda i: len(uniq[i]))
    chunks: list[np.ndarray] = []
    for k in range(0, len(order), batch):
        part = order[k:k + batch]
        chunks.append(np.asarray(embedder.encode([uniq[i] for i in part], progress=False), dtype=np.float32))
        if on_batch is not None:
            on_batch(int(copies[part].sum()))
    dim = int(getattr(embedder, "dim", 0) or (chunks[0].shape[1] if chunks else 0)
              or (len(next(iter(known.values()))) if known else 0))
    vecs = np.zeros((len(uniq), dim), dtype=np.float32)
    if chunks:
        new = np.vstack(chunks)
        if new.shape != (len(order), dim):
            raise BookIndexError(f"embedder returned shape {new.shape}, expected ({len(order)}, {dim})")
        vecs[np.asarray(order, dtype=np.int64)] = new
        if memo is not None:
            memo.put([uniq[i] for i in order], new)
    for i, v in known.items():
        vecs[i] = v
    return vecs[rows]
