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

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from bookindex.core.config import Settings, load_settings
from bookindex.core.errors import IndexFormatError, InputError
from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import BBox, DocumentTree, Evidence, Node
from bookindex.core.protocols import LLM, Embedder, Reranker
from bookindex.indexing.graph.stats import graph_stats, tree_stats
from bookindex.operators.context import IndexContext
from bookindex.operators.passages import build_passages
from bookindex.operators.textscore import get_text_index, query_vector
from bookindex.providers.embedding import get_corpus_embedder, get_embedder
from bookindex.providers.llm import get_llm
from bookindex.providers.reranker import get_reranker
from bookindex.retrieval import METHODS, Answer, Plan, evidence_text
from bookindex.retrieval import api as retrieval_api
from bookindex.retrieval.answer import TraceRecord
from bookindex.routing.pooled import PooledIndex
from bookindex.routing.router import LibraryRouter, RoutedDocument, decision_of, router_for
from bookindex.skills.compiler import build as skills_build_mod
from bookindex.skills.compiler import hierarchy as skills_hierarchy
from bookindex.skills.compiler import update as skills_update
from bookindex.skills.compiler.requests import (
    SkillsAddRequest,
    SkillsBuildReport,
    SkillsBuildRequest,
    SkillsRemoveRequest,
    SkillsTreeView,
    SkillsUpdateReport,
)
from bookindex.skills.compiler.treeview import tree_view
from bookindex.skills.model import Hierarchy, is_hierarchy, is_skill_dir, load_hierarchy, load_tree
from bookindex.skills.navigator import libnav
from bookindex.skills.navigator import navigate as skills_navigate
from bookindex.skills.navigator.answer import SkillsAnswer, SkillsAskRequest
from bookindex.skills.navigator.document_tools import DocumentTools
from bookindex.skills.navigator.libnav import LibraryAnswer
from bookindex.skills.navigator.opened import OpenedSkills
from bookindex.skills.navigator.pages import PageText, pages_text, parse_pages
from bookindex.skills.navigator.tool_result import ToolResult
from bookindex.storage.batch import BatchItem, index_batch
from bookindex.storage.library import CATALOG, Library, StoredDocument
from bookindex.storage.runners import make_runner
from bookindex.storage.staging import ProviderFactory, default_providers

Method = Literal["bookindex", "bm25", "dense", "hybrid", "chunks", "tree"]
BROWSED_DOCUMENTS = 8  # documents kept by `browse` (trees and graphs only)
OPEN_DOCUMENTS = 16  # opened documents kept in memory (their derived views cost seconds to rebuild)
Events = Callable[[str, dict[str, Any]], None]

__all__ = ["Engine", "AskRequest", "AskEvent", "PlanRequest", "IndexReport", "DocumentInfo", "NodeView",
           "RouteChoice", "Answer", "Plan", "METHODS", "OPEN_DOCUMENTS",
           "SkillsBuildRequest", "SkillsBuildReport", "SkillsAddRequest", "SkillsRemoveRequest",
           "SkillsUpdateReport", "SkillsTreeView", "PageInfo", "EntityRef", "EntityView"]


class AskRequest(BaseModel):
    """A question, optionally pinned to one document and answered by a baseline method."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    doc: str | None = None
    method: Method = "bookindex"
    k: int | None = Field(default=None, ge=1)
    skills: str | None = None  # a library hierarchy (`skills build LIB --documents`) to route through
    # how `skills` is walked: the embedding beam and router (no LLM), or the LLM navigator with
    # the document tools (it routes; the chosen document's retrieval answers, with checked citations)
    navigator: Literal["embedding", "llm"] = "embedding"


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
        self._browsed: OrderedDict[tuple[str, str], StoredDocument] = OrderedDict()
        self._router: tuple[tuple[tuple[str, str], ...], LibraryRouter] | None = None
        self._pooled: tuple[tuple[tuple[str, str], ...], PooledIndex] | None = None

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

    def corpus_embedder(self, int8: bool | None = None, tokens: int | None = None) -> Embedder:
        """The embedder for a skill corpus's documents (`get_corpus_embedder`: the query
        embedder's model, int8 and truncated, when it is the ONNX one; else the embedder itself)."""
        return get_corpus_embedder(self.embedder, self.settings, int8=int8, tokens=tokens)

    def _tree_embedder(self, folder: str | Path) -> Embedder:
        """The corpus embedder a skill folder was built with (an add must embed like its build)."""
        params = load_tree(folder).params
        return self.corpus_embedder(int8=params.doc_int8, tokens=params.doc_tokens)

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
              replaces: tuple[str, ...] | list[str] = (), **options: Any) -> IndexReport:
        """Index one file or MinerU folder (PDF, MinerU JSON, Markdown, text); see Library.add
        (`replaces`: ids of documents this one replaces when it commits)."""
        t0 = time.perf_counter()
        doc = self.library.add(path, on_event=on_event, progress=progress, replaces=replaces, **options)
        self._forget(doc.doc_id)
        for old in replaces:
            self._forget(old)
        m = doc.manifest
        built = doc.status not in ("unchanged",)
        graph = (doc.build_report.get("graph") or {}) if built else {}
        return IndexReport(doc_id=doc.doc_id, name=doc.name, status=doc.status,
                           pages=int(m.get("pages") or 0), blocks=int(m.get("blocks") or 0),
                           sections=int(m.get("sections") or 0), nodes=int(m.get("nodes") or 0),
                           graph_built=bool(m.get("graph")), graph=graph, retry=doc.retry,
                           seconds=round(time.perf_counter() - t0, 3),
                           warnings=[str(w) for w in m.get("warnings") or []] if built else [])

    def index_many(self, paths: list[Path], *, workers: int = 1, ray: str | None = None,
                   ray_cpus: int | None = None, on_item: Callable[[BatchItem], None] | None = None,
                   on_progress: Events | None = None, factory: ProviderFactory = default_providers,
                   **options: Any) -> list[BatchItem]:
        """Index many files with builds in `workers` local processes or on a Ray cluster (`ray`:
        local, auto, ray://HOST:PORT) and this process as the one writer committing each build
        as it arrives (issue 17; docs/distributed.md). Workers create their own models from the
        settings (`factory`), so the Engine's injected providers are not used by them."""
        runner = make_runner(workers, ray, ray_cpus, factory)
        items = index_batch(self.library, list(paths), runner, options=options, on_item=on_item,
                            on_progress=on_progress or (lambda e, i: None))
        for item in items:
            if item.doc is not None:
                self._forget(item.doc.doc_id)
        return items

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
        return _node_view(self.library.doc_of_node(node_id), node_id)

    def browse_node(self, node_id: str) -> NodeView:
        """`node`, read from the document `browse` keeps open (for UIs clicking through a tree)."""
        return _node_view(self.browse(self.library.doc_of_node(node_id).doc_id), node_id)

    def browse(self, doc: str) -> StoredDocument:
        """A stored document kept open for browsing (UI trees, node views): its tree and graph
        are read once per generation, not per request as `tree(doc)` does (0.2-0.4 s for a
        300-page manual), and a rebuild's new generation replaces it. No providers are loaded."""
        stored = self.library.get(doc)
        key = (stored.doc_id, stored.dir.name)
        with self._lock:
            kept = self._browsed.get(key)
            if kept is not None:
                self._browsed.move_to_end(key)
                stored.close()
                return kept
            for old in [k for k in self._browsed if k[0] == stored.doc_id]:
                del self._browsed[old]
            self._browsed[key] = stored
            while len(self._browsed) > BROWSED_DOCUMENTS:
                self._browsed.popitem(last=False)
        return stored

    def page_info(self, doc: str) -> PageInfo:
        """Page sizes and printed page labels of a document (for page viewers)."""
        d = self.browse(doc)
        meta = d.tree.meta
        sizes = [(float(w), float(h)) for w, h in meta.get("page_sizes") or []]
        return PageInfo(doc_id=d.doc_id, pages=int(d.manifest.get("pages") or meta.get("pages") or len(sizes)),
                        sizes=sizes, labels=d.page_labels)

    def entities(self, doc: str, query: str = "", limit: int = 50) -> list[EntityRef]:
        """Entities of a document's graph whose name or alias contains `query` (case-folded):
        exact names first, then by degree; without a query, the best-connected ones."""
        g = self.browse(doc).graph
        q = " ".join(query.split()).casefold()
        degree = g.nx.degree
        hits: list[tuple[int, int, str]] = []
        for eid, e in g.entities.items():
            names = [e.name, *e.aliases]
            if q and not any(q in n.casefold() for n in names):
                continue
            exact = 0 if q and any(q == n.casefold() for n in names) else 1
            hits.append((exact, -int(degree[eid]) if eid in g.nx else 0, eid))
        hits.sort()
        return [_entity_ref(g, eid) for _, _, eid in hits[:max(1, limit)]]

    def entity(self, doc: str, entity_id: str, limit: int = 50) -> EntityView:
        """One entity's neighbourhood (heaviest edges first) and the tree nodes it links to."""
        d = self.browse(doc)
        g = d.graph
        e = g.entities.get(entity_id)
        if e is None:
            raise InputError(f"{d.name}: no entity {entity_id!r}")
        edges: dict[str, tuple[float, str]] = {}
        for r in g.relations:
            if entity_id not in (r.source, r.target) or r.source == r.target:
                continue
            other = r.target if r.source == entity_id else r.source
            w, label = edges.get(other, (0.0, ""))
            edges[other] = (w + r.weight, label or r.description or ", ".join(r.keywords))
        ranked = sorted(edges.items(), key=lambda kv: (-kv[1][0], kv[0]))[:max(1, limit)]
        neighbours = [_entity_ref(g, o).model_copy(update={"relation": lab, "weight": round(w, 3)})
                      for o, (w, lab) in ranked if o in g.entities]
        return EntityView(doc_id=d.doc_id, entity=_entity_ref(g, entity_id), description=e.description,
                          aliases=list(e.aliases), neighbours=neighbours,
                          node_ids=[n for n in e.node_ids if n in d.tree.nodes])

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
            for key in [k for k in self._browsed if k[0] == doc_id]:
                del self._browsed[key]

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

    def _target(self, doc: str | None, question: str, skills: str | None = None,
                navigator: str = "embedding") -> tuple[IndexContext, TraceRecord | None]:
        """The document a question goes to: the one named, else the routing decision (through a
        library hierarchy when `skills` names one, by the LLM navigator with `navigator="llm"`,
        else the library router), kept for the trace."""
        if doc is not None:
            return self.open(doc), None
        t0 = time.perf_counter()
        docs = self.library.documents
        if not docs:
            raise InputError(f"{self.root}: the library is empty; add a document with `bookindex index`")
        if len(docs) == 1:
            return self.open(docs[0].doc_id), None
        extra: dict[str, Any] = {}
        if skills is not None and navigator == "llm":
            decision, steps, extra = self._route_by_agent(question, skills)
        elif skills is not None:
            nav = self.navigate_library(question, skills=skills, search=False)
            decision, steps = nav.decision, [st.model_dump(exclude_none=True) for st in nav.steps]
        else:
            decision, steps = decision_of(self.route_documents(question), "library"), []
        rec = TraceRecord(op="Route", kind=str(decision["route"]), ms=round((time.perf_counter() - t0) * 1000, 2),
                          outputs=decision["ranking"], chosen=decision["chosen"], navigation=steps or None, **extra)
        return self.open(str(decision["chosen"])), rec

    def _route_by_agent(self, question: str, skills: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
        """The LLM navigator walks the hierarchy with the document tools; the document it cited
        first (else read first) is chosen. Its own answer and cited blocks go in the trace; the
        answer returned is the chosen document's retrieval, whose citations are checked against
        one document's evidence. Nothing read: the library router decides, with a note."""
        ans = self.skills_ask(SkillsAskRequest(folder=skills, question=question, navigator="llm"))
        order = ans.cited + [d.doc_id for d in ans.documents if d.doc_id not in ans.cited]
        notes = list(ans.notes)
        if order:
            ranking: list[dict[str, Any]] = [{"doc_id": d, "cited": d in ans.cited} for d in order]
            chosen = order[0]
        else:
            notes.append("the LLM navigator read no document: routed by the library router")
            fallback = decision_of(self.route_documents(question), "library")
            ranking, chosen = list(fallback["ranking"]), str(fallback["chosen"])  # type: ignore[call-overload]
        extra = {"agent_answer": ans.answer, "agent_stopped": ans.stopped,
                 "cited_nodes": [c.model_dump() for c in ans.cited_nodes], "notes": notes or None,
                 "llm": {"calls": ans.usage.llm_calls, "prompt_tokens": ans.usage.prompt_tokens,
                         "completion_tokens": ans.usage.completion_tokens}}
        return ({"route": "hierarchy-llm", "chosen": chosen, "ranking": ranking},
                [st.model_dump(exclude_none=True) for st in ans.steps], extra)

    def ask(self, request: AskRequest | str, **fields: Any) -> Answer:
        """Answer a question: `ask("...")`, `ask("...", doc="manual.pdf", method="bm25")` or
        `ask(AskRequest(...))`. Without `doc`, the question is routed to the best document."""
        req = request if isinstance(request, AskRequest) else AskRequest(question=request, **fields)
        try:
            return self._ask_once(req)
        except IndexFormatError:
            # A generation's files vanished under an open document (a rare race with a writer's
            # sweep under heavy concurrent re-indexing, not yet explained): open the documents
            # afresh from the catalog and ask once more; a truly broken index fails again.
            with self._lock:
                self._opened.clear()
            return self._ask_once(req)

    def _ask_once(self, req: AskRequest) -> Answer:
        ctx, route = self._target(req.doc, req.question, req.skills, req.navigator)
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
                ctx, route = self._target(req.doc, req.question, req.skills, req.navigator)
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

    # -- a library as one hierarchy, library to block (issue 14) -------------------------------
    def library_router(self) -> LibraryRouter:
        """The document router of the library as it is now (rebuilt when the catalog changes)."""
        docs = self.library.documents
        key = tuple((d.doc_id, d.dir.name) for d in docs)
        with self._lock:
            if self._router is not None and self._router[0] == key:
                return self._router[1]
        router = router_for(docs, self.embedder)
        with self._lock:
            self._router = (key, router)
        return router

    def route_documents(self, question: str) -> list[RoutedDocument]:
        """Documents ranked for a question by the library router (node, lexical and document
        signals fused; `bookindex.routing.router`): what `ask` without a document routes by."""
        qvec = self._query_vector(question)
        return self.library_router().rank(question, qvec)

    def _query_vector(self, question: str) -> np.ndarray:
        vec = np.asarray(self.embedder.encode([question]), dtype=np.float32)[0]
        n = float(np.linalg.norm(vec))
        return vec / n if n > 0 else vec

    def search_library(self, question: str, k: int = 10) -> list[Evidence]:
        """Flat library-wide search: every block of every document in one BM25 index (one IDF)
        and one vector matrix, fused by rank; the top k may come from several documents."""
        docs = self.library.documents
        key = tuple((d.doc_id, d.dir.name) for d in docs)
        with self._lock:
            pooled = self._pooled[1] if self._pooled is not None and self._pooled[0] == key else None
        if pooled is None:
            pooled = PooledIndex([d.tree for d in docs], [d.node_vectors() for d in docs])
            with self._lock:
                self._pooled = (key, pooled)
        trees = {d.doc_id: d.tree for d in docs}
        hits = pooled.search(question, self._query_vector(question), k=k)
        return [Evidence.from_node(trees[h.doc_id], trees[h.doc_id].nodes[h.node_id], scores={"pooled": h.score},
                                   rank=i) for i, h in enumerate(hits, 1)]

    def search_document(self, doc_id: str, question: str, k: int = 10) -> list[Evidence]:
        """One document's BookRAG retrieval (operator plans): the navigator's tool at a document."""
        return self.search(question, doc=doc_id, method="bookindex", k=k)

    def document_tree(self, doc_id: str) -> DocumentTree:
        return self.tree(doc_id)

    def pages(self, doc: str, pages: str) -> list[PageText]:
        """`get_pages(doc, "3-7")`: the text of a document's pages, block ids included."""
        stored = self.library.get(doc)
        first, last = parse_pages(pages, int(stored.manifest.get("pages") or 0))
        return pages_text(stored.tree, first, last)

    def navigate_library(self, question: str, *, skills: str | Path, k: int = 10, search: bool = True,
                         beam: int | None = None, documents: int = 1) -> LibraryAnswer:
        """Walk a library hierarchy: topics by beam, the reached documents ranked by the router,
        then (`search`) the best document's retrieval and the section and block it leads to."""
        opened = self.open_skills(skills)
        hier = self._hierarchy_of(opened)
        return libnav.navigate(opened, hier, self.library_router(), self.embedder, self if search else None,
                               question, k=k, beam=beam, search_docs=documents)

    def _hierarchy_of(self, opened: OpenedSkills) -> Hierarchy:
        """A library hierarchy's map, checked against this library (InputError when it holds
        documents the library does not)."""
        hier = load_hierarchy(opened.folder)
        known = {d.doc_id for d in self.library.documents}
        missing = sorted(set(hier.documents) - known)
        if missing:
            raise InputError(f"{opened.folder}: built from documents this library does not hold "
                             f"({', '.join(missing[:3])}); rebuild it with `bookindex skills build LIB --documents`")
        return hier

    def library_tools(self, folder: str | Path) -> DocumentTools | None:
        """The LLM navigator's tools at a document (search_document, get_node, get_pages) when
        `folder` is a library hierarchy and this Engine holds its library; None otherwise."""
        opened = self.open_skills(folder)
        if not is_hierarchy(opened.folder) or self._root is None or not self.exists():
            return None
        return DocumentTools(self, self._hierarchy_of(opened))

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

    def skills_view(self, folder: str | Path, path: str) -> ToolResult:
        """What the navigator's `view` tool shows: a folder's listing with its navigation file, or
        a file's text (paths relative to the skill root; InputError for one that leaves it)."""
        return self.open_skills(folder).tools.view(path)

    def skills_document(self, folder: str | Path, doc_id: str) -> ToolResult:
        """What the navigator's `get_document` tool returns: a document's title and text."""
        return self.open_skills(folder).tools.get_document(doc_id)

    def skills_ask(self, request: SkillsAskRequest | str, **fields: Any) -> SkillsAnswer:
        """Navigate a skill folder: `--navigator llm` answers citing documents it read,
        `embedding` (no LLM) ranks documents by beam search down the tree."""
        req = request if isinstance(request, SkillsAskRequest) else SkillsAskRequest(question=request, **fields)
        opened = self.open_skills(req.folder)
        library = self.library_tools(opened.folder) if req.navigator == "llm" else None
        ans = skills_navigate.ask(opened, req, llm=self.llm, embedder=self.embedder, library=library)
        if req.navigator == "llm" and library is None and is_hierarchy(opened.folder):
            ans.notes.append("a library hierarchy without its library: search_document, get_node and get_pages "
                             "were not offered (open the Engine on the library, or `skills ask DIR -i LIB`)")
        return ans

    def skills_search(self, folder: str | Path, question: str, method: str, k: int = 10,
                      beam: int | None = None, max_rounds: int = 10) -> SkillsAnswer:
        """The documents a corpus method returns (bm25, dense, hybrid, raptor, skills-embedding,
        skills-llm, skills-llm-plain): what the corpus evaluation compares."""
        return skills_navigate.search(self.open_skills(folder), question, method, k=k, llm=self.llm,
                                      embedder=self.embedder, beam=beam, max_rounds=max_rounds)

    # -- skills (Corpus2Skill: a corpus compiled into a navigable skill folder) ---------------
    def _skills_llm(self, no_llm: bool) -> LLM | None:
        """The LLM for summaries, or None for the extractive (no-LLM) path."""
        return None if no_llm else self.llm

    def skills_build(self, request: SkillsBuildRequest, *, on_event: Events | None = None,
                     progress: bool = False) -> SkillsBuildReport:
        """Compile files, folders or libraries into a skill folder (written whole, then renamed in);
        `documents=True`: libraries into one hierarchy whose leaves hold each document's skill."""
        if request.documents:
            return skills_hierarchy.build(request, self.embedder, self._skills_llm(request.no_llm),
                                          on_event=on_event, progress=progress)
        return skills_build_mod.build(request, self.corpus_embedder(), self._skills_llm(request.no_llm),
                                      on_event=on_event, progress=progress)

    def skills_add(self, request: SkillsAddRequest) -> SkillsUpdateReport:
        """Add documents to a skill folder: nearest leaf, only touched clusters re-summarised."""
        _not_a_hierarchy(request.folder)
        return skills_update.add(request, self._tree_embedder(request.folder), self._skills_llm(request.no_llm))

    def skills_remove(self, request: SkillsRemoveRequest) -> SkillsUpdateReport:
        """Remove documents by id from a skill folder; empty clusters are dropped."""
        _not_a_hierarchy(request.folder)
        return skills_update.remove(request, self._tree_embedder(request.folder), self._skills_llm(request.no_llm))

    def skills_tree(self, folder: str | Path) -> SkillsTreeView:
        """The hierarchy of a skill folder: labels, paths, counts, descriptions."""
        return tree_view(folder)


def _node_view(d: StoredDocument, node_id: str) -> NodeView:
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
def _not_a_hierarchy(folder: str) -> None:
    """`skills add/remove` rewrite a topic tree without document skills: refused for a hierarchy."""
    if is_hierarchy(folder):
        raise InputError(f"{folder}: a library hierarchy is kept current by re-running `bookindex skills build LIB "
                         "--documents -o DIR` (only re-indexed documents are rendered); add or remove documents in the library")


def _info(d: StoredDocument) -> DocumentInfo:
    m = d.manifest
    return DocumentInfo(doc_id=d.doc_id, name=d.name, source=m.get("source"), pages=m.get("pages"),
                        parser=m.get("parser"), nodes=m.get("nodes"), sections=m.get("sections"),
                        graph=bool(m.get("graph")), created=m.get("created"), manifest=dict(m))


def _entity_ref(g: KnowledgeGraph, eid: str) -> EntityRef:
    e = g.entities[eid]
    deg = int(g.nx.degree[eid]) if eid in g.nx else 0
    return EntityRef(id=eid, name=e.name, type=e.type, degree=deg, nodes=len(e.node_ids))


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
