"""What an operator may read: the index B = (T, G, M) plus the models, behind one small protocol.

Operators never touch storage. A `StoredDocument` from the library is adapted with
`IndexContext.from_document`; tests build an `IndexContext` straight from an in-memory tree and
graph. Expensive derived views (BM25 index, vector matrices) are built once per context and
cached, so a document opened once answers many questions quickly.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from bookindex.graph.kg import KnowledgeGraph
from bookindex.model import DocumentTree


@runtime_checkable
class IndexView(Protocol):
    """The read-only view of one indexed document that operators need."""

    tree: DocumentTree
    graph: KnowledgeGraph
    settings: Any
    llm: Any | None

    def node_matrix(self) -> tuple[list[str], np.ndarray | None]: ...
    def entity_matrix(self) -> tuple[list[str], np.ndarray | None]: ...
    def embed(self, texts: list[str]) -> np.ndarray | None: ...
    def rerank(self, query: str, passages: list[str]) -> list[float] | None: ...


@dataclass
class IndexContext:
    """Concrete `IndexView`: tree, graph, optional vectors and providers, plus per-document caches.

    `embedder` needs `.encode(list[str]) -> (n, d) float32 L2-normalized`; `reranker` needs
    `.score(query, passages) -> list[float]`. Either may be None: operators then fall back to
    lexical scoring only. `node_ids`/`node_vectors` must be row-aligned (same for entities).
    """

    tree: DocumentTree
    graph: KnowledgeGraph = field(default_factory=KnowledgeGraph)
    settings: Any = None
    llm: Any | None = None
    embedder: Any | None = None
    reranker: Any | None = None
    node_ids: list[str] | None = None
    node_vectors: np.ndarray | None = None
    entity_ids: list[str] | None = None
    entity_vectors: np.ndarray | None = None
    vlm: Any | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)
    doc_dir: Any | None = None  # the stored document's folder (extracted images live there)

    @property
    def vlm_available(self) -> bool:
        return bool(self.vlm is not None and getattr(self.vlm, "available", False))

    def region_image(self, node_id: str, dpi: int = 144) -> bytes | None:
        """PNG of a node's region: cropped from the source PDF page at the node's bbox (what the
        reader sees, labels and axes included), else the image file the parser extracted."""
        node = self.tree.nodes.get(node_id)
        if node is None:
            return None
        source = str(self.manifest.get("source") or "")
        if node.bbox and source.lower().endswith(".pdf"):
            try:
                import pymupdf

                with pymupdf.open(source) as pdf:
                    page = pdf[node.page_idx]
                    clip = pymupdf.Rect(*node.bbox) & page.rect
                    if not clip.is_empty:
                        return page.get_pixmap(clip=clip, dpi=dpi).tobytes("png")
            except Exception:  # noqa: BLE001 - a moved or changed source falls back to the stored image
                pass
        rel = node.meta.get("image_path")
        if rel and self.doc_dir is not None:
            from pathlib import Path

            path = Path(rel) if Path(rel).is_absolute() else Path(self.doc_dir) / rel
            if path.is_file():
                return path.read_bytes()
        return None

    @property
    def graph_from_llm(self) -> bool:
        """Whether G was extracted by an LLM (the manifest records the build's LLM; None = offline)."""
        opts = self.manifest.get("options", {}) if isinstance(self.manifest, dict) else {}
        return bool(opts.get("llm")) and bool(self.graph.entities)

    # -- vectors ---------------------------------------------------------------------
    def node_matrix(self) -> tuple[list[str], np.ndarray | None]:
        if self.node_vectors is None and self.embedder is not None and "node_matrix" not in self.cache:
            leaves = [n for n in self.tree.walk() if n.type != "document"]
            ids = [n.id for n in leaves]
            mat = self.embedder.encode([n.content[:2000] for n in leaves]) if ids else None
            self.cache["node_matrix"] = (ids, mat)
        if self.node_vectors is None:
            return self.cache.get("node_matrix", ([], None))
        return list(self.node_ids or []), self.node_vectors

    def entity_matrix(self) -> tuple[list[str], np.ndarray | None]:
        if self.entity_vectors is not None:
            return list(self.entity_ids or []), self.entity_vectors
        if self.embedder is None or not self.graph.entities:
            return [], None
        if "entity_matrix" not in self.cache:
            ids = sorted(self.graph.entities)
            texts = [f"{self.graph.entities[i].name}: {self.graph.entities[i].description}"[:500] for i in ids]
            self.cache["entity_matrix"] = (ids, self.embedder.encode(texts))
        return self.cache["entity_matrix"]

    def embed(self, texts: list[str]) -> np.ndarray | None:
        """Encode query-time texts. A handful of short texts runs on one torch thread: intra-op
        parallelism buys nothing at that size and thrashes on a busy machine (0.5 s → 15 ms)."""
        if self.embedder is None:
            return None
        torch = sys.modules.get("torch")
        if torch is None or len(texts) > 16:
            return np.asarray(self.embedder.encode(list(texts)), dtype=np.float32)
        prev = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return np.asarray(self.embedder.encode(list(texts)), dtype=np.float32)
        finally:
            torch.set_num_threads(prev)

    def rerank(self, query: str, passages: list[str]) -> list[float] | None:
        if self.reranker is None:
            return None
        return [float(s) for s in self.reranker.score(query, passages)]

    @property
    def llm_available(self) -> bool:
        return bool(self.llm is not None and getattr(self.llm, "available", False))

    def retrieval_setting(self, name: str, default: Any) -> Any:
        r = getattr(self.settings, "retrieval", None)
        return getattr(r, name, default) if r is not None else default

    # -- adapters --------------------------------------------------------------------
    @classmethod
    def from_document(cls, doc: Any, settings: Any = None, llm: Any | None = None,
                      embedder: Any | None = None, reranker: Any | None = None) -> "IndexContext":
        """Adapt a library `StoredDocument` (tree, graph, node_vectors(), dir).

        The embedder and reranker come from the project's providers when not given; a provider
        that cannot be created leaves the context lexical-only rather than failing the query.
        """
        tree = doc.tree
        graph = getattr(doc, "graph", None) or KnowledgeGraph()
        node_ids, node_vecs = None, None
        if hasattr(doc, "node_vectors"):
            try:
                node_ids, node_vecs = doc.node_vectors()
                node_vecs = None if node_vecs is None or len(node_ids) == 0 else np.asarray(node_vecs, dtype=np.float32)
            except (FileNotFoundError, OSError, ValueError, KeyError):
                node_ids, node_vecs = None, None
        ent_ids, ent_vecs = None, None
        if getattr(doc, "dir", None) is not None and graph.entities:
            try:
                from bookindex.graph.store import load_entity_vectors  # graph helper's module
                ent_ids, ent_vecs = load_entity_vectors(doc.dir)
                ent_vecs = None if ent_vecs is None or len(ent_ids) == 0 else np.asarray(ent_vecs, dtype=np.float32)
            except (ImportError, FileNotFoundError, OSError, ValueError, KeyError):
                ent_ids, ent_vecs = None, None
        if embedder is None and settings is not None:
            embedder = _provider("bookindex.embedding", "get_embedder", settings)
        if reranker is None and settings is not None:
            reranker = _provider("bookindex.reranker", "get_reranker", settings)
        vlm = None
        vlm_settings = getattr(settings, "vlm", None)
        if vlm_settings is not None and getattr(vlm_settings, "provider", "none") != "none":
            from bookindex.llm import get_llm

            vlm = get_llm(settings, section="vlm")
        dim = getattr(embedder, "dim", None)
        if node_vecs is not None and dim and node_vecs.shape[1] != int(dim):
            from bookindex.errors import IndexFormatError
            built = (getattr(doc, "manifest", {}) or {}).get("embedding", {}) or {}
            raise IndexFormatError(
                f"{getattr(doc, 'dir', doc)}: node vectors were built with embedding model "
                f"{built.get('model', '?')!r} (dim {node_vecs.shape[1]}), but the configured embedder "
                f"{getattr(embedder, 'name', '?')!r} has dim {dim}; re-index the document or configure that model")
        if ent_vecs is not None and dim and ent_vecs.shape[1] != int(dim):
            ent_ids, ent_vecs = None, None  # entity linking then uses names and aliases only
        return cls(tree=tree, graph=graph, settings=settings, llm=llm, embedder=embedder,
                   reranker=reranker, manifest=dict(getattr(doc, "manifest", {}) or {}),
                   node_ids=node_ids, node_vectors=node_vecs,
                   entity_ids=ent_ids, entity_vectors=ent_vecs, vlm=vlm,
                   doc_dir=getattr(doc, "dir", None))


def _provider(module: str, fn: str, settings: Any) -> Any | None:
    try:
        mod = __import__(module, fromlist=[fn])
        return getattr(mod, fn)(settings)
    except ImportError:
        return None
    except Exception as exc:  # a provider that cannot load: lexical-only retrieval, not a failed query
        from bookindex.errors import BookIndexError
        if isinstance(exc, BookIndexError):
            return None
        raise
