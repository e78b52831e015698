"""What a navigator may call at a library's documents, served from the document cache.

The library navigators (the embedding beam and the LLM agent's document tools) search a document,
read a node, read pages and walk a document's tree. They get this object, built from the
`DocumentCache`, instead of climbing back into the Engine.
"""

from __future__ import annotations

from bookindex.core.model import DocumentTree, Evidence
from bookindex.retrieval import api as retrieval_api
from bookindex.services.documents import DocumentCache
from bookindex.services.views import NodeView
from bookindex.skills.navigator.pages import PageText, pages_text, parse_pages


class LibraryDocuments:
    """A library's documents as a navigator sees them."""

    def __init__(self, documents: DocumentCache) -> None:
        self.documents = documents

    def search_document(self, doc_id: str, question: str, k: int = 10) -> list[Evidence]:
        """One document's BookRAG retrieval (its operator plan's retrieval steps; no answer)."""
        return retrieval_api.search(self.documents.open(doc_id), question, method="bookindex", k=k)

    def document_tree(self, doc_id: str) -> DocumentTree:
        return self.documents.browse(doc_id).tree

    def node(self, node_id: str) -> NodeView:
        return self.documents.node(node_id)

    def pages(self, doc: str, pages: str) -> list[PageText]:
        """`get_pages(doc, "3-7")`: the text of a document's pages, block ids included."""
        stored = self.documents.browse(doc)
        first, last = parse_pages(pages, int(stored.manifest.get("pages") or 0))
        return pages_text(stored.tree, first, last)
