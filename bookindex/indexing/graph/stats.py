"""Graph statistics (BookRAG Figure 6): entities, relations, density, components, LCC diameter."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import networkx as nx

from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import DocumentTree

EXACT_DIAMETER_MAX = 800   # nodes; above this the diameter is a double-sweep lower bound


def approx_diameter(g: nx.Graph[str], sweeps: int = 4, seed: int = 0) -> int:
    """Diameter of a connected graph: exact when small, else the best of a few double sweeps.

    A double sweep (BFS from a node, then from the farthest node found) gives a lower bound
    that is tight on most real graphs and costs two BFS runs.
    """
    n = g.number_of_nodes()
    if n <= 1:
        return 0
    if n <= EXACT_DIAMETER_MAX:
        return int(nx.diameter(g))
    rng = random.Random(seed)
    nodes = list(g.nodes)
    starts = [max(nodes, key=g.degree)] + rng.sample(nodes, min(sweeps - 1, n))
    best = 0
    for s in starts:
        dist = nx.single_source_shortest_path_length(g, s)
        far = max(dist, key=dist.__getitem__)
        dist2 = nx.single_source_shortest_path_length(g, far)
        best = max(best, max(dist2.values()))
    return int(best)


def graph_stats(graph: KnowledgeGraph) -> dict[str, Any]:
    """Entities, relations, density, components, largest-component size and diameter, types."""
    g = graph.nx
    comps = list(nx.connected_components(g)) if g.number_of_nodes() else []
    lcc = max(comps, key=len) if comps else set()
    return {
        "entities": len(graph.entities),
        "relations": len(graph.relations),
        "edges": g.number_of_edges(),
        "density": float(nx.density(g)) if g.number_of_nodes() > 1 else 0.0,
        "components": len(comps),
        "lcc_size": len(lcc),
        "lcc_diameter": approx_diameter(g.subgraph(lcc)) if lcc else 0,
        "entity_types": dict(Counter(e.type for e in graph.entities.values()).most_common(15)),
    }


def tree_stats(tree: DocumentTree) -> dict[str, int]:
    """Tree nodes by type."""
    return dict(Counter(n.type for n in tree.walk()))
