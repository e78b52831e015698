"""Tree and graph statistics of a document and of a library, with the LLM use of their builds
(`bookindex stats`, `GET /stats`)."""

from __future__ import annotations

from typing import Any

from bookindex.indexing.graph.stats import graph_stats, tree_stats
from bookindex.indexing.stored_document import StoredDocument
from bookindex.providers.llm.ledger import add_snapshots


def doc_stats(doc: StoredDocument) -> dict[str, Any]:
    build = doc.build_report
    g = build.get("graph") or {}
    gs = graph_stats(doc.graph)
    return {
        "doc_id": doc.doc_id, "name": doc.name, "pages": build.get("pages", doc.manifest.get("pages")),
        "nodes": tree_stats(doc.tree),
        "entities": gs["entities"], "relations": gs["relations"], "edges": gs["edges"],
        "density": gs["density"], "components": gs["components"], "lcc_size": gs["lcc_size"],
        "lcc_diameter": gs["lcc_diameter"], "entity_types": gs["entity_types"],
        "er": g.get("er"), "er_merges": g.get("er_merges", 0), "er_stats": g.get("er_stats"),
        "extractor": g.get("extractor"), "graph_built": bool(g.get("built", doc.graph.entities)),
        "nodes_failed": g.get("nodes_failed", 0), "failed_node_ids": g.get("failed_node_ids", []),
        "llm": build.get("llm") or g.get("llm"),
    }


def library_stats(docs: list[dict[str, Any]]) -> dict[str, Any]:
    nodes: dict[str, int] = {}
    for d in docs:
        for k, v in d["nodes"].items():
            nodes[k] = nodes.get(k, 0) + v
    ents = sum(d["entities"] for d in docs)
    edges = sum(d["edges"] for d in docs)
    return {
        "documents": len(docs), "pages": sum(d["pages"] or 0 for d in docs), "nodes": nodes,
        "entities": ents, "relations": sum(d["relations"] for d in docs),
        "density": 2 * edges / (ents * (ents - 1)) if ents > 1 else 0.0,
        "components": sum(d["components"] for d in docs),
        "lcc_diameter": max((d["lcc_diameter"] for d in docs), default=0),
        "er_merges": sum(d["er_merges"] or 0 for d in docs),
        "nodes_failed": sum(d["nodes_failed"] or 0 for d in docs),
        "llm": add_snapshots([d["llm"] for d in docs]),
    }
