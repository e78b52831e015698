"""Reasoner operators (BookRAG §5.2, eqs. 6–7, 14): score the selected nodes and keep the skyline.

Graph_Reasoning: personalized PageRank on the subgraph G' of the selected nodes, seeded by the
query entities (I_G), mapped to tree nodes through the GT-links (S_G = I_G × M).
Text_Reasoning: S_T, the relevance of each node's text to the query.
Skyline_Ranker: the Pareto frontier over (S_G, S_T) — no fixed top-k (`pareto` mode), or the
weighted top-k over the frontier's layers (`weighted` mode).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from itertools import repeat
from typing import Any, Literal

import networkx as nx
import numpy as np
import scipy.sparse as sp

from bookindex.core.model import DocumentTree, entry_of, node_text
from bookindex.operators.base import Operator, Params, State, top_items
from bookindex.operators.graph_matrices import GTMatrix, adjacency, graph_adjacency, gt_matrix, gt_matrix_from_links
from bookindex.operators.graph_matrices import entity_idf as entity_idf  # re-exported: the idf's old home
from bookindex.operators.lookup import named_evidence
from bookindex.operators.structure import doc_structure, unit_ids
from bookindex.operators.textscore import hybrid_scores, page_references


def personalized_pagerank(g: nx.Graph | tuple[list[Any], sp.csr_matrix], seeds: dict[Any, float],
                          alpha: float = 0.85, max_iter: int = 100, tol: float = 1e-8) -> dict[Any, float]:
    """PPR by power iteration on a weighted undirected graph (dangling mass returns to the seeds).

    `g` is a networkx graph or a prepared (node list, CSR adjacency) pair."""
    if isinstance(g, nx.Graph):
        nodes, _, a = adjacency(g)
    else:
        nodes, a = g
    if not nodes:
        return {}
    index = {n: i for i, n in enumerate(nodes)}
    p = np.zeros(len(nodes))
    for s, w in seeds.items():
        if s in index:
            p[index[s]] += w
    x = pagerank_vector(a, p, alpha, max_iter, tol)
    return {} if x is None else {n: float(x[i]) for i, n in enumerate(nodes)}


def pagerank_vector(a: sp.csr_matrix, p: np.ndarray, alpha: float = 0.85, max_iter: int = 100,
                    tol: float = 1e-8) -> np.ndarray | None:
    """The PPR vector of adjacency `a` for the (unnormalised) restart vector `p`; None when `p`
    holds no mass."""
    if p.sum() <= 0:
        return None
    p = p / p.sum()
    deg = np.asarray(a.sum(axis=1)).ravel()
    inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    # row-stochastic where deg > 0: each stored entry scaled by its row's 1/deg (what
    # diag(inv) @ a computes, without a sparse product), transposed once for the iterations
    t = sp.csr_matrix((a.data * np.repeat(inv, np.diff(a.indptr)), a.indices, a.indptr), shape=a.shape)
    tt = t.T
    x = p.copy()
    dangling = deg == 0
    for _ in range(max_iter):
        x_new = alpha * (tt @ x) + (alpha * x[dangling].sum() + (1 - alpha)) * p
        if np.abs(x_new - x).sum() < tol:
            x = x_new
            break
        x = x_new
    return x


class GraphReasoningParams(Params):
    alpha: float = 0.85
    entity_idf: bool = True
    entity_ids: list[str] | None = None  # override the seeds


class GraphReasoning(Operator[GraphReasoningParams]):
    """Eqs. (6)–(7): I_G = PageRank(G', e) on the selected subgraph, S_G = I_G × M.

    With `entity_idf` each entity's mass is weighted by its inverse node frequency when it is
    mapped to nodes (M weighted like TF-IDF): hub entities otherwise lift every node they touch.
    """

    name = "Graph_Reasoning"
    kind = "reasoner"

    Params = GraphReasoningParams

    def apply(self, state: State) -> State:
        graph, tree = self.ctx.graph, self.ctx.tree
        seeds_all = [e for e in (self.params.entity_ids or state.entity_ids) if e in graph.entities]
        if not seeds_all or not graph.entities:
            state.scores["graph"] = {}
            self.note(skipped="no query entities to seed PageRank")
            return state
        views = self.ctx.views
        if views.graph_adjacency is None:  # the whole G once per document (stored, else built); G' is a slice
            views.graph_adjacency = self.ctx.index.entity_adjacency() or graph_adjacency(graph)
        nodes, index, a = views.graph_adjacency
        if views.gt_matrix is None:  # M: stored links when the index has them for these entities
            links = self.ctx.index.gt_links()
            views.gt_matrix = gt_matrix_from_links(tree, links) if links is not None and len(links[1]) == len(nodes) + 1 \
                else gt_matrix(graph, tree)
        gm: GTMatrix = views.gt_matrix
        if state.candidates is None:
            cand_cols = np.arange(gm.n_tree)
        else:
            cand_cols = np.fromiter((gm.column[c] for c in set(state.candidates) if c in gm.column), dtype=np.int64)
        # G': the entities of the candidate nodes, and the seeds, in adjacency order
        linked = np.unique(gm.by_node[:, cand_cols].indices)
        rows = np.union1d(linked, [index[e] for e in seeds_all if e in index]).astype(np.int64)
        sub_a = a[rows][:, rows]
        seeds = {e: 1.0 / (1 + i) for i, e in enumerate(seeds_all)}
        restart = np.zeros(len(rows))
        for e, w in seeds.items():
            if e in index:
                restart[np.searchsorted(rows, index[e])] += w
        ig = pagerank_vector(sub_a, restart, alpha=self.params.alpha) if len(rows) else None
        sg: dict[str, float] = {}
        if ig is not None:
            weight = np.where(ig > 0, ig, 0.0)
            if self.params.entity_idf:
                weight = weight * gm.idf[rows]
            sg_all = gm.by_entity[rows].T @ weight  # S_G = I_G × M
            in_scope = np.zeros(len(gm.node_ids), dtype=bool)
            in_scope[cand_cols[cand_cols < gm.n_tree]] = True
            for c in np.flatnonzero(in_scope & (sg_all > 0)):
                sg[gm.node_ids[c]] = float(sg_all[c])
        mx = max(sg.values(), default=0.0)
        state.scores["graph"] = {k: v / mx for k, v in sg.items()} if mx > 0 else {}
        top_entities = ([] if ig is None else
                        top_items([(nodes[rows[k]], float(ig[k])) for k in _top_positions(ig, 8)], 8))
        self.note(subgraph={"entities": len(rows), "relations": int(sub_a.nnz // 2)},
                  seeds=list(seeds), top_entities=top_entities,
                  outputs=top_items(state.scores["graph"], 10))
        return state


def _top_positions(values: np.ndarray, n: int) -> np.ndarray:
    """Positions of the `n` largest values and of every value tied with the n-th (so a tie-break
    by id afterwards picks the same items a full sort would)."""
    if len(values) <= n:
        return np.arange(len(values))
    nth = np.partition(values, len(values) - n)[len(values) - n]
    return np.flatnonzero(values >= nth)


class TextReasoningParams(Params):
    rerank: Literal["auto", "always", "never"] = "auto"
    rerank_top: int = 30
    lexical_weight: float = 0.6
    page_weight: float = 0.0
    neighbour_weight: float = 0.2
    page_ref_boost: float = 1.0


class TextReasoning(Operator[TextReasoningParams]):
    """S_T: hybrid BM25 + dense relevance of each selected leaf (with its section titles), refined
    by the configured reranker on the best `rerank_top` when it is a distinct model."""

    name = "Text_Reasoning"
    kind = "reasoner"

    Params = TextReasoningParams

    def apply(self, state: State) -> State:
        tree = self.ctx.tree
        p = self.params
        allscores = hybrid_scores(self.ctx, state.question, lexical_weight=p.lexical_weight,
                                  page_weight=p.page_weight, neighbour_weight=p.neighbour_weight)
        refs = (page_references(state.question, tree.page_count, self.ctx.page_labels)
                if p.page_ref_boost > 0 else set())
        if refs and state.candidates is not None:  # a page the question names is always in scope
            on_pages = [n.id for n in tree.leaves() if n.page_idx in refs]
            state.candidates = list(dict.fromkeys(list(state.candidates) + on_pages))
        ids = unit_ids(self.ctx, state.candidates)
        st = {i: allscores[i] for i in ids if i in allscores}
        if refs:  # the question names pages: their nodes first, still ordered by relevance
            st = {i: v + (p.page_ref_boost if tree.nodes[i].page_idx in refs else 0.0) for i, v in st.items()}
            self.note(page_references=sorted(x + 1 for x in refs))
        provider = self.ctx.settings.reranker.provider
        use = p.rerank == "always" or (p.rerank == "auto" and provider != "embedding")
        if use and self.ctx.reranker is not None and st:
            top = [k for k, _ in sorted(st.items(), key=lambda kv: (-kv[1], kv[0]))[: p.rerank_top]]
            try:
                rr = self.ctx.rerank(state.question, [node_text(tree, tree.nodes[i], "lexical")[:1500] for i in top]) or []
                arr = np.asarray(rr, dtype=np.float64)
                if arr.size:
                    lo, hi = float(arr.min()), float(arr.max())
                    norm = (arr - lo) / (hi - lo) if hi > lo else np.ones_like(arr)
                    for k, v in zip(top, norm):
                        st[k] = 0.5 * st[k] + 0.5 * float(v) + 0.5  # reranked nodes stay above the rest
                    self.note(reranked=len(top))
            except Exception as exc:  # noqa: BLE001 - a failing reranker leaves the hybrid scores
                self.note(fallback=f"reranker failed ({type(exc).__name__}); kept hybrid scores")
        mx = max(st.values(), default=0.0)
        state.scores["text"] = {k: v / mx for k, v in st.items()} if mx > 0 else st
        self.note(scored=len(st), outputs=top_items(state.scores["text"], 10))
        return state


def pareto_front(points: dict[str, tuple[float, ...]]) -> list[str]:
    """Ids not dominated by any other point (≥ in every dimension and > in one)."""
    ids = list(points)
    if not ids:
        return []
    if len(next(iter(points.values()))) == 2:  # the first layer of the O(n log n) sweep
        return next(pareto_layers(points))
    m = np.array([points[i] for i in ids], dtype=np.float64)
    keep = []
    for k in range(len(ids)):
        ge = np.all(m >= m[k], axis=1)
        gt = np.any(m > m[k], axis=1)
        if not np.any(ge & gt):
            keep.append(ids[k])
    return keep


def pareto_layers(points: dict[str, tuple[float, ...]]) -> Iterator[list[str]]:
    """Skyline layers, best first: layer 0 is `pareto_front(points)`, layer k the front of what is
    left after layers 0..k-1. Within a layer ids keep their input order; lazy, so a caller that
    stops after a few layers pays for those only (one or two criteria: all layers in one sort)."""
    ids = list(points)
    if not ids:
        return
    dims = len(next(iter(points.values())))
    if dims == 1:  # one criterion: a layer is a score level
        levels = sorted({points[i][0] for i in ids}, reverse=True)
        rank = {v: k for k, v in enumerate(levels)}
        groups: list[list[str]] = [[] for _ in levels]
        for i in ids:
            groups[rank[points[i][0]]].append(i)
        yield from groups
        return
    if dims == 2:
        # One sweep, x then y descending: a point's layer is one more than the deepest layer
        # holding a point with y >= its own (all such points seen so far dominate it, equal
        # points excepted). best_y[l] = the highest y in layer l, non-increasing in l.
        order = sorted(ids, key=lambda i: (-points[i][0], -points[i][1]))
        layer_of: dict[str, int] = {}
        neg_best: list[float] = []  # -best_y[l], non-decreasing: searchable with bisect
        k = 0
        while k < len(order):
            x, y = points[order[k]]
            j = k
            while j < len(order) and points[order[j]] == (x, y):
                j += 1
            lv = bisect.bisect_right(neg_best, -y)  # first layer whose best y is below y
            if lv == len(neg_best):
                neg_best.append(-y)
            else:
                neg_best[lv] = -y
            for i in order[k:j]:
                layer_of[i] = lv
            k = j
        layers: list[list[str]] = [[] for _ in neg_best]
        for i in ids:
            layers[layer_of[i]].append(i)
        yield from layers
        return
    rest = dict(points)
    while rest:
        front = pareto_front(rest)
        yield front
        for i in front:
            rest.pop(i)


def collapse_entries(tree: DocumentTree, scores: dict[str, dict[str, float]], dims: list[str],
                     pool: set[str], entries: dict[str, str] | None = None) -> set[str]:
    """Blocks of a reference entry stand for their entry: the entry takes each criterion's best
    score among itself and its blocks, and the blocks leave the pool, so one entry fills one
    place and its passage shows it whole (operators.passages). Other nodes pass unchanged.
    `entries`: block -> entry for the whole tree (`DocStructure.entry`), else found per node."""
    if entries is None:
        entries = {i: e for i in pool if (e := entry_of(tree, i)) is not None and e != i}
    blocks = pool & entries.keys()
    out = pool - blocks
    for i in blocks:
        e = entries[i]
        for c in dims:
            sc = scores[c]
            if sc.get(i, 0.0) > sc.get(e, 0.0):
                sc[e] = sc[i]
        out.add(e)
    return out


def combine(pool: set[str], weighted: list[tuple[float, dict[str, float]]], wsum: float) -> dict[str, float]:
    """The combined score of each id: sum(w_c × S_c(i)) / wsum, added up in the criteria's
    order (one and two criteria, the plans' cases, without the general loop)."""
    if len(weighted) == 1:
        (w0, s0), = weighted
        return {i: w0 * s0.get(i, 0.0) / wsum for i in pool}
    if len(weighted) == 2:
        (w0, s0), (w1, s1) = weighted
        return {i: (w0 * s0.get(i, 0.0) + w1 * s1.get(i, 0.0)) / wsum for i in pool}
    out: dict[str, float] = {}
    for i in pool:
        total = 0.0
        for w, sc in weighted:
            total += w * sc.get(i, 0.0)
        out[i] = total / wsum
    return out


# a passage at least this many words long that a document prints again on another page (a
# brochure's feature list under every trim level, a disclaimer under every table) is one piece of
# evidence: its repeats take the ranking's slots from other pages. Shorter repeated lines (a
# statement's "See accompanying notes", a form's field label) belong to the page they are on.
REPEAT_MIN_WORDS = 12


def repeat_key(tree: DocumentTree, nid: str) -> str | None:
    """The text a passage shares with its repeats elsewhere (case and spacing folded), or None
    when it is too short to count as a passage of its own."""
    words = (tree.nodes[nid].text or "").lower().split()
    return " ".join(words) if len(words) >= REPEAT_MIN_WORDS else None


class SkylineRankerParams(Params):
    criteria: list[str] = ["graph", "text"]
    weights: dict[str, float] = {"graph": 0.2, "text": 0.8}
    # "pareto": the frontier of eq. (14), whole layers until the evidence budget is met;
    # "weighted": the frontier widened by the weighted top-k and cut to `max_results`
    mode: Literal["pareto", "weighted"] = "weighted"
    max_results: int = 10  # both modes: never more nodes than this
    # pareto: layers are peeled until at least `budget_nodes` nodes on `budget_pages` pages
    budget_nodes: int = 5
    budget_pages: int = 5
    # weighted: layers peeled until `min_pages` pages or `pool_factor × max_results` nodes
    min_pages: int = 10
    pool_factor: int = 4
    diversify_pages: bool = True
    page_decay: float = 0.0
    leaves_only: bool = True
    keep_ranked: bool = True
    # the parts the question names by label ("Figure 5", "Appendix E") lead the ranking
    named_first: bool = True


class SkylineRanker(Operator[SkylineRankerParams]):
    """Eq. (14): N_R = the skyline (Pareto frontier) of the selected nodes over the criteria.

    `pareto` mode returns the frontier itself: skyline layers are peeled, best first, until the
    kept nodes meet the evidence budget (`budget_nodes` nodes on `budget_pages` distinct pages; a
    lone frontier point is a thin answer), so the set's size varies with the question. At most
    `max_results` nodes: a layer that would pass the cap is cut by combined score. A node
    left out is never one that dominates a returned node (every earlier layer is whole). Order:
    by layer, then by the weighted combined score, ties by id.

    `weighted` mode (the ranking before the frontier was returned as such): layers are peeled
    until `min_pages` distinct pages are covered or `pool_factor × max_results` nodes are kept,
    the weighted top `pool_factor × max_results` are added (`keep_ranked`), the nodes are ordered
    by combined score — with `diversify_pages` the k-th node of a page counts `page_decay^k` of
    its score — and cut at `max_results`; dominated nodes can be returned.

    With a single non-empty criterion (a reasoner ablated) `pareto` layers are score levels, so
    it is a ranking cut by the same budget; `weighted` is the plain ranking, as in the paper.
    """

    name = "Skyline_Ranker"
    kind = "reasoner"

    Params = SkylineRankerParams

    def apply(self, state: State) -> State:
        tree = self.ctx.tree
        p = self.params
        dims = [c for c in p.criteria if state.scores.get(c)]
        pool: set[str] = set()
        for c in dims:
            pool.update(state.scores[c])
        if state.candidates is not None:
            pool &= set(state.candidates)
        structure = doc_structure(self.ctx)
        if p.leaves_only:  # a reference entry is one unit of content (name, signature, description)
            pool &= structure.unit_set
        pool = collapse_entries(tree, state.scores, dims, pool, structure.entry)
        pool &= {i for c in dims for i, v in state.scores[c].items() if v > 0}  # some score above 0
        wsum = sum(p.weights.get(c, 1.0) for c in dims) or 1.0
        combined = combine(pool, [(p.weights.get(c, 1.0), state.scores[c]) for c in dims], wsum)
        if p.mode == "pareto":
            kept, layers = self._frontier(pool, dims, combined, state)
        else:
            kept, layers = self._weighted(pool, dims, combined, state)
        if p.named_first and state.question:
            named = named_evidence(tree, state.question, combined, structure.unit_set)
            if named:
                kept = list(dict.fromkeys(named + kept))[: max(p.max_results, len(named))]
                self.note(named_parts=named)
        state.ranked = [(i, combined.get(i, 0.0)) for i in kept]
        state.candidates = kept
        self.note(mode=p.mode, criteria=dims, layers=[len(x) for x in layers], returned=len(kept), pool=len(pool),
                  ranking="skyline" if len(dims) >= 2 else "single-criterion ranking",
                  outputs=[[i, round(s, 4), {c: round(state.scores[c].get(i, 0.0), 4) for c in dims}]
                           for i, s in state.ranked])
        return state

    def _frontier(self, pool: set[str], dims: list[str], combined: dict[str, float],
                  state: State) -> tuple[list[str], list[list[str]]]:
        """Whole skyline layers until the budget is met, the last one cut at `max_results`."""
        tree = self.ctx.tree
        p = self.params
        points = {i: tuple(state.scores[c].get(i, 0.0) for c in dims) for i in sorted(pool)}
        kept: list[str] = []
        layers: list[list[str]] = []
        pages: set[int] = set()
        for layer in pareto_layers(points):
            if len(kept) >= p.max_results:
                break
            layer = sorted(layer, key=lambda i: (-combined[i], i))
            room = p.max_results - len(kept)
            if len(layer) > room:
                self.note(cut_layer={"layer": len(layers), "size": len(layer), "kept": room})
                layer = layer[:room]
            layers.append(layer)
            kept.extend(layer)
            pages.update(tree.nodes[i].page_idx for i in layer)
            if len(kept) >= p.budget_nodes and len(pages) >= p.budget_pages:
                break
        return kept, layers

    def _weighted(self, pool: set[str], dims: list[str], combined: dict[str, float],
                  state: State) -> tuple[list[str], list[list[str]]]:
        tree = self.ctx.tree
        p = self.params
        structure = doc_structure(self.ctx)
        ids = list(pool)
        ranks = structure.ranks(ids)
        by_combined = structure.ranked(ids, np.array([combined[i] for i in ids], dtype=np.float64), ranks=ranks)
        layers: list[list[str]] = []
        kept: list[str] = []
        if len(dims) >= 2:
            # only the best few hundred per criterion can reach the first layers
            shortlist: set[str] = set(by_combined[:300])
            for c in dims:
                values = np.array(list(map(state.scores[c].get, ids, repeat(0.0))), dtype=np.float64)
                shortlist.update(structure.ranked(ids, values, 100, ranks=ranks))
            rest = {i: tuple(state.scores[c].get(i, 0.0) for c in dims) for i in shortlist}
            for layer in pareto_layers(rest):
                if len(kept) >= p.pool_factor * p.max_results:
                    break
                front = sorted(layer, key=lambda i: (-combined[i], i))
                layers.append(front)
                kept.extend(front)
                if len({tree.nodes[i].page_idx for i in kept}) >= p.min_pages:
                    break
            if p.keep_ranked:  # the frontier adds nodes one criterion favours; it never drops the best combined
                kept = list(dict.fromkeys(kept + by_combined[: p.pool_factor * p.max_results]))
            kept = sorted(kept, key=lambda i: (-combined[i], i))
        else:
            kept = by_combined[: p.max_results * 4]
        if p.diversify_pages:  # the k-th node of a page counts page_decay^k of its score
            # a reference entry is its own unit, however many share its page: distinct functions
            # on one page are not the same passage twice, the blocks of one entry are; a passage
            # printed again on another page counts as a second node of the first one's page
            seen: dict[int | str, int] = {}
            adj: dict[str, float] = {}
            first_of: dict[str, int | str] = {}
            for i in kept:
                pg = entry_of(tree, i) or tree.nodes[i].page_idx
                key = repeat_key(tree, i)
                if key is not None:
                    pg = first_of.setdefault(key, pg)
                adj[i] = combined[i] * (p.page_decay ** seen.get(pg, 0))
                seen[pg] = seen.get(pg, 0) + 1
            kept = sorted(kept, key=lambda i: (-adj[i], -combined[i], i))  # ties: by score
        return kept[: p.max_results], layers
