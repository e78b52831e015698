"""What a navigator may call at a library's documents: the one seam between the skills navigators
and whatever serves the documents (`bookindex.services.library_access.LibraryDocuments`; any object with these methods will do).

The embedding navigator (`libnav`) searches the document it routed to and reads its tree to find
the section that holds the best block; the LLM navigator's document tools (`document_tools`)
search a document, read one node and read a page range. Nothing else of the library is reachable
from a navigator, so a navigation can be tested with a small fake and served by anything.
"""

from __future__ import annotations

from typing import Any, Protocol

from bookindex.core.model import DocumentTree, Evidence
from bookindex.skills.navigator.pages import PageText


class NodeLike(Protocol):
    """What `get_node` shows of a node (the Engine's `NodeView`)."""

    @property
    def id(self) -> str: ...
    @property
    def doc_id(self) -> str: ...
    @property
    def document(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def page_idx(self) -> int: ...
    @property
    def bbox(self) -> Any: ...
    @property
    def parent_path(self) -> list[str]: ...


class DocumentAccess(Protocol):
    """A library's documents as the navigators read them (`doc_id`: a document of the library)."""

    def search_document(self, doc_id: str, question: str, k: int = 10) -> list[Evidence]:
        """The document's own retrieval for a question: its best blocks, best first."""
        ...

    def node(self, node_id: str) -> NodeLike:
        """One node (block or section) by id, with its text, page, box and title path."""
        ...

    def pages(self, doc: str, pages: str) -> list[PageText]:
        """A document's text on a page range ("3-7"), with the ids of the blocks on each page."""
        ...

    def document_tree(self, doc_id: str) -> DocumentTree:
        """The document's tree (its sections and blocks)."""
        ...
