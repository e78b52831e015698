"""Questions to a document's knowledge graph that need no retrieval: find entities by name, and
one entity's neighbourhood with the tree nodes it is GT-linked to (the inspector's graph page and
its REST/MCP counterparts)."""

from __future__ import annotations

from bookindex.core.errors import InputError
from bookindex.core.graph import KnowledgeGraph
from bookindex.services.documents import DocumentCache
from bookindex.services.views import EntityRef, EntityView


class GraphQueries:
    """Entity look-ups over the graphs of the documents a `DocumentCache` browses."""

    def __init__(self, documents: DocumentCache) -> None:
        self.documents = documents

    def entities(self, doc: str, query: str = "", limit: int = 50) -> list[EntityRef]:
        """Entities of a document's graph whose name or alias contains `query` (case-folded):
        exact names first, then by degree; without a query, the best-connected ones."""
        g = self.documents.browse(doc).graph
        q = " ".join(query.split()).casefold()
        degree = g.nx.degree
        hits: list[tuple[int, int, str]] = []
        for eid, e in g.entities.items():
            names = [e.name, *e.aliases]
            if q and not any(q in n.casefold() for n in names):
                continue
            exact = 0 if q and any(q == n.casefold() for n in names) else 1
            hits.append((exact, -int(degree[eid]) if eid in g.nx else 0, eid))
        hits.sort()
        return [entity_ref(g, eid) for _, _, eid in hits[:max(1, limit)]]

    def entity(self, doc: str, entity_id: str, limit: int = 50) -> EntityView:
        """One entity's neighbourhood (heaviest edges first) and the tree nodes it links to."""
        d = self.documents.browse(doc)
        g = d.graph
        e = g.entities.get(entity_id)
        if e is None:
            raise InputError(f"{d.name}: no entity {entity_id!r}")
        edges: dict[str, tuple[float, str]] = {}
        for r in g.relations:
            if entity_id not in (r.source, r.target) or r.source == r.target:
                continue
            other = r.target if r.source == entity_id else r.source
            w, label = edges.get(other, (0.0, ""))
            edges[other] = (w + r.weight, label or r.description or ", ".join(r.keywords))
        ranked = sorted(edges.items(), key=lambda kv: (-kv[1][0], kv[0]))[:max(1, limit)]
        neighbours = [entity_ref(g, o).model_copy(update={"relation": lab, "weight": round(w, 3)})
                      for o, (w, lab) in ranked if o in g.entities]
        return EntityView(doc_id=d.doc_id, entity=entity_ref(g, entity_id), description=e.description,
                          aliases=list(e.aliases), neighbours=neighbours,
                          node_ids=[n for n in e.node_ids if n in d.tree.nodes])

    def links(self, doc: str, entity_ids: list[str]) -> list[tuple[str, str, float]]:
        """The relations among a set of entities (an entity and its neighbours), one per pair with
        the pair's summed weight: what a drawing of the neighbourhood joins besides the spokes."""
        g = self.documents.browse(doc).graph
        wanted = set(entity_ids)
        pairs: dict[tuple[str, str], float] = {}
        for r in g.relations:
            if r.source != r.target and r.source in wanted and r.target in wanted:
                a, b = sorted((r.source, r.target))
                pairs[(a, b)] = pairs.get((a, b), 0.0) + r.weight
        return [(a, b, round(w, 3)) for (a, b), w in sorted(pairs.items())]


def entity_ref(g: KnowledgeGraph, eid: str) -> EntityRef:
    e = g.entities[eid]
    deg = int(g.nx.degree[eid]) if eid in g.nx else 0
    return EntityRef(id=eid, name=e.name, type=e.type, degree=deg, nodes=len(e.node_ids))
