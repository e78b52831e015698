"""The in-memory knowledge graph G with GT-links M (BookRAG §4.1, §4.3).

Construction (extraction, entity resolution) and storage live in sibling modules; this class
is the shape every reader (operators, stats, API) relies on.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from typing import Any

import networkx as nx

from bookindex.core.model import Entity, Relation


class KnowledgeGraph:
    """Entities by id, relations, and both directions of the GT-link M."""

    def __init__(self, entities: dict[str, Entity] | None = None,
                 relations: list[Relation] | None = None) -> None:
        self.entities: dict[str, Entity] = dict(entities or {})
        self.relations: list[Relation] = list(relations or [])
        self.meta: dict[str, Any] = {}  # transient build data (e.g. entity vectors); not serialized
        self._nx: nx.Graph[str] | None = None
        self._node_index: dict[str, set[str]] | None = None

    # -- GT-links ---------------------------------------------------------------------
    @property
    def links(self) -> dict[str, list[str]]:
        """M: entity id -> tree node ids."""
        return {eid: list(e.node_ids) for eid, e in self.entities.items()}

    def nodes_of(self, entity_id: str) -> list[str]:
        return list(self.entities[entity_id].node_ids)

    def entities_of(self, node_id: str) -> list[Entity]:
        """Reverse GT-link: entities extracted from a tree node."""
        if self._node_index is None:
            idx: dict[str, set[str]] = defaultdict(set)
            for eid, e in self.entities.items():
                for nid in e.node_ids:
                    idx[nid].add(eid)
            self._node_index = dict(idx)
        return [self.entities[eid] for eid in sorted(self._node_index.get(node_id, ()))]

    # -- graph view -------------------------------------------------------------------
    @property
    def nx(self) -> nx.Graph[str]:
        """Undirected weighted networkx view (parallel relations add their weights)."""
        if self._nx is None:
            g: nx.Graph[str] = nx.Graph()
            for eid, e in self.entities.items():
                g.add_node(eid, name=e.name, type=e.type)
            for r in self.relations:
                if r.source == r.target or r.source not in self.entities or r.target not in self.entities:
                    continue
                if g.has_edge(r.source, r.target):
                    g[r.source][r.target]["weight"] += r.weight
                else:
                    g.add_edge(r.source, r.target, weight=r.weight)
            self._nx = g
        return self._nx

    def invalidate(self) -> None:
        """Call after mutating entities or relations so derived views are rebuilt."""
        self._nx = None
        self._node_index = None

    def __len__(self) -> int:
        return len(self.entities)

    # -- serialization ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"entities": [asdict(e) for e in self.entities.values()],
                "relations": [asdict(r) for r in self.relations]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "KnowledgeGraph":
        ents = {d["id"]: Entity(**d) for d in data.get("entities", [])}
        rels = [Relation(**d) for d in data.get("relations", [])]
        return cls(ents, rels)
