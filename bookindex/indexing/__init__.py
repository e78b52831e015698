"""Indexing: turning a parsed document into a BookIndex (tree, vectors, knowledge graph, GT-links)."""
