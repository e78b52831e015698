"""The typed views the Engine's services return: pydantic models, so the REST and MCP shells
can expose them as they are."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from bookindex.core.model import BBox
from bookindex.core.pages import cite_pages


class DocumentInfo(BaseModel):
    """A stored document as the catalog and its manifest describe it."""

    doc_id: str
    name: str
    source: str | None = None
    pages: int | None = None
    parser: str | None = None
    nodes: int | None = None
    sections: int | None = None
    graph: bool = False
    created: str | None = None
    manifest: dict[str, Any] = Field(default_factory=dict)


class IndexReport(BaseModel):
    """What `Engine.index` did with one file."""

    doc_id: str
    name: str
    status: Literal["added", "replaced", "unchanged", "retried"]
    pages: int = 0
    blocks: int = 0
    sections: int = 0
    nodes: int = 0
    graph_built: bool = False
    graph: dict[str, Any] = Field(default_factory=dict)  # build.json's graph report
    retry: dict[str, Any] | None = None  # status "retried": nodes, recovered, still_failed, ...
    seconds: float = 0.0
    warnings: list[str] = Field(default_factory=list)


class NodeView(BaseModel):
    """One node with where it sits: text, page, bbox, the titles of its ancestors; a section's
    printed `number` and its `role` when it is a contents, list or index (core.model.Node)."""

    id: str
    doc_id: str
    document: str
    type: str
    level: int
    title: str
    text: str
    page_idx: int
    page_end_idx: int
    bbox: BBox | None
    parent_path: list[str]
    children: list[str]
    meta: dict[str, Any]
    image_file: str | None = None
    number: str | None = None
    role: str | None = None
    # what its first and last pages print as their numbers (`core.pages`); None where a page
    # prints none or the folder keeps no labels
    page_label: str | None = None
    page_end_label: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def page_ref(self) -> str:
        """Its pages as every interface names them: "p. 36 (printed 30)", "pp. 36-37 (printed 30-31)"."""
        return cite_pages(self.page_idx + 1, self.page_end_idx + 1, self.page_label, self.page_end_label)


class PageInfo(BaseModel):
    """A document's pages as a viewer needs them: sizes in PDF points (to scale boxes onto a
    page image) and the printed labels where the PDF has them ("iv", "12")."""

    doc_id: str
    pages: int
    sizes: list[tuple[float, float]] = Field(default_factory=list)
    labels: list[str] | None = None


class EntityRef(BaseModel):
    """An entity in a list: what a search or a neighbourhood shows of it."""

    id: str
    name: str
    type: str
    degree: int = 0
    nodes: int = 0  # GT-links: how many tree nodes it was extracted from
    relation: str = ""  # in a neighbourhood: the keywords/description of the edge to the centre
    weight: float = 0.0


class EntityView(BaseModel):
    """One entity of a document's graph with its neighbourhood and GT-linked tree nodes."""

    doc_id: str
    entity: EntityRef
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    neighbours: list[EntityRef] = Field(default_factory=list)
    node_ids: list[str] = Field(default_factory=list)


class RouteChoice(BaseModel):
    doc_id: str
    name: str
    score: float
    signals: dict[str, float] = Field(default_factory=dict)   # the document router's raw signals
    ranks: dict[str, int] = Field(default_factory=dict)       # and each one's rank (1 = best)
