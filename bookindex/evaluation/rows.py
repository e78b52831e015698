"""The rows of a benchmark table: a retrieval method (or a bookindex ablation) and the Engine it
asks through. Every benchmark has the same rows, so they live apart from any one benchmark."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.core.model import Evidence
from bookindex.core.protocols import LLM
from bookindex.engine import Engine

# --ablation name -> the retrieval setting it switches off for a bookindex row
ABLATIONS = {
    "no_planning": "planning",
    "no_selector": "selector",
    "no_graph": "graph_reasoning",
    "no_text": "text_reasoning",
}
ALL_METHODS = ("bm25", "dense", "hybrid", "chunks", "tree", "bookindex", "bm25-pages")
# methods over a compiled skill folder (a corpus, not a library): Engine.skills_search
CORPUS_METHODS = ("bm25", "dense", "hybrid", "raptor", "skills-embedding", "skills-llm", "skills-llm-plain")


@dataclass
class Row:
    """One table row: a method, with the settings it runs under (ablations differ here), and
    the Engine that answers for it (bound by `bind_rows`: one per row, providers shared)."""

    name: str
    method: str
    settings: Settings
    corpus: str | None = None  # a skill folder: the row searches it (CORPUS_METHODS), not the library
    beam: int | None = None    # skills-embedding's beam width (None: auto)
    engine: Engine = field(init=False, repr=False)


def make_rows(methods: Sequence[str], ablations: Sequence[str], settings: Settings,
              corpus: str | None = None) -> list[Row]:
    """One row per method, then one bookindex row per ablation; InputError names a bad one.
    With `corpus` (a skill folder) the rows are corpus methods searching it."""
    rows: list[Row] = []
    if corpus is not None:
        for m in methods:
            if m not in CORPUS_METHODS:
                raise InputError(f"--method: unknown corpus method {m!r}; choose from {', '.join(CORPUS_METHODS)}")
            rows.append(Row(m, m, settings, corpus=corpus))
        return rows
    for m in methods:
        if m not in ALL_METHODS:
            raise InputError(f"--method: unknown method {m!r}; choose from {', '.join(ALL_METHODS)}")
        rows.append(Row(m, m, settings))
    for a in ablations:
        if a not in ABLATIONS:
            raise InputError(f"--ablation: unknown ablation {a!r}; choose from {', '.join(ABLATIONS)}")
        rows.append(Row(f"bookindex {a}", "bookindex", settings.with_overrides({f"retrieval.{ABLATIONS[a]}": False})))
    return rows


def bind_rows(rows: Sequence[Row], indexer: Engine, llm: LLM) -> None:
    """Give each row an Engine over the indexer's library with the row's settings, the
    indexer's embedder and reranker, and the answering LLM (one of each for the whole run)."""
    for row in rows:
        p = indexer.providers
        row.engine = Engine(indexer.root, row.settings, llm=llm, embedder=p.embedder,
                            reranker=p.reranker, vlm=p.vlm)


def retrieve_corpus(row: Row, question: str, k: int) -> tuple[list[Evidence], str | None, dict[str, Any]]:
    """A corpus row's ranked documents as evidence (snippet = the document's text, which the
    reader gets), the navigator's answer for skills-llm, and the navigation cost fields."""
    assert row.corpus is not None
    ans = row.engine.skills.search(row.corpus, question, row.method, k=k, beam=row.beam)
    docs = row.engine.skills.open(row.corpus).documents
    evidence = [Evidence(doc_id=d.doc_id, node_id=d.doc_id, type="document", page_idx=0, rank=i + 1,
                         snippet=f"{d.title}\n{docs[d.doc_id].text}" if d.doc_id in docs else d.title,
                         scores={"score": d.score}) for i, d in enumerate(ans.documents)]
    u = ans.usage
    fields: dict[str, Any] = {"fetched": u.documents_fetched, "listed": u.documents_listed, "trimmed": u.trimmed,
                              "read_docs": [d.doc_id for d in ans.documents if d.via == "read"],
                              "nav_tokens": u.navigation_tokens,
                              "doc_tokens": u.document_tokens, "candidates": u.candidates, "rounds": u.rounds, "llm_calls": u.llm_calls,
                              "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
                              "stopped": ans.stopped, "cited": ans.cited, "notes": ans.notes,
                              "steps": [s.model_dump() for s in ans.steps]}
    return evidence, (ans.answer or None) if row.method.startswith("skills-llm") else None, fields


def retrieve(row: Row, doc: str | None, question: str, k: int) -> tuple[list[Evidence], str | None, str | None]:
    """Ranked evidence for one question, and for bookindex its own answer text and how that
    answer's citations were verified (`Answer.citation_check`).

    `doc` None asks the whole library: the Engine routes the question to its best document."""
    if row.method == "bookindex":
        ans = row.engine.ask(question, doc=doc, method="bookindex")
        return list(ans.evidence), (ans.answer or None), ans.citation_check
    return row.engine.search(question, doc=doc, method=row.method, k=k), None, None
