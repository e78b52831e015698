"""Which documents of a library a question is about, without an LLM (issue 14).

Three signals per document, fused by weighted reciprocal rank (k = 60), because each fails on different
questions (measured on MMLongBench dev pooled as one library, docs/benchmarks.md "Library
hierarchy (issue 14)"):
- `nodes`: the mean of the question's three best cosines with the document's stored node
  vectors (its sections and blocks). The best node alone (today's `Engine.route`) is won by one
  lucky caption; the top three are steadier.
- `lexical`: BM25 over whole documents with one library-wide IDF, so a term that names one
  document ("Best Buy", "Camry") counts, while a term every report shares does not.
- `vector`: the cosine with the document's own embedding (title and opening text: what the
  topic clusters were built from).
- `name`: question words (a company, a year) that name the document by its file name or title
  (`namematch`); sparse: a document it does not match gets no rank from it.

`pooled_search` is the flat alternative: every block of every document in one BM25 index and one
vector matrix, fused per block, so the top blocks may come from several documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bookindex.core.model import LEAF_TYPES, DocumentTree, node_text
from bookindex.core.protocols import Embedder
from bookindex.providers.lexical import LexicalIndex
from bookindex.skills.compile import embed_documents
from bookindex.skills.corpus import tree_text
from bookindex.skills.model import CorpusDocument
from bookindex.skills.namematch import NameMatcher
from bookindex.storage.library import StoredDocument

RRF_K = 60
TOP_NODES = 3
SIGNALS = ("nodes", "lexical", "vector", "name")
SPARSE = frozenset({"name"})   # signals that rank only the documents they match
# the document embedding is the weakest signal alone (hit@1 0.57 vs 0.71 nodes, 0.64 lexical on
# MMLongBench dev pooled) and counts half; tuned on that split, so its figures are development ones
# (docs/benchmarks.md, "Library hierarchy (issue 14)", for the `name` weight too)
WEIGHTS = {"nodes": 1.0, "lexical": 1.0, "vector": 0.5, "name": 0.5}
EMBED_CHARS = 2000   # of a document embedded for the `vector` signal (the compiler's default)


@dataclass
class RoutedDocument:
    doc_id: str
    score: float                   # the fused RRF score
    signals: dict[str, float]      # each signal's raw value
    ranks: dict[str, int]          # each signal's rank (1 = best)


class LibraryRouter:
    """Document ranking for one library state; built once, queried per question."""

    def __init__(self, doc_ids: Sequence[str], texts: Sequence[str], doc_vectors: np.ndarray,
                 node_vectors: Sequence[np.ndarray | None], names: Sequence[str] | None = None,
                 weights: dict[str, float] | None = None) -> None:
        self.doc_ids = list(doc_ids)
        self.lexical = LexicalIndex(self.doc_ids, list(texts))
        self.doc_vectors = np.asarray(doc_vectors, dtype=np.float32)
        self.node_vectors = list(node_vectors)
        self.names = NameMatcher(names if names is not None else [""] * len(self.doc_ids))
        self.weights = dict(WEIGHTS if weights is None else weights)

    def signals(self, question: str, qvec: np.ndarray) -> dict[str, np.ndarray]:
        """Each signal's value for every document, in `doc_ids` order."""
        nodes = np.array([_top_mean(m, qvec) for m in self.node_vectors], dtype=np.float32)
        return {"nodes": nodes, "lexical": np.asarray(self.lexical.scores(question), dtype=np.float32),
                "vector": self.doc_vectors @ qvec if len(self.doc_vectors) else np.zeros(0, np.float32),
                "name": self.names.scores(question)}

    def rank(self, question: str, qvec: np.ndarray, candidates: Sequence[str] | None = None) -> list[RoutedDocument]:
        """Documents (all, or `candidates`) by fused rank, ties by id."""
        values = self.signals(question, qvec)
        keep = [i for i, d in enumerate(self.doc_ids) if candidates is None or d in set(candidates)]
        fused = {i: 0.0 for i in keep}
        ranks: dict[int, dict[str, int]] = {i: {} for i in keep}
        for name in SIGNALS:
            ranked = [i for i in keep if name not in SPARSE or values[name][i] > 0]
            order = sorted(ranked, key=lambda i: (-float(values[name][i]), self.doc_ids[i]))
            for r, i in enumerate(order, 1):
                fused[i] += self.weights.get(name, 0.0) / (RRF_K + r)
                ranks[i][name] = r
        out = [RoutedDocument(self.doc_ids[i], round(fused[i], 6),
                              {n: round(float(values[n][i]), 4) for n in SIGNALS}, ranks[i]) for i in keep]
        out.sort(key=lambda r: (-r.score, r.doc_id))
        return out


def _top_mean(matrix: np.ndarray | None, qvec: np.ndarray) -> float:
    if matrix is None or not len(matrix):
        return -1.0
    sims = matrix @ qvec
    k = min(TOP_NODES, len(sims))
    return float(np.partition(sims, len(sims) - k)[-k:].mean())


@dataclass
class PooledHit:
    doc_id: str
    node_id: str
    score: float


class PooledIndex:
    """Every leaf of every document as one ranked collection: BM25 (one IDF) + cosine, RRF."""

    def __init__(self, trees: Sequence[DocumentTree], node_vectors: Sequence[tuple[list[str], np.ndarray | None]]) -> None:
        self.keys: list[tuple[str, str]] = []
        texts: list[str] = []
        for tree in trees:
            for n in tree.leaves():
                if n.type in LEAF_TYPES:
                    self.keys.append((tree.doc_id, n.id))
                    texts.append(node_text(tree, n))
        self.lexical = LexicalIndex([f"{d}/{n}" for d, n in self.keys], texts)
        row = {k: i for i, k in enumerate(self.keys)}
        dim = next((m.shape[1] for _, m in node_vectors if m is not None), 0)
        self.vectors = np.zeros((len(self.keys), dim), dtype=np.float32)
        for tree, (ids, mat) in zip(trees, node_vectors):
            if mat is None:
                continue
            for nid, vec in zip(ids, mat):
                i = row.get((tree.doc_id, nid))
                if i is not None:
                    self.vectors[i] = vec

    def search(self, question: str, qvec: np.ndarray, k: int = 10, pool: int = 100) -> list[PooledHit]:
        lex = np.asarray(self.lexical.scores(question), dtype=np.float32)
        dense = self.vectors @ qvec if self.vectors.shape[1] == len(qvec) else np.zeros(len(self.keys), np.float32)
        fused = np.zeros(len(self.keys), dtype=np.float64)
        for scores, only_positive in ((lex, True), (dense, False)):
            order = np.argsort(-scores, kind="stable")[:pool]
            for r, i in enumerate(order, 1):
                if only_positive and scores[i] <= 0:
                    break
                fused[i] += 1.0 / (RRF_K + r)
        top = np.argsort(-fused, kind="stable")[:k]
        return [PooledHit(self.keys[i][0], self.keys[i][1], round(float(fused[i]), 6)) for i in top if fused[i] > 0]


def router_for(stored: Sequence[StoredDocument], embedder: Embedder, embed_chars: int = EMBED_CHARS) -> LibraryRouter:
    """A router over a library's stored documents: their text and title (as the compiler reads
    them), their embedding, and their stored node vectors."""
    docs = [CorpusDocument(id=d.doc_id, title=(d.tree.root.title.strip() or d.name), text=tree_text(d.tree))
            for d in stored]
    vectors = embed_documents(docs, embedder, embed_chars)
    return LibraryRouter([d.id for d in docs], [f"{d.title}\n{d.text}" for d in docs], vectors,
                         [_normalised(d.node_vectors()[1]) for d in stored],
                         names=[f"{d.name} {c.title}" for d, c in zip(stored, docs)])


def _normalised(m: np.ndarray | None) -> np.ndarray | None:
    if m is None:
        return None
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(n > 0, n, 1.0)).astype(np.float32)
