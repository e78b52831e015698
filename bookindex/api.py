"""Python API for asking questions of indexed documents: a thin shell over the Engine.

    from bookindex.api import open_library
    lib = open_library("my-library")
    doc = lib.get("handbook.pdf")
    answer = doc.ask("What is the default line width?")     # -> Answer (pydantic)
    plan = doc.plan("How many tables are in pages 3-10?")   # -> Plan (editable data)
    answer = doc.run(plan)
    answer = lib.ask("Which terminal writes PDF?")          # routes to the best-matching document
    lib.engine                                              # the Engine, for everything else
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.core.model import DocumentTree
from bookindex.core.protocols import LLM
from bookindex.engine import DocumentInfo, Engine, IndexReport, RouteChoice
from bookindex.retrieval import Answer, Plan

__all__ = ["Document", "Library", "open_library", "Engine", "Answer", "Plan"]


class Document:
    """One indexed document: its manifest and tree, and `ask`, `plan` and `run`."""

    def __init__(self, engine: Engine, info: DocumentInfo) -> None:
        self.engine = engine
        self.info = info

    @property
    def doc_id(self) -> str:
        return self.info.doc_id

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def manifest(self) -> dict[str, Any]:
        return self.info.manifest

    @property
    def tree(self) -> DocumentTree:
        return self.engine.tree(self.doc_id)

    def ask(self, question: str, method: str = "bookindex", k: int | None = None) -> Answer:
        return self.engine.ask(question, doc=self.doc_id, method=method, k=k)

    def plan(self, question: str) -> Plan:
        return self.engine.plan(question, doc=self.doc_id)

    def run(self, plan: Plan | dict[str, Any] | str) -> Answer:
        return self.engine.run_plan(plan, doc=self.doc_id)

    def __repr__(self) -> str:
        return f"Document({self.doc_id!r}, {self.name!r}, pages={self.info.pages})"


class Library:
    """A library folder: its documents, and `ask` routed across them when none is named."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def root(self) -> Path:
        return self.engine.root

    @property
    def documents(self) -> list[Document]:
        return [Document(self.engine, info) for info in self.engine.documents()]

    def get(self, doc: str) -> Document:
        return Document(self.engine, self.engine.document(doc))

    def index(self, path: str | Path, **options: Any) -> IndexReport:
        return self.engine.index(path, **options)

    def remove(self, doc: str) -> DocumentInfo:
        return self.engine.remove(doc)

    def route(self, question: str) -> list[RouteChoice]:
        """Documents ranked for the question by the document router that `ask` without a
        document uses (`Engine.route_documents`: each document's top node cosines, BM25 over
        whole documents, the document's vector, fused by rank), so the first choice is the
        document `ask` would answer from; `signals` and `ranks` say why. The best-node ranking
        it replaced (measured lower, docs/library_hierarchy.md) stays available as `engine.route`."""
        if not question.strip():
            raise InputError("the question is empty")
        names = {d.doc_id: d.name for d in self.engine.documents()}
        if not names:
            raise InputError(f"{self.root}: the library is empty; add a document with `bookindex index`")
        return [RouteChoice(doc_id=r.doc_id, name=names.get(r.doc_id, ""), score=round(r.score, 4),
                            signals=dict(r.signals), ranks=dict(r.ranks))
                for r in self.engine.routing.rank(question)]

    def ask(self, question: str, doc: str | None = None, method: str = "bookindex", k: int | None = None) -> Answer:
        return self.engine.ask(question, doc=doc, method=method, k=k)

    def __len__(self) -> int:
        return len(self.engine.documents())


def open_library(directory: str | Path, settings: Settings | None = None, llm: LLM | None = None) -> Library:
    """Open an existing library folder (settings default to bookindex.toml / env, as in the CLI)."""
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise InputError(f"{path}: no such library folder")
    engine = Engine(path, settings, llm=llm)
    engine.library  # noqa: B018 - reads the catalog now, so a bad folder fails here
    return Library(engine)
