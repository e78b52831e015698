"""The Engine: the one object every interface (CLI, Python API, evaluation, servers) talks to.

A small facade in the shape of nano-graphrag's `GraphRAG`: `index` documents in, `ask`, `search`
and `plan` questions out, over services that each do one job and are built from stores and
protocols, never from the Engine (`bookindex.services`):

- `engine.providers`: the models, created on first use and shared;
- `engine.cache`: the one cache of opened documents;
- `engine.routing`: which document a question without one goes to (router, hierarchy, LLM navigator);
- `engine.skills`: compiled skill folders (build, add, remove, view, navigate);
- `engine.graph`: entity look-ups in a document's knowledge graph.

Requests and responses are typed pydantic models (`AskRequest`, `Answer`, `Plan`, `IndexReport`,
`DocumentInfo`, `NodeView`), so a REST or MCP shell can expose them as they are.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bookindex.core.config import Settings, load_settings
from bookindex.core.errors import IndexFormatError, InputError
from bookindex.core.events import Events
from bookindex.core.model import DocumentTree, Evidence
from bookindex.core.protocols import LLM, Embedder, Reranker
from bookindex.indexing.library import DocumentLibrary
from bookindex.indexing.parallel.batch import BatchItem, index_batch
from bookindex.indexing.parallel.executors import make_runner
from bookindex.indexing.parallel.worker import ProviderFactory, default_providers
from bookindex.operators.context import IndexContext
from bookindex.operators.passages import build_passages
from bookindex.providers.nlp import english_if_installed
from bookindex.retrieval import METHODS, Answer, Plan, evidence_text
from bookindex.retrieval import api as retrieval_api
from bookindex.retrieval.answer import TraceRecord
from bookindex.services.documents import DocumentCache, document_info
from bookindex.services.graph_queries import GraphQueries
from bookindex.services.library_access import LibraryDocuments
from bookindex.services.providers import ProviderSet
from bookindex.services.requests import AskEvent, AskRequest, Method, PlanRequest
from bookindex.services.routing import RoutingService
from bookindex.services.skills import SkillsService
from bookindex.services.stats import doc_stats, library_stats
from bookindex.services.views import (
    DocumentInfo,
    EntityRef,
    EntityView,
    IndexReport,
    NodeView,
    PageInfo,
    RouteChoice,
)
from bookindex.skills.compiler.requests import (
    SkillsAddRequest,
    SkillsBuildReport,
    SkillsBuildRequest,
    SkillsRemoveRequest,
    SkillsTreeView,
    SkillsUpdateReport,
)
from bookindex.skills.navigator.libnav import LibraryAnswer
from bookindex.skills.navigator.pages import PageText
from bookindex.storage.catalog import CATALOG

__all__ = ["Engine", "AskRequest", "AskEvent", "PlanRequest", "IndexReport", "DocumentInfo", "NodeView",
           "RouteChoice", "Answer", "Plan", "METHODS", "Method",
           "SkillsBuildRequest", "SkillsBuildReport", "SkillsAddRequest", "SkillsRemoveRequest",
           "SkillsUpdateReport", "SkillsTreeView", "PageInfo", "EntityRef", "EntityView"]


class Engine:
    """bookindex's application core. `Engine(library_dir, settings)`; everything else is lazy."""

    def __init__(self, library: str | Path | None = None, settings: Settings | None = None, *,
                 llm: LLM | None = None, embedder: Embedder | None = None,
                 reranker: Reranker | None = None, vlm: LLM | None = None,
                 open_documents: int | None = None) -> None:
        self._settings = settings
        self._root = Path(library).expanduser() if library is not None else None
        self._library: DocumentLibrary | None = None
        self._lock = threading.Lock()
        self.providers = ProviderSet(lambda: self.settings, llm=llm, embedder=embedder, reranker=reranker, vlm=vlm)
        self.cache = DocumentCache(lambda: self.library, self.providers, capacity=open_documents)
        self._access = LibraryDocuments(self.cache)
        self.skills = SkillsService(self.providers, self.cache, self._library_ids, self._access)
        self.routing = RoutingService(lambda: self.library, self.providers, self.cache, self.skills, self._access)
        self.graph = GraphQueries(self.cache)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    # -- the library -------------------------------------------------------------------------
    @property
    def library(self) -> DocumentLibrary:
        """The library store; its builds use the Engine's providers, created on first build."""
        with self._lock:
            if self._library is None:
                if self._root is None:
                    raise InputError("no library folder given to the Engine")
                self._library = DocumentLibrary.open(self._root, self.settings, providers=self.providers)
            return self._library

    @property
    def root(self) -> Path:
        return self.library.root

    def exists(self) -> bool:
        """Whether the folder holds a library (a catalog has been written)."""
        return self._root is not None and (self._root / CATALOG).is_file()

    def require_library(self) -> None:
        """Raise a clear error when the folder holds no library yet."""
        if not self.exists():
            raise InputError(f"{self._root}: no bookindex library here (index documents with "
                             f"`bookindex index PATH -i {self._root}`)")

    def _library_ids(self) -> set[str] | None:
        """The ids of the library's documents, None when this Engine holds no library."""
        if not self.exists():
            return None
        return {d.doc_id for d in self.library.documents}

    def warm_up(self) -> dict[str, float]:
        """Load now what the first question would otherwise wait for: spaCy's pipeline (the
        planner's noun chunks, the extractive reader), the embedder, and the library's document
        router when it holds several documents (its documents embedded, their node vectors read).
        `bookindex serve` calls it at start so that the first user does not pay for them. Seconds
        per part; a part that cannot load (no spaCy model) is left to fail where it is used."""
        took: dict[str, float] = {}
        t = time.perf_counter()
        if english_if_installed() is not None:
            took["nlp"] = round(time.perf_counter() - t, 2)
        t = time.perf_counter()
        self.providers.embedder.encode(["warm up"])
        took["embedder"] = round(time.perf_counter() - t, 2)
        if self.exists() and len(self.library.documents) > 1:
            t = time.perf_counter()
            self.routing.router()
            took["router"] = round(time.perf_counter() - t, 2)
        return took

    def refresh(self) -> None:
        """Re-read the catalog (another process committed: `bookindex index`, a server's build
        process) and drop the opened versions it no longer names, so their leases go when the
        requests still using them finish and their folders with them."""
        self.library.refresh()
        self.cache.prune()

    def documents(self) -> list[DocumentInfo]:
        return [document_info(d) for d in self.library.documents]

    def document(self, doc: str) -> DocumentInfo:
        return document_info(self.library.get(doc))

    def index(self, path: str | Path, *, on_event: Events | None = None, progress: bool = False,
              replaces: tuple[str, ...] | list[str] = (), force: bool = False, **options: Any) -> IndexReport:
        """Index one file or MinerU folder (PDF, MinerU JSON, Markdown, text); see DocumentLibrary.add
        (`replaces`: ids of documents this one replaces when it commits; `force`: rebuild unchanged
        content too, a re-index)."""
        t0 = time.perf_counter()
        doc = self.library.add(path, on_event=on_event, progress=progress, replaces=replaces, force=force,
                               **options)
        for doc_id in (doc.doc_id, *replaces):
            self.cache.forget(doc_id)
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
        as it arrives (docs/distributed.md). Workers create their own models from the settings
        (`factory`), so the Engine's injected providers are not used by them."""
        runner = make_runner(workers, ray, ray_cpus, factory)
        items = index_batch(self.library, list(paths), runner, options=options, on_item=on_item,
                            on_progress=on_progress or (lambda e, i: None))
        for item in items:
            if item.doc is not None:
                self.cache.forget(item.doc.doc_id)
        return items

    def remove(self, doc: str) -> DocumentInfo:
        d = self.library.remove(doc)
        self.cache.forget(d.doc_id)
        return document_info(d)

    def refresh_identity(self, doc: str, *, write: bool = True) -> tuple[DocumentInfo, dict[str, Any], dict[str, Any],
                                                                         bool, int, bool, bool]:
        """A document's identity read again from its stored tree, its stored BM25 index and
        graph index written where missing or stale, its tree regrouped where today's build groups
        it otherwise (DocumentLibrary.refresh_identity): the document, the identity its manifest
        held, the one read now, whether the BM25 index was (or, without `write`, would be)
        written, how many tree nodes were (would be) regrouped, and whether the graph index and
        the tables' rows (`statements.json`) were (would be) written."""
        d, old, new = self.library.refresh_identity(doc, write=write)
        self.cache.forget(d.doc_id)
        return document_info(d), old, new, d.lexical_stale, d.tree_regrouped, d.graph_stale, d.statements_stale

    # -- reading a document ------------------------------------------------------------------
    def tree(self, doc: str) -> DocumentTree:
        """A document's section tree (read once per generation, then kept)."""
        return self.cache.browse(doc).tree

    def node(self, node_id: str) -> NodeView:
        """One node with where it sits: text, page, box, the titles of its ancestors."""
        return self.cache.node(node_id)

    def page_info(self, doc: str) -> PageInfo:
        """Page sizes and printed page labels of a document (for page viewers)."""
        return self.cache.page_info(doc)

    def pages(self, doc: str, pages: str) -> list[PageText]:
        """`get_pages(doc, "3-7")`: the text of a document's pages, block ids included."""
        return self._access.pages(doc, pages)

    def open(self, doc: str) -> IndexContext:
        """The opened document `doc` (id, file name or stem), ready for questions."""
        return self.cache.open(doc)

    def stats(self, doc: str | None = None) -> dict[str, Any]:
        """Tree and graph statistics, ER merges and the build's LLM ledger, per document and
        (without `doc`) for the whole library."""
        docs = [self.library.get(doc)] if doc else self.library.documents
        per = [doc_stats(d) for d in docs]
        if doc:
            return per[0]
        return {**library_stats(per), "documents_stats": per}

    # -- questions -----------------------------------------------------------------------------
    def ask(self, request: AskRequest | str, **fields: Any) -> Answer:
        """Answer a question: `ask("...")`, `ask("...", doc="manual.pdf", method="bm25")` or
        `ask(AskRequest(...))`. Without `doc`, the question is routed to the best document."""
        req = request if isinstance(request, AskRequest) else AskRequest(question=request, **fields)
        doc_id, route = self._target(req.doc, req.question, req.skills, req.navigator)
        try:
            answer = retrieval_api.ask(self.cache.open(doc_id), req.question, method=req.method, k=req.k)
        except IndexFormatError:
            # The generation this document was opened from was replaced and swept while it was
            # open: open the current one and ask once more; a truly broken index fails again.
            self.cache.forget(self.library.get(doc_id).doc_id)
            answer = retrieval_api.ask(self.cache.open(doc_id), req.question, method=req.method, k=req.k)
        return _with_route(answer, route)

    def ask_stream(self, request: AskRequest | str, **fields: Any) -> Iterator[AskEvent]:
        """`ask`, streamed: AskEvents "plan" (the Plan, or None for a baseline), "evidence"
        ([Evidence], before the model reads it), "token" (answer text as it is written), "reset"
        (the streamed text is withdrawn: a citation repair or the extractive answer follows), then
        "usage" (Usage, with `first_token_s`) and "answer" (the final Answer, whose text is the one
        to keep). The question runs in a worker thread; an error is raised from the iterator. A
        cache hit replays the answer as one "token"."""
        req = request if isinstance(request, AskRequest) else AskRequest(question=request, **fields)
        events: queue.Queue[tuple[str, Any]] = queue.Queue()

        def work() -> None:
            try:
                doc_id, route = self._target(req.doc, req.question, req.skills, req.navigator)
                answer = retrieval_api.ask(self.cache.open(doc_id), req.question, method=req.method, k=req.k,
                                           on_event=lambda kind, data: events.put((kind, data)))
                answer = _with_route(answer, route)
                events.put(("usage", answer.usage))
                events.put(("answer", answer))
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer's thread
                events.put(("error", exc))
            finally:
                events.put(("done", None))

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
        """Ranked evidence without an answer: bookindex's plan made and run without a model and
        cut before Map/Reduce (no LLM call; what `ask` ranks without a model), a baseline, or the
        bm25-pages calibration ranker; routed like `ask` when no document is named."""
        doc_id, _ = self._target(doc, question)
        return retrieval_api.search(self.cache.open(doc_id), question, method=method, k=k)

    def passage(self, doc: str, evidence: Evidence, context: bool = True) -> str:
        """The text a reader gets for one evidence item of `doc`: a chunk, a page, or for a node
        its passage (title path, the node and the adjacent blocks of its entry or paragraph;
        `operators.passages`). `context=False`: the node's own text only."""
        ctx = self.cache.open(doc)
        if not context or evidence.node_id not in ctx.tree.nodes or \
                "chunk_index" in evidence.scores or "page_unit" in evidence.scores:
            return evidence_text(ctx, evidence)
        return build_passages(ctx.tree, [evidence.node_id])[0].render()

    def plan(self, request: PlanRequest | str, **fields: Any) -> Plan:
        """Classify a question and build its operator plan; nothing is retrieved."""
        req = request if isinstance(request, PlanRequest) else PlanRequest(question=request, **fields)
        doc_id, _ = self._target(req.doc, req.question)
        return retrieval_api.plan(self.cache.open(doc_id), req.question)

    def run_plan(self, plan: Plan | dict[str, Any] | str, doc: str | None = None) -> Answer:
        """Execute a (possibly edited) plan: a Plan, its dict, or its JSON text."""
        p = plan if isinstance(plan, Plan) else (Plan.from_json(plan) if isinstance(plan, str) else Plan.from_dict(plan))
        doc_id, _ = self._target(doc, p.question)
        return retrieval_api.run_plan(self.cache.open(doc_id), p)

    def navigate_library(self, question: str, *, skills: str | Path, k: int = 10, search: bool = True,
                         beam: int | None = None, documents: int = 1) -> LibraryAnswer:
        """Walk a library hierarchy without an LLM: topics by beam, the reached documents ranked
        by the router, then (`search`) the best document's retrieval and the section and block it
        leads to."""
        return self.routing.navigate(question, skills=skills, k=k, search=search, beam=beam, documents=documents)

    def _target(self, doc: str | None, question: str, skills: str | None = None,
                navigator: str = "embedding") -> tuple[str, TraceRecord | None]:
        """The document a question goes to: the one named, else the routing decision, kept for
        the trace."""
        if doc is not None:
            return doc, None
        return self.routing.decide(question, skills, navigator)


def _with_route(answer: Answer, route: TraceRecord | None) -> Answer:
    """The routing decision goes first in the trace."""
    if route is not None:
        answer.trace.insert(0, route)
    return answer
