"""Baseline retrievers compared against bookindex (issue 6).

All run over the same parsed tree leaves and embedder as bookindex and return ranked
`bookindex.model.Evidence` (node, page, bbox), so one scorer serves every method:

- ``bm25``: BM25 (bm25s) over blocks; only blocks sharing a term with the question.
- ``dense``: cosine top-k over the leaf embeddings stored by the library.
- ``hybrid``: reciprocal rank fusion (k = 60) of the BM25 and dense rankings.
- ``chunks``: vanilla RAG, dense top-k over ~500-token chunks of the concatenated text; the
  evidence is the chunk's first node (a chunk spanning pages contributes that node's page).
- ``tree``: TreeTraverse, top-down navigation of the table of contents (LLM or greedy).
- ``bm25-pages``: calibration only, BM25 over whole pages (k pages), the unit of the
  reference figures in the data README.

Per-document BM25 indexes and chunk/section vectors are cached in memory, so repeated
questions over one document pay the indexing cost once.
"""

from __future__ import annotations

from typing import Any

from bookindex.errors import InputError
from bookindex.model import Evidence
from retrieval.baselines import methods
from retrieval.baselines.index import clear_cache, get_index
from retrieval.baselines.methods import rrf_fuse
from retrieval.baselines.tree import tree_traverse

METHODS = ("bm25", "dense", "hybrid", "chunks", "tree")
CALIBRATION_METHODS = ("bm25-pages",)
_NEEDS_EMBEDDER = {"dense", "hybrid", "chunks", "tree"}

_default_embedders: dict[int, Any] = {}


def _embedder_for(settings: Any) -> Any:
    """One shared embedder per settings object (loading MiniLM costs seconds)."""
    key = id(settings)
    if key not in _default_embedders:
        from bookindex.embedding import get_embedder

        _default_embedders[key] = get_embedder(settings)
    return _default_embedders[key]


def run_baseline(method: str, doc: Any, question: str, k: int = 10, settings: Any = None,
                 llm: Any = None, embedder: Any = None) -> list[Evidence]:
    """Rank `doc`'s content for `question` with a baseline and return the top-k evidence.

    `doc` is a StoredDocument-like object with `.tree` and `.node_vectors()`. `embedder`
    defaults to the one the document's library already loaded, else
    `bookindex.embedding.get_embedder(settings)`; `llm` is used only by ``tree``.
    """
    method = method.strip().lower()
    if method not in METHODS + CALIBRATION_METHODS:
        raise InputError(f"unknown baseline method {method!r}; choose one of {', '.join(METHODS)}")
    if k < 1:
        raise InputError(f"k must be >= 1, got {k}")
    idx = get_index(doc)
    if method == "bm25":
        return methods.bm25(idx, question, k)
    if method == "bm25-pages":
        return methods.bm25_pages(idx, question, k)
    if embedder is None:  # the library's own embedder, so stored vectors and queries match
        embedder = getattr(getattr(doc, "library", None), "_embedder", None)
    if embedder is None:
        if settings is None:
            raise InputError(f"method {method!r} needs an embedder or settings to build one")
        embedder = _embedder_for(settings)
    if method == "dense":
        return methods.dense(idx, doc, question, k, embedder)
    if method == "hybrid":
        return methods.hybrid(idx, doc, question, k, embedder)
    if method == "chunks":
        return methods.chunks(idx, question, k, embedder)
    return tree_traverse(idx, doc, question, k, embedder, llm=llm)


__all__ = ["METHODS", "CALIBRATION_METHODS", "run_baseline", "rrf_fuse", "clear_cache"]
