"""What an operator may read: one `DocumentIndex` plus the models, and the views derived from them.

Operators never touch storage: the Engine opens a stored document (a `DocumentIndex` from the
storage layer) and hands it here with its providers; tests wrap an in-memory tree and graph in a
`MemoryIndex`. Views that cost something to derive (the text index, section units,
the entity-name index, the graph's adjacency matrix) are built once per opened document and kept
in one typed `DerivedViews`, so a document opened once answers many questions quickly.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bookindex.core.config import Settings, default_settings
from bookindex.core.errors import LLMUnavailable
from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import DocumentTree, node_text
from bookindex.core.protocols import LLM, DocumentIndex, Embedder, LexicalIndex, Reranker
from bookindex.providers.lexical import document_lexical_index, document_row_index
from bookindex.providers.query_vectors import QueryVectors

if TYPE_CHECKING:  # typing only: textscore and structure build their views from this module's IndexContext
    from bookindex.operators.structure import DocStructure
    from bookindex.operators.textscore import TextIndex

LINK_CACHE = 2048  # mentions whose entity links stay cached per opened document


@dataclass
class MemoryIndex:
    """A `DocumentIndex` held in memory: a tree, a graph and optional row-aligned vectors."""

    tree: DocumentTree
    graph: KnowledgeGraph = field(default_factory=KnowledgeGraph)
    node_ids: list[str] = field(default_factory=list)
    node_matrix: np.ndarray | None = None
    entity_ids: list[str] = field(default_factory=list)
    entity_matrix: np.ndarray | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None
    _lexical: LexicalIndex | None = field(default=None, repr=False)
    _rows: LexicalIndex | None = field(default=None, repr=False)
    _rows_read: bool = field(default=False, repr=False)

    @property
    def doc_id(self) -> str:
        return self.tree.doc_id

    @property
    def name(self) -> str:
        return self.tree.name

    @property
    def page_labels(self) -> list[str] | None:
        labels = self.tree.meta.get("page_labels")
        return list(labels) if labels else None

    def node_vectors(self) -> tuple[list[str], np.ndarray | None]:
        return list(self.node_ids), self.node_matrix

    def entity_vectors(self) -> tuple[list[str], np.ndarray | None]:
        return list(self.entity_ids), self.entity_matrix

    def lexical_index(self) -> LexicalIndex:
        if self._lexical is None:
            self._lexical = document_lexical_index(self.tree)
        return self._lexical

    def table_row_index(self) -> LexicalIndex | None:
        if not self._rows_read:
            self._rows, self._rows_read = document_row_index(self.tree), True
        return self._rows

    def entity_adjacency(self) -> tuple[list[str], dict[str, int], Any] | None:
        return None  # in memory: the reasoner builds it from the relations

    def gt_links(self) -> tuple[list[str], Any, Any] | None:
        return None  # in memory: the reasoner reads the entities' node lists


@dataclass
class DerivedViews:
    """Everything operators derive from one opened document, built on first use."""

    text_index: TextIndex | None = None
    node_matrix: tuple[list[str], np.ndarray | None] | None = None
    entity_matrix: tuple[list[str], np.ndarray | None] | None = None
    units: dict[int, dict[str, str]] = field(default_factory=dict)
    entity_names: dict[str, list[str]] | None = None
    entity_name_lengths: tuple[list[str], np.ndarray] | None = None  # the names above, and their lengths
    graph_adjacency: tuple[list[str], dict[str, int], Any] | None = None
    gt_matrix: Any = None  # operators.reasoner.GTMatrix: M as sparse matrices
    structure: DocStructure | None = None  # units, entries, subtrees, id order (operators.structure)
    # entity linking results by (mention, linking parameters): a multi-hop question's sub-questions
    # and the whole question name the same entities (operators.formulator.Extract.link)
    links: OrderedDict[tuple[Any, ...], Any] = field(default_factory=OrderedDict)
    # the baselines' per-document index (`retrieval.baselines.index.DocIndex`, which narrows it
    # with isinstance): typed `object` because operators may not import the retrieval layer
    baseline: object | None = None
    # running headers and footers: leaves whose text recurs on many pages (operators.reader)
    furniture: frozenset[str] | None = None


@dataclass
class IndexContext:
    """One opened document with the providers a question may use.

    `embedder`, `reranker`, `llm` and `vlm` may each be None: operators then take their
    lexical-only / no-LLM paths. `settings` defaults to every setting's default, so operators read
    typed values (`ctx.settings.retrieval.max_evidence`) whatever the caller passed. The Engine
    builds one context per opened document and reuses it.
    """

    index: DocumentIndex
    settings: Settings = field(default_factory=default_settings)
    llm: LLM | None = None
    embedder: Embedder | None = None
    reranker: Reranker | None = None
    vlm: LLM | None = None
    views: DerivedViews = field(default_factory=DerivedViews)
    queries: QueryVectors | None = None  # query vectors by text (`query_vectors`)

    def __post_init__(self) -> None:
        if self.settings is None:  # a caller without a configuration (tests, scripts): the defaults
            self.settings = default_settings()

    # -- the index -------------------------------------------------------------------
    @property
    def tree(self) -> DocumentTree:
        return self.index.tree

    @property
    def graph(self) -> KnowledgeGraph:
        return self.index.graph

    @property
    def manifest(self) -> dict[str, Any]:
        return self.index.manifest

    @property
    def page_labels(self) -> list[str] | None:
        return self.index.page_labels

    @property
    def graph_from_llm(self) -> bool:
        """Whether G was extracted by an LLM (the manifest records the build's LLM; None = offline)."""
        opts = self.manifest.get("options", {}) if isinstance(self.manifest, dict) else {}
        return bool(opts.get("llm")) and bool(self.graph.entities)

    def region_image(self, node_id: str, dpi: int = 144) -> bytes | None:
        """PNG of a node's region: cropped from the source PDF page at the node's bbox (what the
        reader sees, labels and axes included), else the image file the parser extracted."""
        node = self.tree.nodes.get(node_id)
        if node is None:
            return None
        source = str(self.manifest.get("source") or "")
        if node.bbox and source.lower().endswith(".pdf"):
            png = _crop_png(source, node.page_idx, tuple(node.bbox), dpi)
            if png is not None:
                return png
        rel = node.meta.get("image_path")
        folder = self.index.folder
        if rel and folder is not None:
            path = Path(rel) if Path(rel).is_absolute() else folder / rel
            if path.is_file():
                return path.read_bytes()
        return None

    # -- vectors ---------------------------------------------------------------------
    def node_matrix(self) -> tuple[list[str], np.ndarray | None]:
        """Node ids and their vectors: the stored ones, else embedded now (once) when an embedder
        is configured, else none."""
        if self.views.node_matrix is None:
            ids, mat = self.index.node_vectors()
            if (mat is None or not len(ids)) and self.embedder is not None:
                nodes = [n for n in self.tree.walk() if n.type != "document"]
                ids = [n.id for n in nodes]
                mat = self.embedder.encode([node_text(self.tree, n) for n in nodes]) if ids else None
            self.views.node_matrix = (list(ids), mat if mat is not None and len(ids) else None)
        return self.views.node_matrix

    def entity_matrix(self) -> tuple[list[str], np.ndarray | None]:
        if self.views.entity_matrix is None:
            ids, mat = self.index.entity_vectors()
            dim = self.embedder.dim if self.embedder is not None else None
            if mat is not None and len(ids) and dim and mat.shape[1] != dim:
                mat = None  # built with another embedder: entity linking then uses names only
            if (mat is None or not len(ids)) and self.embedder is not None and self.graph.entities:
                ids = sorted(self.graph.entities)
                ents = self.graph.entities
                mat = self.embedder.encode([f"{ents[i].name}: {ents[i].description}"[:500] for i in ids])
            self.views.entity_matrix = (list(ids), mat if mat is not None and len(ids) else None)
        return self.views.entity_matrix

    def embed(self, texts: list[str]) -> np.ndarray | None:
        if self.embedder is None:
            return None
        return np.asarray(self.embedder.encode(list(texts)), dtype=np.float32)

    def query_vectors(self, texts: list[str]) -> list[np.ndarray | None]:
        """Vectors of query-time texts (None each without an embedder), from `queries`: the
        Engine's cache, shared with the library router and every opened document, so a question
        routed and then searched is embedded once; a cache of the context's own otherwise."""
        if self.embedder is None:
            return [None] * len(texts)
        if self.queries is None:
            self.queries = QueryVectors(self.embedder)
        return list(self.queries.vectors(list(texts)))

    def rerank(self, query: str, passages: list[str]) -> list[float] | None:
        if self.reranker is None:
            return None
        return [float(s) for s in self.reranker.score(query, passages)]

    @property
    def llm_available(self) -> bool:
        return bool(self.llm is not None and self.llm.available)

    @property
    def active_llm(self) -> LLM:
        """The LLM, for a caller that checked `llm_available`; raises LLMUnavailable otherwise."""
        if self.llm is None or not self.llm.available:
            raise LLMUnavailable("no LLM is configured (llm.provider = none)")
        return self.llm

    @property
    def active_vlm(self) -> LLM:
        """The vision model, for a caller that checked `vlm_available`."""
        if self.vlm is None or not self.vlm.available:
            raise LLMUnavailable("no vision model is configured (vlm.provider = none)")
        return self.vlm

    @property
    def vlm_available(self) -> bool:
        return bool(self.vlm is not None and self.vlm.available)


def _crop_png(source: str, page_idx: int, bbox: tuple[float, ...], dpi: int) -> bytes | None:
    """The region `bbox` of page `page_idx` of a PDF as PNG; None when the file is gone or changed."""
    import pymupdf  # deferred: only figure questions with a vision model need page pixels

    try:
        with pymupdf.open(source) as pdf:
            page = pdf[page_idx]
            clip = pymupdf.Rect(*bbox) & page.rect
            if not clip.is_empty:
                return bytes(page.get_pixmap(clip=clip, dpi=dpi).tobytes("png"))
    except Exception:  # noqa: BLE001 - a moved or changed source falls back to the stored image
        return None
    return None
