"""Python API for asking questions of indexed documents.

    from bookindex.api import open_library
    lib = open_library("my-library")
    doc = lib.get("handbook.pdf")
    answer = doc.ask("What is the default line width?")     # -> retrieval.Answer
    plan = doc.plan("How many tables are in pages 3-10?")   # -> retrieval.Plan (editable data)
    answer = doc.run(plan)
    answer = lib.ask("Which terminal writes PDF?")          # routes to the best-matching document

`Document` and `Library` wrap the storage objects of `bookindex.library` (everything else on them
is passed through), so storage stays independent of retrieval.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


from bookindex.errors import InputError


class _Bound:
    """A storage object bound to the settings and LLM that retrieval runs with; every other
    attribute is the storage object's own."""

    def __init__(self, stored: Any, settings: Any = None, llm: Any = None) -> None:
        self.stored = stored
        self._settings = settings
        self._llm = llm

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stored, name)


class Document(_Bound):
    """A stored document with `ask`, `plan` and `run`."""

    def ask(self, question: str, method: str = "bookindex", k: int | None = None) -> Any:
        from retrieval import ask
        return ask(self.stored, question, self._settings, self._llm, method=method, k=k)

    def plan(self, question: str) -> Any:
        from retrieval import plan
        return plan(self.stored, question, self._settings, self._llm)

    def run(self, plan: Any) -> Any:
        from retrieval import run_plan
        return run_plan(self.stored, plan, self._settings, self._llm)

    def __repr__(self) -> str:
        return f"Document({self.stored!r})"


class Library(_Bound):
    """A library with `ask` routing across its documents when none is named."""

    @property
    def documents(self) -> list[Document]:
        return [Document(d, self._settings, self._llm) for d in self.stored.documents]

    def get(self, doc: str) -> Document:
        return Document(self.stored.get(doc), self._settings, self._llm)

    def route(self, question: str) -> tuple[Document, list[dict[str, Any]]]:
        """The document whose best node matches the question best (max cosine, else max BM25)."""
        docs = self.documents
        if not docs:
            raise InputError(f"{self.stored.root}: the library is empty; add a document with `bookindex index`")
        if len(docs) == 1:
            return docs[0], [{"doc_id": docs[0].doc_id, "name": docs[0].name, "score": 1.0}]
        from operators.textscore import get_text_index, query_vector
        from retrieval.api import context_for

        scored = []
        for d in docs:
            ctx = context_for(d.stored, self._settings, self._llm)
            idx = get_text_index(ctx)
            dense = idx.dense(query_vector(ctx, question))
            score = float(dense.max()) if dense is not None and dense.size else float(idx.lexical(question).max(initial=0.0))
            scored.append((score, d))
        scored.sort(key=lambda t: (-t[0], t[1].doc_id))
        return scored[0][1], [{"doc_id": d.doc_id, "name": d.name, "score": round(s, 4)} for s, d in scored]

    def ask(self, question: str, doc: str | None = None, method: str = "bookindex", k: int | None = None) -> Any:
        if doc is not None:
            return self.get(doc).ask(question, method=method, k=k)
        if not isinstance(question, str) or not question.strip():
            raise InputError("the question is empty")
        t0 = time.perf_counter()
        target, ranking = self.route(question)
        ans = target.ask(question, method=method, k=k)
        ans.trace.insert(0, {"op": "Route", "kind": "library", "ms": round((time.perf_counter() - t0) * 1000, 2),
                             "outputs": ranking})
        return ans


def open_library(directory: str | Path, settings: Any = None, llm: Any = None) -> Library:
    from bookindex.library import Library as StoredLibrary

    path = Path(directory).expanduser()
    if not path.is_dir():
        raise InputError(f"{path}: no such library folder")
    return Library(StoredLibrary.open(path, settings=settings, llm=llm), settings, llm)


__all__ = ["Document", "Library", "open_library"]
