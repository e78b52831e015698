"""The no-LLM navigator: beam search down the skill tree by embedding similarity.

At each level the query vector is compared with every candidate cluster and the best `beam`
are kept and opened; their children are the next level's candidates. Leaves reached hand over
their documents, which are ranked by the query's similarity to each document vector; the top k
are "fetched". It is the agent's walk with cosine similarity in place of judgement, so it works
offline and can be measured against flat search on the same documents.

What a cluster is compared by (`route`): "summary" is the embedding of its summary (the paper's
signal, what an agent reads), "centroid" the mean of its member documents' vectors (what the
clustering grouped by), "both" their mean, "leaves" the best of its leaves' centroids, and
"members" (the default) the best similarity of any document listed under it. A mean hides the
one document a specific question is about: on SciFact the gold document's leaf is the best leaf
by centroid for only half of the claims, while judging a cluster by its best member keeps the
beam on the branch that holds the nearest documents. "members" reads every document vector
once per question (a matrix product: flat dense search's arithmetic, not its output; the beam
still opens only the files on its path). For the mean routes a cluster with children is judged
by the better of its own score and its best child's (`lookahead`): opening a parent's file
shows its children's descriptions. Scores of different levels are never mixed: the beam keeps
the best of each level.

What a document scores (`rank`): with "hybrid" (the default) the members route judges a cluster
by its best member's reciprocal-rank fusion of the document's embedding rank and its BM25 rank,
and the documents of the reached leaves are ranked by the same fusion among themselves; "dense"
uses the embedding similarity alone. A claim's rare words (a gene, a drug, a product name) pick
out the one document about them where a single vector of an abstract blurs it among its
neighbours. Measurements: docs/benchmarks.md, "Corpus navigation".
"""

from __future__ import annotations

import math
import time

import numpy as np

from bookindex.core.errors import InputError
from bookindex.core.protocols import Embedder
from bookindex.retrieval.baselines.methods import RRF_K, rrf_fuse
from bookindex.skills.model import Cluster
from bookindex.skills.navigator.answer import (
    NavStep,
    PoolRank,
    RankedDocument,
    Route,
    SkillsAnswer,
    SkillsUsage,
    count_tokens,
)
from bookindex.skills.navigator.opened import OpenedSkills

BEAM_FACTOR = 4.0  # auto beam = factor x the leaves k documents fill (tuned on SciFact: docs/benchmarks.md)
DEFAULT_ROUTE: Route = "members"  # the best on SciFact's first 200 claims (docs/benchmarks.md)
DEFAULT_RANK: PoolRank = "hybrid"  # SciFact R@10 0.808 against dense 0.757 (docs/benchmarks.md)


def auto_beam(opened: OpenedSkills, k: int, factor: float = BEAM_FACTOR) -> int:
    """A beam that reaches about `factor` times the leaves holding k documents."""
    leaves = opened.tree.leaves()
    mean_leaf = max(1.0, sum(len(c.documents) for c in leaves) / max(1, len(leaves)))
    return max(1, math.ceil(factor * k / mean_leaf))


def cluster_score(opened: OpenedSkills, cluster: Cluster, qvec: np.ndarray, route: Route,
                  lookahead: bool = True, doc_sims: dict[str, float] | None = None) -> float:
    if route == "members":
        return member_score(opened, cluster, doc_sims or {})
    if route == "leaves":
        return max(_own_score(opened, opened.tree.cluster(leaf), qvec, "centroid") for leaf in opened.leaves_under(cluster.id))
    own = _own_score(opened, cluster, qvec, route)
    if lookahead and cluster.children:
        return max([own] + [_own_score(opened, opened.tree.cluster(ch), qvec, route) for ch in cluster.children])
    return own


def member_score(opened: OpenedSkills, cluster: Cluster, doc_sims: dict[str, float]) -> float:
    """The best similarity of any document under the cluster (its leaves' listings included)."""
    return max((doc_sims.get(d, -1.0) for d in opened.listed(cluster.id)), default=-1.0)


def _own_score(opened: OpenedSkills, cluster: Cluster, qvec: np.ndarray, route: Route) -> float:
    summary = opened.summary_vector(cluster.id)
    centroid = opened.centroids.get(cluster.id)
    s = float(summary @ qvec) if summary is not None else None
    c = float(centroid @ qvec) if centroid is not None else None
    if route == "summary" and s is not None:
        return s
    if route == "centroid" and c is not None:
        return c
    got = [x for x in (s, c) if x is not None]
    return sum(got) / len(got) if got else -1.0


def beam_search(opened: OpenedSkills, embedder: Embedder, question: str, *, k: int = 10,
                beam: int | None = None, route: Route = DEFAULT_ROUTE, lookahead: bool = True,
                leaf_pool: bool = False, rank: PoolRank = DEFAULT_RANK) -> SkillsAnswer:
    """The top-k documents under the leaves the beam reaches, with every opened file as a step.
    `leaf_pool`: once the candidates are leaves, open all of them (every leaf of the parents
    the beam kept) and rank their documents together, instead of keeping the best `beam`.
    `rank`: the reached documents ranked by their embedding similarity ("dense"), or by
    reciprocal rank fusion of that order and their BM25 order ("hybrid", `pool_order`)."""
    t0 = time.perf_counter()
    if not opened.tree.roots:
        raise InputError(f"{opened.folder}: the skill tree has no clusters to navigate")
    width = beam or auto_beam(opened, k)
    qvec = opened.query_vector(embedder, question)
    doc_sims: dict[str, float] | None = None
    if route == "members":  # reads every document vector: flat search's cost, for comparison
        doc_sims = opened.similarities(qvec) if rank == "dense" else fused_scores(opened, qvec, question)
    listing = "\n".join(f"{c.path}: {c.description}" for c in opened.roots())
    steps = [NavStep(round=0, tool="view", target="", tokens=count_tokens(listing))]
    candidates = opened.roots()
    reached: list[Cluster] = []
    depth = 0
    while candidates:
        depth += 1
        keep = len(candidates) if leaf_pool and depth > 1 and not any(c.children for c in candidates) else width
        scored = sorted(((cluster_score(opened, c, qvec, route, lookahead, doc_sims), c) for c in candidates),
                        key=lambda sc: (-sc[0], sc[1].id))[:keep]
        candidates = []
        for score, c in scored:
            nav = opened.nav_file(c)
            text = opened.tools.view(nav).text if nav else ""
            steps.append(NavStep(round=depth, tool="view", target=nav or c.path, tokens=count_tokens(text),
                                 score=round(score, 4)))
            if c.children:
                candidates.extend(opened.tree.cluster(ch) for ch in c.children)
            else:
                reached.append(c)
    pool: list[tuple[str, Cluster]] = []
    seen: set[str] = set()
    for c in reached:  # a document listed in two reached leaves counts once (soft membership)
        for d in opened.listed(c.id):
            if d not in seen:
                seen.add(d)
                pool.append((d, c))
    docs: list[RankedDocument] = []
    if pool:
        sims = opened.doc_scores(qvec, [d for d, _ in pool])
        order = pool_order([d for d, _ in pool], sims, opened, question, rank)[:k]
        for i in order:
            d, c = pool[i]
            docs.append(RankedDocument(doc_id=d, title=opened.documents[d].title if d in opened.documents else "",
                                       score=round(float(sims[i]), 4), path=c.path))
    for rd in docs:
        text = opened.tools.get_document(rd.doc_id).text if rd.doc_id in opened.documents else ""
        steps.append(NavStep(round=depth + 1, tool="get_document", target=rd.doc_id, tokens=count_tokens(text),
                             score=rd.score))
    usage = SkillsUsage(
        rounds=depth + 1, documents_fetched=len(docs), candidates=len(pool),
        navigation_tokens=sum(s.tokens for s in steps if s.tool == "view"),
        document_tokens=sum(s.tokens for s in steps if s.tool == "get_document"),
        seconds=round(time.perf_counter() - t0, 4))
    note = (f"beam {width}{' + every leaf below' if leaf_pool else ''}, route {route}{' + lookahead' if lookahead else ''}, "
            f"{len(reached)} leaves, {len(pool)} candidates ranked {rank}")
    return SkillsAnswer(question=question, navigator="embedding", documents=docs, steps=steps, usage=usage,
                        stopped="ranked", notes=[note])


def pool_order(ids: list[str], sims: np.ndarray, opened: OpenedSkills, question: str, rank: PoolRank) -> list[int]:
    """Positions of `ids` best first: by similarity, or fused (RRF, k = 60, as flat hybrid) with
    their BM25 order. The embedding finds the right neighbourhood; within it, the claim's rare
    words (a gene, a drug, a product name) separate the one document about them from its
    neighbours, which a single vector of an abstract blurs. BM25 scores come from the folder's
    index (corpus statistics); only the reached documents are ranked."""
    dense = sorted(range(len(ids)), key=lambda i: (-float(sims[i]), ids[i]))
    if rank == "dense" or len(ids) < 2:
        return dense
    lex = opened.lexical_scores(question, ids)
    lexical = sorted(range(len(ids)), key=lambda i: (-float(lex[i]), ids[i]))
    return [i for i, _ in rrf_fuse([dense, lexical])]


def fused_scores(opened: OpenedSkills, qvec: np.ndarray, question: str) -> dict[str, float]:
    """Every document's reciprocal-rank fusion (k = 60) of its embedding rank and its BM25 rank
    over the corpus: the members route's judgement of a cluster when the beam ranks hybrid."""
    ids = opened.vectors.doc_ids
    dense = opened.doc_scores(qvec)
    lex = opened.lexical_scores(question, ids)
    out = np.zeros(len(ids), dtype=np.float64)
    for scores in (dense, lex):
        order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))
        ranks = np.empty(len(ids), dtype=np.float64)
        ranks[order] = np.arange(1, len(ids) + 1)
        out += 1.0 / (RRF_K + ranks)
    return dict(zip(ids, out.tolist()))
