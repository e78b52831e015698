"""The sparse matrices Graph_Reasoning multiplies (BookRAG eqs. 6-7): the entity adjacency A that
PageRank walks, and M, the GT-links (entity -> tree nodes) that map I_G to S_G = I_G x M.

Each is built once per document, or read as stored at index time (indexing.graph_index). M is
built from the links `gt_links` reads off the entities' node lists, or from the same links as
stored at index time (`gt_matrix_from_links`): reading them off a filing's 20,000 links costs
15 ms of Python at its first question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import DocumentTree

# (linked node ids in first-seen order, per-entity row pointers, indices into those ids)
GTLinks = tuple[list[str], np.ndarray, np.ndarray]


def adjacency(g: nx.Graph) -> tuple[list[Any], dict[Any, int], sp.csr_matrix]:
    """Symmetric weighted adjacency of `g` (node list, index, CSR matrix)."""
    nodes = list(g.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    rows, cols, vals = [], [], []
    for u, v, d in g.edges(data=True):
        w = float(d.get("weight", 1.0))
        rows += [index[u], index[v]]
        cols += [index[v], index[u]]
        vals += [w, w]
    return nodes, index, sp.csr_matrix((vals, (rows, cols)), shape=(len(nodes), len(nodes)))


def graph_adjacency(graph: KnowledgeGraph) -> tuple[list[str], dict[str, int], sp.csr_matrix]:
    """`adjacency(graph.nx)` without building the networkx graph (half a second a filing's graph
    when a document is first asked about): the entities in their order, parallel relations
    adding their weights, self-relations and dangling ends left out, as `KnowledgeGraph.nx`."""
    nodes = list(graph.entities)
    index = {n: i for i, n in enumerate(nodes)}
    pairs = [(index[r.source], index[r.target], float(r.weight)) for r in graph.relations
             if r.source != r.target and r.source in index and r.target in index]
    if not pairs:
        return nodes, index, sp.csr_matrix((len(nodes), len(nodes)))
    src, dst, w = (np.array(x) for x in zip(*pairs))
    a = sp.csr_matrix((np.concatenate([w, w]), (np.concatenate([src, dst]), np.concatenate([dst, src]))),
                      shape=(len(nodes), len(nodes)))
    a.sum_duplicates()
    return nodes, index, a


@dataclass
class GTMatrix:
    """M, the GT-links, as a sparse entities × nodes matrix in the graph adjacency's entity order,
    built once per document: a question's subgraph G' and its S_G = I_G × M are then a column
    slice and one sparse product instead of Python loops over thousands of nodes."""

    node_ids: list[str]  # columns: the tree's nodes first, then linked ids the tree lacks
    column: dict[str, int]
    n_tree: int  # the first n_tree columns are tree nodes
    by_entity: sp.csr_matrix
    by_node: sp.csc_matrix
    idf: np.ndarray  # entity_idf per entity row


def gt_matrix(graph: Any, tree: DocumentTree) -> GTMatrix:
    """M for `graph.entities` in their order (the adjacency's rows), from their node lists."""
    return gt_matrix_from_links(tree, gt_links(graph))


def entity_idf(linked_nodes: int, n_nodes: int) -> float:
    """log(1 + N / df): an entity GT-linked to most of the tree (the company, "the user") says
    little about which node answers, however much PageRank mass it holds."""
    return math.log(1.0 + n_nodes / max(1, linked_nodes))


def gt_links(graph: Any) -> GTLinks:
    """The GT-links of `graph.entities`, in their order, as CSR arrays over the linked node ids."""
    seen: dict[str, int] = {}
    indptr = [0]
    indices: list[int] = []
    for ent in graph.entities.values():
        for nid in ent.node_ids:
            j = seen.get(nid)
            if j is None:
                j = seen[nid] = len(seen)
            indices.append(j)
        indptr.append(len(indices))
    return list(seen), np.asarray(indptr, np.int64), np.asarray(indices, np.int64)


def gt_matrix_from_links(tree: DocumentTree, links: GTLinks) -> GTMatrix:
    """M for the entities in graph order (the adjacency's rows) from their links, as stored or as
    `gt_links` reads them."""
    linked, indptr, indices = links
    node_ids = list(tree.nodes)
    column = {n: i for i, n in enumerate(node_ids)}
    remap = np.empty(len(linked), np.int64)
    for j, nid in enumerate(linked):  # node ids the tree lacks follow it, first seen first
        c = column.get(nid)
        if c is None:
            c = column[nid] = len(node_ids)
            node_ids.append(nid)
        remap[j] = c
    counts = np.diff(indptr)
    rows = np.repeat(np.arange(len(counts)), counts)
    m = sp.csr_matrix((np.ones(len(indices)), (rows, remap[indices])), shape=(len(counts), len(node_ids)))
    n_nodes = max(1, len(tree.nodes))
    distinct, inverse = np.unique(counts, return_inverse=True)
    idf = np.array([entity_idf(int(c), n_nodes) for c in distinct], dtype=np.float64)[inverse] \
        if len(counts) else np.zeros(0)
    return GTMatrix(node_ids, column, len(tree.nodes), m, m.tocsc(), idf)
