"""Baseline retrievers compared against bookindex.

All run over the same parsed tree leaves and embedder as bookindex and return ranked
`bookindex.core.model.Evidence` (node, page, bbox), so one scorer serves every method:

- ``bm25``: BM25 (the shared `LexicalIndex`) over blocks; only blocks sharing a term with the question.
- ``dense``: cosine top-k over the leaf embeddings stored by the library.
- ``hybrid``: reciprocal rank fusion (k = 60) of the BM25 and dense rankings.
- ``chunks``: vanilla RAG, dense top-k over ~500-token chunks of the concatenated text; the
  evidence is the chunk's first node (a chunk spanning pages contributes that node's page).
- ``tree``: TreeTraverse, top-down navigation of the table of contents (LLM or greedy).
- ``bm25-pages``: calibration only, BM25 over whole pages (k pages), the unit of the
  reference figures in the data README.

Per-document BM25 indexes and chunk/section vectors are kept on the opened document
(`IndexContext.views.baseline`), so repeated questions over one document pay the indexing cost once.
"""

from __future__ import annotations

from bookindex.core.errors import InputError
from bookindex.core.model import Evidence
from bookindex.operators.context import IndexContext
from bookindex.retrieval.baselines import methods
from bookindex.retrieval.baselines.index import build_chunks, get_index
from bookindex.retrieval.baselines.methods import rrf_fuse
from bookindex.retrieval.baselines.tree import tree_traverse

METHODS = ("bm25", "dense", "hybrid", "chunks", "tree")
CALIBRATION_METHODS = ("bm25-pages",)
_NEEDS_EMBEDDER = {"dense", "hybrid", "chunks", "tree"}

def run_baseline(method: str, ctx: IndexContext, question: str, k: int = 10) -> list[Evidence]:
    """Rank the document's content for `question` with a baseline and return the top-k evidence.

    The context's embedder embeds the queries (the one that built the stored vectors); its LLM
    is used only by ``tree``.
    """
    method = method.strip().lower()
    if method not in METHODS + CALIBRATION_METHODS:
        raise InputError(f"unknown baseline method {method!r}; choose one of {', '.join(METHODS)}")
    if k < 1:
        raise InputError(f"k must be >= 1, got {k}")
    doc = ctx.index
    idx = get_index(ctx)
    if method == "bm25":
        return methods.bm25(idx, question, k)
    if method == "bm25-pages":
        return methods.bm25_pages(idx, question, k)
    embedder = ctx.embedder
    if embedder is None:
        raise InputError(f"method {method!r} needs an embedder (embedding.provider)")
    if method == "dense":
        return methods.dense(idx, doc, question, k, embedder)
    if method == "hybrid":
        return methods.hybrid(idx, doc, question, k, embedder)
    if method == "chunks":
        return methods.chunks(idx, question, k, embedder)
    return tree_traverse(idx, doc, question, k, embedder, llm=ctx.llm)


def evidence_text(ctx: IndexContext, ev: Evidence) -> str:
    """What a reader gets for one evidence item: the chunk for chunk evidence, the whole page
    for page evidence, else the node's content."""
    if "chunk_index" in ev.scores:
        idx = get_index(ctx)
        chunks = idx.chunks if idx.chunks is not None else build_chunks(idx)
        return chunks[int(ev.scores["chunk_index"])].text
    if "page_unit" in ev.scores:
        return "\n".join(n.content for n in ctx.tree.leaves() if n.page_idx == ev.page_idx)
    node = ctx.tree.nodes.get(ev.node_id)
    return node.content if node is not None else ev.snippet


__all__ = ["METHODS", "CALIBRATION_METHODS", "run_baseline", "evidence_text", "rrf_fuse"]
