"""Which document of a library a question goes to, when the question names none.

Three ways, each recorded as the first step of the answer's trace (`Route`, with its signals):
- the library router (node, lexical and document signals fused; `LibraryRouter`), the default;
- a library hierarchy (`skills build LIB --documents`) walked by the embedding beam, then the router;
- the LLM navigator walking the hierarchy with the document tools; the document it cited first
  (else read first) is chosen.
The router and the pooled library-wide index are rebuilt only when the catalog changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.errors import InputError
from bookindex.core.model import Evidence
from bookindex.indexing.library import DocumentLibrary
from bookindex.indexing.stored_document import StoredDocument
from bookindex.operators.textscore import get_text_index
from bookindex.operators.textscore import query_vector as context_query_vector
from bookindex.retrieval.answer import TraceRecord
from bookindex.routing.pooled import PooledIndex
from bookindex.routing.router import LibraryRouter, RoutedDocument, decision_of, router_for
from bookindex.services.documents import DocumentCache
from bookindex.services.library_access import LibraryDocuments
from bookindex.services.providers import ProviderSet
from bookindex.services.skills import SkillsService
from bookindex.services.stored_router import stored_pooled, stored_router
from bookindex.services.views import RouteChoice
from bookindex.skills.navigator import libnav
from bookindex.skills.navigator.answer import SkillsAskRequest
from bookindex.skills.navigator.libnav import LibraryAnswer


class RoutingService:
    """Routes questions over the documents of one library."""

    def __init__(self, library: Callable[[], DocumentLibrary], providers: ProviderSet, documents: DocumentCache,
                 skills: SkillsService, access: LibraryDocuments) -> None:
        self._library = library
        self.providers = providers
        self.documents = documents
        self.skills = skills
        self.access = access

    # -- the library router and the pooled index ---------------------------------------------
    def router(self) -> LibraryRouter:
        """The document router of the library as it is now (rebuilt when the catalog changes)."""
        return self.documents.library_view(
            "router", lambda docs: router_for(docs, self.providers.embedder, done=StoredDocument.unload),
            stored=stored_router(self._library().root, lambda: self.providers.embedder))

    def rank(self, question: str) -> list[RoutedDocument]:
        """Documents ranked for a question by the library router: what `ask` without a document
        routes by."""
        return self.router().rank(question, self.query_vector(question))

    def search(self, question: str, k: int = 10) -> list[Evidence]:
        """Flat library-wide search: every block of every document in one BM25 index (one IDF)
        and one vector matrix, fused by rank; the top k may come from several documents."""
        pooled = self.documents.library_view(
            "pooled", lambda docs: PooledIndex([d.tree for d in docs], [d.node_vectors() for d in docs]),
            stored=stored_pooled(self._library().root, lambda: self.providers.embedder))
        hits = pooled.search(question, self.query_vector(question), k=k)
        # only the documents with hits are read, and from the cache: not every tree per search
        trees = {d: self.documents.browse(d).tree for d in dict.fromkeys(h.doc_id for h in hits)}
        return [Evidence.from_node(trees[h.doc_id], trees[h.doc_id].nodes[h.node_id], scores={"pooled": h.score},
                                   rank=i) for i, h in enumerate(hits, 1)]

    def best_node(self, question: str) -> list[RouteChoice]:
        """Documents ranked by their best node's cosine (else BM25): the simple baseline the
        router is measured against."""
        docs = self._nonempty()
        if len(docs) == 1:
            return [RouteChoice(doc_id=docs[0].doc_id, name=docs[0].name, score=1.0)]
        scored: list[tuple[float, StoredDocument]] = []
        for d in docs:
            ctx = self.documents.open(d.doc_id)
            idx = get_text_index(ctx)
            dense = idx.dense(context_query_vector(ctx, question))
            score = float(dense.max()) if dense is not None and dense.size else float(idx.lexical(question).max(initial=0.0))
            scored.append((score, d))
        scored.sort(key=lambda t: (-t[0], t[1].doc_id))
        return [RouteChoice(doc_id=d.doc_id, name=d.name, score=round(s, 4)) for s, d in scored]

    # -- through a library hierarchy ----------------------------------------------------------
    def navigate(self, question: str, *, skills: str | Path, k: int = 10, search: bool = True,
                 beam: int | None = None, documents: int = 1) -> LibraryAnswer:
        """Walk a library hierarchy: topics by beam, the reached documents ranked by the router,
        then (`search`) the best document's retrieval and the section and block it leads to."""
        opened = self.skills.open(skills)
        hier = self.skills.hierarchy(opened)
        return libnav.navigate(opened, hier, self.router(), self.providers.embedder, self.access if search else None,
                               question, k=k, beam=beam, search_docs=documents)

    # -- the decision `ask` records ----------------------------------------------------------
    def decide(self, question: str, skills: str | None = None, navigator: str = "embedding") -> tuple[str, TraceRecord | None]:
        """The document a question without one goes to, and the `Route` trace record (None when
        the library holds one document)."""
        t0 = time.perf_counter()
        ids = self._ids()  # the catalog only: no document opened to count them
        if len(ids) == 1:
            return ids[0], None
        extra: dict[str, Any] = {}
        if skills is not None and navigator == "llm":
            decision, steps, extra = self._by_agent(question, skills)
        elif skills is not None:
            nav = self.navigate(question, skills=skills, search=False)
            decision, steps = nav.decision, [st.model_dump(exclude_none=True) for st in nav.steps]
        else:
            decision, steps = decision_of(self.rank(question), "library"), []
        rec = TraceRecord(op="Route", kind=str(decision["route"]), ms=round((time.perf_counter() - t0) * 1000, 2),
                          outputs=decision["ranking"], chosen=decision["chosen"], navigation=steps or None,
                          decided_by=decision.get("decided_by"), **extra)
        return str(decision["chosen"]), rec

    def _by_agent(self, question: str, skills: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
        """The LLM navigator walks the hierarchy with the document tools; the document it cited
        first (else read first) is chosen. Its own answer and cited blocks go in the trace; the
        answer returned is the chosen document's retrieval, whose citations are checked against
        one document's evidence. Nothing read: the library router decides, with a note."""
        ans = self.skills.ask(SkillsAskRequest(folder=skills, question=question, navigator="llm"))
        order = ans.cited + [d.doc_id for d in ans.documents if d.doc_id not in ans.cited]
        notes = list(ans.notes)
        if order:
            ranking: list[dict[str, Any]] = [{"doc_id": d, "cited": d in ans.cited} for d in order]
            chosen = order[0]
        else:
            notes.append("the LLM navigator read no document: routed by the library router")
            fallback = decision_of(self.rank(question), "library")
            ranking, chosen = list(fallback["ranking"]), str(fallback["chosen"])  # type: ignore[call-overload]
        extra = {"agent_answer": ans.answer, "agent_stopped": ans.stopped,
                 "cited_nodes": [c.model_dump() for c in ans.cited_nodes], "notes": notes or None,
                 "llm": {"calls": ans.usage.llm_calls, "prompt_tokens": ans.usage.prompt_tokens,
                         "completion_tokens": ans.usage.completion_tokens}}
        return ({"route": "hierarchy-llm", "chosen": chosen, "ranking": ranking},
                [st.model_dump(exclude_none=True) for st in ans.steps], extra)

    def _ids(self) -> list[str]:
        """The library's document ids (from its catalog); InputError when it holds none."""
        library = self._library()
        ids = library.catalog.ids()
        if not ids:
            raise InputError(f"{library.root}: the library is empty; add a document with `bookindex index`")
        return ids

    def _nonempty(self) -> list[StoredDocument]:
        self._ids()
        return self._library().documents

    def query_vector(self, question: str) -> np.ndarray:
        """The question's unit-length embedding, as the router compares it."""
        vec = self.providers.query_vectors.vectors([question])[0]
        n = float(np.linalg.norm(vec))
        return vec / n if n > 0 else vec
