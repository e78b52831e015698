"""Knowledge graph G and GT-links M of the BookIndex."""

from bookindex.graph.kg import KnowledgeGraph

__all__ = ["KnowledgeGraph"]
