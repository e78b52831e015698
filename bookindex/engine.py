"""The Engine: the one object every interface (CLI, Python API, evaluation, servers) talks to.

It is built once from settings and owns, lazily, the providers (LLM, VLM, embedder, reranker),
the library store, and one bounded cache of opened documents (`IndexContext`: a stored
`DocumentIndex` with the providers attached and the views derived from it). Requests and
responses are typed pydantic models (`AskRequest`, `Answer`, `Plan`, `IndexReport`,
`DocumentInfo`, `NodeView`), so a REST or MCP shell can expose them as they are.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bookindex.core.config import Settings, load_settings
from bookindex.core.errors import IndexFormatError, InputError
from bookindex.core.model import BBox, DocumentTree, Evidence, Node
from bookindex.core.protocols import LLM, Embedder, Reranker
from bookindex.indexing.graph.stats import graph_stats, tree_stats
from bookindex.providers.embedding import get_embedder
from bookindex.providers.llm import get_llm
from bookindex.providers.reranker import get_reranker
from bookindex.skills import navigate as skills_navigate
from bookindex.skills.answer import SkillsAnswer, SkillsAskRequest
from bookindex.skills.model import is_skill_dir
from bookindex.skills.opened import OpenedSkills
from bookindex.skills import build as skills_build_mod
from bookindex.skills import update as skills_update
from bookindex.skills.requests import (
    SkillsAddRequest, SkillsBuildReport, SkillsBuildRequest, SkillsRemoveRequest, SkillsTreeView, SkillsUpdateReport,
)
from bookindex.skills.treeview import tree_view
from bookindex.storage.library import CATALOG, Library, StoredDocument
from operators.context import IndexContext
from operators.passages import build_passages
from operators.textscore import get_text_index, query_vector
from retrieval import METHODS, Answer, Plan, evidence_text
from retrieval import api as retrieval_api
from retrieval.answer import TraceRecord

Method = Literal["bookindex", "bm25", "dense", "hybrid", "chunks", "tree"]
OPEN_DOCUMENTS = 16  # opened documents kept in memory (their derived views cost seconds to rebuild)
Events = Callable[[str, dict[str, Any]], None]

__all__ = ["Engine", "AskRequest", "AskEvent", "PlanRequest", "IndexReport", "DocumentInfo", "NodeView",
           "RouteChoice", "Answer", "Plan", "METHODS", "OPEN_DOCUMENTS",
           "SkillsBuildRequest", "SkillsBuildReport", "SkillsAddRequest", "SkillsRemoveRequest",
           "SkillsUpdateReport", "SkillsTreeView"]


class AskRequest(BaseModel):
    """A question, optionally pinned to one document and answered by a baseline method."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    doc: str | None = None
    method: Method = "bookindex"
    k: int | None = Field(default=None, ge=1)


class AskEvent(BaseModel):
    """One event of `Engine.ask_stream`: plan | evidence | token | reset | usage | answer."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kind: Literal["plan", "evidence", "token", "reset", "usage", "answer"]
    data: Any = None


class PlanRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    doc: str | None = None


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
    """One node with where it sits: text, page, bbox, the titles of its ancestors."""

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


class RouteChoice(BaseModel):
    doc_id: str
    name: str
    score: float


class Engine:
    """bookindex's application core. `Engine(library_dir, settings)`; everything else is lazy."""

    def __init__(self, library: str | Path | None = None, settings: Settings | None = None, *,
                 llm: LLM | None = None, embedder: Embedder | None = None,
                 reranker: Reranker | None = None, vlm: LLM | None = None,
                 open_documents: int = OPEN_DOCUMENTS) -> None:
        self._settings = settings
        self._llm = llm
        self._embedder = embedder
        self._reranker = reranker
        self._vlm = vlm
        self._root = Path(library).expanduser() if library is not None else None
        self._library: Library | None = None
        self._opened: OrderedDict[tuple[str, str], IndexContext] = OrderedDict()
        self._capacity = max(1, open_documents)
        self._lock = threading.RLock()
        self._skills: dict[str, tuple[str, OpenedSkills]] = {}

    # -- settings and providers (created on first use, then shared) ------------------------
    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    @property
    def llm(self) -> LLM:
        """The LLM client (provider `none` gives one with available=False: the no-LLM paths)."""
        with self._lock:
            if self._llm is None:
                self._llm = get_llm(self.settings)
            return self._llm

    @property
    def vlm(self) -> LLM | None:
        """The vision model for figures and charts, or None when `vlm.provider` is none."""
        with self._lock:
            if self._vlm is None and self.settings.vlm.provider != "none":
                self._vlm = get_llm(self.settings, section="vlm")
            return self._vlm

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = get_embedder(self.settings)
            return self._embedder

    @property
    def reranker(self) -> Reranker:
        with self._lock:
            if self._reranker is None:
                self._reranker = get_reranker(self.settings, embedder=self.embedder)
            return self._reranker

    # -- the library -------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.library.root

    @property
    def library(self) -> Library:
        """The library store; its builds use the Engine's providers, created on first build."""
        with self._lock:
            if self._library is None:
                if self._root is None:
                    raise InputError("no library folder given to the Engine")
                self._library = Library.open(self._root, self.settings, providers=self)
            return self._library

    def exists(self) -> bool:
        """Whether the folder holds a library (a catalog has been written)."""
        return self._root is not None and (self._root / CATALOG).is_file()

    def require_library(self) -> None:
        """Raise a clear error when the folder holds no library yet."""
        if not self.exists():
            raise InputError(f"{self._root}: no bookindex library here (index documents with "
                             f"`bookindex index PATH -i {self._root}`)")

    def documents(self) -> list[DocumentInfo]:
        return [_info(d) for d in self.library.documents]

    def document(self, doc: str) -> DocumentInfo:
        return _info(self.library.get(doc))

    def index(self, path: str | Path, *, on_event: Events | None = None, progress: bool = False,
              **options: Any) -> IndexReport:
        """Index one file or MinerU folder (PDF, MinerU JSON, Markdown, text); see Library.add."""
        t0 = time.perf_counter()
        doc = self.library.add(path, on_event=on_event, progress=progress, **options)
        self._forget(doc.doc_id)
        m = doc.manifest
        built = doc.status not in ("unchanged",)
        graph = (doc.build_report.get("graph") or {}) if built else {}
        return IndexReport(doc_id=doc.doc_id, name=doc.name, status=doc.status,
                           pages=int(m.get("pages") or 0), blocks=int(m.get("blocks") or 0),
                           sections=int(m.get("sections") or 0), nodes=int(m.get("nodes") or 0),
                           graph_built=bool(m.get("graph")), graph=graph, retry=doc.retry,
                           seconds=round(time.perf_counter() - t0, 3),
                           warnings=[str(w) for w in m.get("warnings") or []] if built else [])

    def remove(self, doc: str) -> DocumentInfo:
        d = self.library.remove(doc)
        self._forget(d.doc_id)
        return _info(d)

    def tree(self, doc: str) -> DocumentTree:
        return self.library.get(doc).tree

    def trees(self) -> Iterator[DocumentTree]:
        for d in self.library.documents:
            yield d.tree

    def node(self, node_id: str) -> NodeView:
        d = self.library.doc_of_node(node_id)
        tree = d.tree
        if node_id not in tree.nodes:
            raise InputError(f"{d.name}: no node {node_id!r}")
        n: Node = tree.nodes[node_id]
        image = d.image_file(node_id)
        return NodeView(id=n.id, doc_id=d.doc_id, document=d.name, type=n.type, level=n.level,
                        title=n.title, text=n.text, page_idx=n.page_idx, page_end_idx=n.page_end_idx,
                        bbox=n.bbox, parent_path=[p.title for p in tree.parent_path(n)],
                        children=list(n.children), meta=dict(n.meta),
                        image_file=str(image) if image is not None else None)

    def stats(self, doc: str | None = None) -> dict[str, Any]:
        """Tree and graph statistics, ER merges and the build's LLM ledger, per document and
        (without `doc`) for the whole library."""
        docs = [self.library.get(doc)] if doc else self.library.documents
        per = [doc_stats(d) for d in docs]
        if doc:
            return per[0]
        return {**library_stats(per), "documents_stats": per}

    # -- questions -----------------------------------------------------------------------------
    def open(self, doc: str) -> IndexContext:
        """The opened document `doc` (id, file name or stem): cached, least recently used first out."""
        stored = self.library.get(doc)
        key = (stored.doc_id, stored.dir.name)
        with self._lock:
            ctx = self._opened.get(key)
            if ctx is not None:
                self._opened.move_to_end(key)
                return ctx
        ctx = self._context(stored)
        with self._lock:
            for old in [k for k in self._opened if k[0] == stored.doc_id and k != key]:
                del self._opened[old]  # a superseded version: its reader lease goes with it
            self._opened[key] = ctx
            while len(self._opened) > self._capacity:
                self._opened.popitem(last=False)
        return ctx

    def _context(self, stored: StoredDocument) -> IndexContext:
        embedder = self.embedder
        ids, mat = stored.node_vectors()
        if mat is not None and mat.shape[1] != embedder.dim:
            built = stored.manifest.get("embedding") or {}
            raise IndexFormatError(
                f"{stored.dir}: node vectors were built with embedding model {built.get('model', '?')!r} "
                f"(dim {mat.shape[1]}), but the configured embedder {embedder.name!r} has dim "
                f"{embedder.dim}; re-index the document or configure that model")
        return IndexContext(index=stored, settings=self.settings, llm=self.llm, embedder=embedder,
                            reranker=self.reranker, vlm=self.vlm)

    def _forget(self, doc_id: str) -> None:
        with self._lock:
            for key in [k for k in self._opened if k[0] == doc_id]:
                del self._opened[key]

    def route(self, question: str) -> list[RouteChoice]:
        """Documents ranked for a question: the best node's cosine (else BM25) per document."""
        docs = self.library.documents
        if not docs:
            raise InputError(f"{self.root}: the library is empty; add a document with `bookindex index`")
        if len(docs) == 1:
            return [RouteChoice(doc_id=docs[0].doc_id, name=docs[0].name, score=1.0)]
        scored: list[tuple[float, StoredDocument]] = []
        for d in docs:
            ctx = self.open(d.doc_id)
            idx = get_text_index(ctx)
            dense = idx.dense(query_vector(ctx, question))
            score = float(dense.max()) if dense is not None and dense.size else float(idx.lexical(question).max(initial=0.0))
            scored.append((score, d))
        scored.sort(key=lambda t: (-t[0], t[1].doc_id))
        return [RouteChoice(doc_id=d.doc_id, name=d.name, score=round(s, 4)) for s, d in scored]

    def _target(self, doc: str | None, question: str) -> tuple[IndexContext, TraceRecord | None]:
        if doc is not None:
            return self.open(doc), None
        t0 = time.perf_counter()
        ranking = self.route(question)
        if len(ranking) == 1:
            return self.open(ranking[0].doc_id), None
        rec = TraceRecord(op="Route", kind="library", ms=round((time.perf_counter() - t0) * 1000, 2),
                          outputs=[r.model_dump() for r in ranking])
        return self.open(ranking[0].doc_id), rec

    def ask(self, request: AskRequest | str, **fields: Any) -> Answer:
        """Answer a question: `ask("...")`, `ask("...", doc="manual.pdf", method="bm25")` or
        `ask(AskRequest(...))`. Without `doc`, the question is routed to the best document."""
        req = request if isinstance(request, AskRequest) else AskRequest(question=request, **fields)
        ctx, route = self._target(req.doc, req.question)
        answer = retrieval_api.ask(ctx, req.question, method=req.method, k=req.k)
        if route is not None:
            answer.trace.insert(0, route)
        return answer

    def ask_stream(self, request: AskRequest | str, **fields: Any) -> Iterator[AskEvent]:
        """`ask`, streamed (issue 20): AskEvents "plan" (the Plan, or None for a baseline),
        "evidence" ([Evidence], before the model reads it), "token" (answer text as it is
        written), "reset" (the streamed text is withdrawn: a citation repair or the extractive
        answer follows), then "usage" (Usage, with `first_token_s`) and "answer" (the final
        Answer, whose text is the one to keep). The question runs in a worker thread; an error
        is raised from the iterator. A cache hit replays the answer as one "token"."""
        req = request if isinstance(request, AskRequest) else AskRequest(question=request, **fields)
        events: queue.Queue[tuple[str, Any]] = queue.Queue()
        done = object()

        def work() -> None:
            try:
                ctx, route = self._target(req.doc, req.question)
                answer = retrieval_api.ask(ctx, req.question, method=req.method, k=req.k,
                                           on_event=lambda kind, data: events.put((kind, data)))
                if route is not None:
                    answer.trace.insert(0, route)
                events.put(("usage", answer.usage))
                events.put(("answer", answer))
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer's thread
                events.put(("error", exc))
            finally:
                events.put(("done", done))

        worker = threading.Thread(target=work, name="bookindex-ask-stream", daemon=True)
        worker.start()
        while True:
            kind, data = events.get()
            if kind == "done":
                break
            if kind == "error":
                raise data
            yield AskEvent(kind=kind, data=data)
        worker.join()

    def search(self, question: str, *, doc: str | None = None, method: str = "bookindex",
               k: int | None = None) -> list[Evidence]:
        """Ranked evidence without an answer (baselines and the bm25-pages calibration ranker
        included); routed like `ask` when no document is named."""
        ctx, _ = self._target(doc, question)
        return retrieval_api.search(ctx, question, method=method, k=k)

    def passage(self, doc: str, evidence: Evidence, context: bool = True) -> str:
        """The text a reader gets for one evidence item of `doc`: a chunk, a page, or for a node
        its passage (title path, the node and the adjacent blocks of its entry or paragraph;
        `operators.passages`). `context=False`: the node's own text only."""
        ctx = self.open(doc)
        if not context or evidence.node_id not in ctx.tree.nodes or \
                "chunk_index" in evidence.scores or "page_unit" in evidence.scores:
            return evidence_text(ctx, evidence)
        return build_passages(ctx.tree, [evidence.node_id])[0].render()

    def plan(self, request: PlanRequest | str, **fields: Any) -> Plan:
        """Classify a question and build its operator plan; nothing is retrieved."""
        req = request if isinstance(request, PlanRequest) else PlanRequest(question=request, **fields)
        ctx, _ = self._target(req.doc, req.question)
        return retrieval_api.plan(ctx, req.question)

    def run_plan(self, plan: Plan | dict[str, Any] | str, doc: str | None = None) -> Answer:
        """Execute a (possibly edited) plan: a Plan, its dict, or its JSON text."""
        p = plan if isinstance(plan, Plan) else (Plan.from_json(plan) if isinstance(plan, str) else Plan.from_dict(plan))
        ctx, _ = self._target(doc, p.question)
        return retrieval_api.run_plan(ctx, p)

    # -- skills (Corpus2Skill): questions to a compiled skill folder ---------------------------
    def open_skills(self, folder: str | Path) -> OpenedSkills:
        """A skill folder opened once (re-read when its skills.json changes)."""
        path = Path(folder).expanduser().resolve()
        if not is_skill_dir(path):
            raise InputError(f"{folder}: not a skill tree (no skills.json); build one with `bookindex skills build`")
        stamp = str((path / "skills.json").stat().st_mtime_ns)
        with self._lock:
            cached = self._skills.get(str(path))
            if cached is None or cached[0] != stamp:
                cached = (stamp, OpenedSkills(path))
                self._skills[str(path)] = cached
            return cached[1]

    def skills_ask(self, request: SkillsAskRequest | str, **fields: Any) -> SkillsAnswer:
        """Navigate a skill folder: `--navigator llm` answers citing documents it read,
        `embedding` (no LLM) ranks documents by beam search down the tree."""
        req = request if isinstance(request, SkillsAskRequest) else SkillsAskRequest(question=request, **fields)
        return skills_navigate.ask(self.open_skills(req.folder), req, llm=self.llm, embedder=self.embedder)

    def skills_search(self, folder: str | Path, question: str, method: str, k: int = 10,
                      beam: int | None = None, max_rounds: int = 10) -> SkillsAnswer:
        """The documents a corpus method returns (bm25, dense, hybrid, raptor, skills-embedding,
        skills-llm): what the corpus evaluation compares."""
        return skills_navigate.search(self.open_skills(folder), question, method, k=k, llm=self.llm,
                                      embedder=self.embedder, beam=beam, max_rounds=max_rounds)

    # -- skills (Corpus2Skill: a corpus compiled into a navigable skill folder) ---------------
    def _skills_llm(self, no_llm: bool) -> LLM | None:
        """The LLM for summaries, or None for the extractive (no-LLM) path."""
        return None if no_llm else self.llm

    def skills_build(self, request: SkillsBuildRequest, *, on_event: Events | None = None,
                     progress: bool = False) -> SkillsBuildReport:
        """Compile files, folders or libraries into a skill folder (written whole, then renamed in)."""
        return skills_build_mod.build(request, self.embedder, self._skills_llm(request.no_llm),
                                      on_event=on_event, progress=progress)

    def skills_add(self, request: SkillsAddRequest) -> SkillsUpdateReport:
        """Add documents to a skill folder: nearest leaf, only touched clusters re-summarised."""
        return skills_update.add(request, self.embedder, self._skills_llm(request.no_llm))

    def skills_remove(self, request: SkillsRemoveRequest) -> SkillsUpdateReport:
        """Remove documents by id from a skill folder; empty clusters are dropped."""
        return skills_update.remove(request, self.embedder, self._skills_llm(request.no_llm))

    def skills_tree(self, folder: str | Path) -> SkillsTreeView:
        """The hierarchy of a skill folder: labels, paths, counts, descriptions."""
        return tree_view(folder)


def _info(d: StoredDocument) -> DocumentInfo:
    m = d.manifest
    return DocumentInfo(doc_id=d.doc_id, name=d.name, source=m.get("source"), pages=m.get("pages"),
                        parser=m.get("parser"), nodes=m.get("nodes"), sections=m.get("sections"),
                        graph=bool(m.get("graph")), created=m.get("created"), manifest=dict(m))


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


def _add_ledgers(ledgers: list[dict[str, Any] | None]) -> dict[str, Any]:
    total: dict[str, float] = {}
    stages: dict[str, dict[str, float]] = {}
    for led in ledgers:
        if not led:
            continue
        for k, v in (led.get("total") or {}).items():
            if isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + v
        for st, vals in (led.get("stages") or {}).items():
            acc = stages.setdefault(st, {})
            for k, v in vals.items():
                if isinstance(v, (int, float)):
                    acc[k] = acc.get(k, 0) + v
    return {"stages": stages, "total": total}


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
        "llm": _add_ledgers([d["llm"] for d in docs]),
    }
