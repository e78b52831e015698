"""The rows of a benchmark table: a retrieval method (or a bookindex ablation) and the Engine it
asks through. Every benchmark has the same rows, so they live apart from any one benchmark."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

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


@dataclass
class Row:
    """One table row: a method, with the settings it runs under (ablations differ here), and
    the Engine that answers for it (bound by `bind_rows`: one per row, providers shared)."""

    name: str
    method: str
    settings: Settings
    engine: Engine = field(init=False, repr=False)


def make_rows(methods: Sequence[str], ablations: Sequence[str], settings: Settings) -> list[Row]:
    """One row per method, then one bookindex row per ablation; InputError names a bad one."""
    rows: list[Row] = []
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
        row.engine = Engine(indexer.root, row.settings, llm=llm, embedder=indexer.embedder,
                            reranker=indexer.reranker, vlm=indexer.vlm)


def retrieve(row: Row, doc: str | None, question: str, k: int) -> tuple[list[Evidence], str | None, str | None]:
    """Ranked evidence for one question, and for bookindex its own answer text and how that
    answer's citations were verified (`Answer.citation_check`).

    `doc` None asks the whole library: the Engine routes the question to its best document."""
    if row.method == "bookindex":
        ans = row.engine.ask(question, doc=doc, method="bookindex")
        return list(ans.evidence), (ans.answer or None), ans.citation_check
    return row.engine.search(question, doc=doc, method=row.method, k=k), None, None
