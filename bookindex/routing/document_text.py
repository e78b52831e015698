"""A document as one text and one vector: what the router's `vector` and `lexical` signals read
and what the skills compiler clusters.

Both must read a document the same way (a topic cluster and a routing decision are about the
same text), so the reading lives here, below both: `tree_text` flattens an indexed document's
tree, `document_text` puts its title first, `embed_documents` embeds the opening `chars` of that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from bookindex.core.model import DocumentTree
from bookindex.core.protocols import Embedder
from bookindex.providers.embedding import normalise


class TitledText(Protocol):
    """Anything with a title and a text (the compiler's `CorpusDocument`, `DocumentText`)."""

    @property
    def title(self) -> str: ...

    @property
    def text(self) -> str: ...


@dataclass(frozen=True)
class DocumentText:
    """An indexed document read as a title and a text."""

    title: str
    text: str


def tree_text(tree: DocumentTree) -> str:
    """A document's text in reading order: section titles as Markdown headings, then content."""
    parts: list[str] = []
    for node in tree.walk():
        if node.id == tree.root_id:
            continue
        if node.type == "section":
            if node.title.strip():
                parts.append("#" * max(1, min(6, node.level)) + " " + node.title.strip())
        elif node.content.strip():
            parts.append(node.content.strip())
    return "\n\n".join(parts)


def document_text(doc: TitledText) -> str:
    """The title, then the text (the title once when the text already opens with it)."""
    return f"{doc.title}\n{doc.text}" if doc.title and not doc.text.startswith(doc.title) else doc.text


def embed_documents(docs: Sequence[TitledText], embedder: Embedder, chars: int, progress: bool = False) -> np.ndarray:
    """Title and text, truncated to `chars`, embedded and L2-normalised (one row per document)."""
    if not docs:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return normalise(embedder.encode([document_text(d)[:chars] for d in docs], progress=progress))
