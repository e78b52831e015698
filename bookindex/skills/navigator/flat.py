"""Flat search over a skill folder's documents: the baselines navigation is measured against.

- `bm25`: BM25 over title + text (the project's one lexical index);
- `dense`: cosine with the document vectors the compiler stored (the configured embedder);
- `hybrid`: reciprocal rank fusion (k = 60) of the two;
- `raptor`: RAPTOR's collapsed tree on the same clusters: documents and cluster summaries in one
  flat ranking, a summary hit standing for its member documents (ranked among themselves by
  their own similarity), until k documents are taken.

All return a `SkillsAnswer` whose documents are the top k, so every method is scored, counted
and printed the same way as a navigation.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from bookindex.core.errors import InputError
from bookindex.core.protocols import Embedder
from bookindex.retrieval.baselines.methods import rrf_fuse
from bookindex.skills.navigator.answer import NavStep, RankedDocument, SkillsAnswer, SkillsUsage, count_tokens
from bookindex.skills.navigator.opened import OpenedSkills

FUSE_DEPTH = 200  # ranks of each list fused by hybrid (deeper ones cannot reach a top 10 by RRF)


def _order(scores: np.ndarray, ids: list[str]) -> list[int]:
    return sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))


def bm25(opened: OpenedSkills, embedder: Embedder, question: str, k: int) -> list[tuple[str, float]]:
    lex = opened.lexical
    s = lex.scores(question)
    return [(lex.ids[i], float(s[i])) for i in _order(s, lex.ids)[:k]]


def dense(opened: OpenedSkills, embedder: Embedder, question: str, k: int) -> list[tuple[str, float]]:
    ids = opened.vectors.doc_ids
    s = opened.doc_scores(opened.query_vector(embedder, question))
    return [(ids[i], float(s[i])) for i in _order(s, ids)[:k]]


def hybrid(opened: OpenedSkills, embedder: Embedder, question: str, k: int) -> list[tuple[str, float]]:
    b = [d for d, _ in bm25(opened, embedder, question, FUSE_DEPTH)]
    d = [x for x, _ in dense(opened, embedder, question, FUSE_DEPTH)]
    return [(doc, float(score)) for doc, score in rrf_fuse([b, d])[:k]]


def raptor(opened: OpenedSkills, embedder: Embedder, question: str, k: int) -> list[tuple[str, float]]:
    if not opened.tree.clusters:
        raise InputError(f"{opened.folder}: raptor needs the skill tree's clusters; this folder has none")
    qvec = opened.query_vector(embedder, question)
    doc_ids = opened.vectors.doc_ids
    doc_s = opened.doc_scores(qvec)
    doc_score = {d: float(doc_s[i]) for i, d in enumerate(doc_ids)}
    nodes: list[tuple[float, str, str]] = [(float(doc_s[i]), "doc", d) for i, d in enumerate(doc_ids)]
    cids = opened.vectors.cluster_ids
    if cids:
        cs = opened.vectors.cluster_vectors @ qvec
        nodes += [(float(cs[i]), "cluster", c) for i, c in enumerate(cids) if c in opened.tree.clusters]
    nodes.sort(key=lambda n: (-n[0], n[1], n[2]))
    out: dict[str, float] = {}
    for score, kind, ident in nodes:
        if kind == "doc":
            out.setdefault(ident, score)
        else:
            for d in sorted(opened.members(ident), key=lambda d: -doc_score.get(d, -1.0)):
                out.setdefault(d, score)
                if len(out) >= k:
                    break
        if len(out) >= k:
            break
    return list(out.items())[:k]


FLAT_METHODS: dict[str, Callable[[OpenedSkills, Embedder, str, int], list[tuple[str, float]]]] = {
    "bm25": bm25, "dense": dense, "hybrid": hybrid, "raptor": raptor,
}


def flat_search(opened: OpenedSkills, embedder: Embedder, question: str, method: str, k: int = 10) -> SkillsAnswer:
    """The top-k documents of a flat method, each counted as one get_document."""
    if method not in FLAT_METHODS:
        raise InputError(f"unknown corpus search method {method!r}; choose from {', '.join(FLAT_METHODS)}")
    t0 = time.perf_counter()
    ranked = FLAT_METHODS[method](opened, embedder, question, k)
    docs, steps = [], []
    for doc_id, score in ranked:
        doc = opened.documents.get(doc_id)
        docs.append(RankedDocument(doc_id=doc_id, title=doc.title if doc else "", score=round(score, 6)))
        text = opened.tools.get_document(doc_id).text if doc else ""
        steps.append(NavStep(round=1, tool="get_document", target=doc_id, tokens=count_tokens(text),
                             score=round(score, 6)))
    usage = SkillsUsage(rounds=1, documents_fetched=len(docs), document_tokens=sum(s.tokens for s in steps),
                        seconds=round(time.perf_counter() - t0, 4))
    return SkillsAnswer(question=question, navigator=method, documents=docs, steps=steps, usage=usage)
