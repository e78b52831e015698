"""The seams between layers, as structural types.

Every consumer above the providers codes against these Protocols, never against a concrete class,
so a test double, an OpenAI-compatible endpoint, the in-process llama.cpp model or a future backend
(a remote vector store, a cross-encoder service) plugs in without touching the operators. Each
protocol has a contract test suite in `tests/contracts/` that every implementation passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, overload, runtime_checkable

import numpy as np

from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import DocumentTree

Messages = list[dict[str, Any]]
T = TypeVar("T")


@runtime_checkable
class UsageLedger(Protocol):
    """Counts LLM calls, cache hits and tokens per stage (classification, extraction, Map, ...)."""

    def record(self, stage: str, **delta: float) -> None: ...

    def snapshot(self) -> dict[str, Any]: ...


@runtime_checkable
class LLM(Protocol):
    """The one client every LLM call goes through: cached, retried, schema-validated, counted.

    `complete` returns the reply text, or with `schema` (a pydantic model or any type) a
    validated value; `map` runs many `complete` requests concurrently, results in input order;
    `judge` returns P(yes) of a yes/no question. `on_text` receives the reply's text as it is
    generated (with a schema: the text of its first string field), one chunk on a cache hit. `ledger` is read-only here (a property), so a
    client may hold any UsageLedger implementation (a plain attribute would have to be declared
    exactly `UsageLedger`).
    """

    @property
    def ledger(self) -> UsageLedger: ...

    @property
    def available(self) -> bool: ...

    @property
    def model(self) -> str: ...

    # The reply text without a schema; an instance of a class schema (a pydantic model); any other
    # type form (list[int], a Union, ...) validates too but is not tracked by the type checker.
    # `from_text` reads a reply that does not validate as prose (None: it declines) before the
    # repair round: small models often answer a JSON request in plain words.
    @overload
    def complete(self, messages: Messages | str, schema: None = None, stage: str = "default", *,
                 temperature: float | None = None, max_tokens: int | None = None,
                 cache: bool = True, on_text: Callable[[str], None] | None = None,
                 from_text: Callable[[str], Any] | None = None) -> str: ...

    @overload
    def complete(self, messages: Messages | str, schema: type[T], stage: str = "default", *,
                 temperature: float | None = None, max_tokens: int | None = None,
                 cache: bool = True, on_text: Callable[[str], None] | None = None,
                 from_text: Callable[[str], Any] | None = None) -> T: ...

    @overload
    def complete(self, messages: Messages | str, schema: object, stage: str = "default", *,
                 temperature: float | None = None, max_tokens: int | None = None,
                 cache: bool = True, on_text: Callable[[str], None] | None = None,
                 from_text: Callable[[str], Any] | None = None) -> Any: ...

    def map(self, requests: Sequence[dict[str, Any]], *, max_concurrency: int | None = None,
            progress: bool = False, desc: str = "LLM", return_exceptions: bool = False) -> list[Any]: ...

    def judge(self, messages: Messages | str, stage: str = "judge", cache: bool = True) -> float: ...


@runtime_checkable
class Embedder(Protocol):
    """Text → L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray: ...


@runtime_checkable
class Reranker(Protocol):
    """Relevance of each passage to a query; higher is better, one float per passage."""

    def score(self, query: str, passages: list[str]) -> list[float]: ...


@runtime_checkable
class Providers(Protocol):
    """Where a builder gets its models: the Engine owns them and hands itself to the library."""

    @property
    def llm(self) -> LLM: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def reranker(self) -> Reranker: ...


@runtime_checkable
class LexicalIndex(Protocol):
    """BM25 over a fixed list of passages (`ids`, row-aligned): one score per passage."""

    @property
    def ids(self) -> list[str]: ...

    def scores(self, query: str) -> np.ndarray: ...


@runtime_checkable
class DocumentIndex(Protocol):
    """One indexed document, read-only: the BookIndex B = (T, G, M) and its derived views.

    `node_vectors`/`entity_vectors` are row-aligned (ids, matrix) pairs, empty when the index has
    none; `lexical_index` (the leaves) and `table_row_index` (the tables' rows, ids the tables' node
ids; None without tables) are read or built once per opened index and shared by every question.
    """

    @property
    def doc_id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def tree(self) -> DocumentTree: ...

    @property
    def graph(self) -> KnowledgeGraph: ...

    @property
    def manifest(self) -> dict[str, Any]: ...

    @property
    def folder(self) -> Path | None: ...

    @property
    def page_labels(self) -> list[str] | None: ...

    def node_vectors(self) -> tuple[list[str], np.ndarray | None]: ...

    def entity_vectors(self) -> tuple[list[str], np.ndarray | None]: ...

    def lexical_index(self) -> LexicalIndex: ...

    def table_row_index(self) -> LexicalIndex | None: ...

    def entity_adjacency(self) -> tuple[list[str], dict[str, int], Any] | None:
        """The graph's weighted entity adjacency (entity ids, their rows, a CSR matrix) when the
        index stores it; None when it is to be built from the relations."""
        ...

    def gt_links(self) -> tuple[list[str], Any, Any] | None:
        """The GT-links of the graph's entities in their order (operators.graph_matrices.GTLinks) when
        the index stores them; None when they are to be read from the entities."""
        ...


@runtime_checkable
class LibraryStore(Protocol):
    """A folder of indexed documents: add (build and commit atomically), get, remove, list.

    A document is identified by its id, file name, stem or source path; each one the store hands
    out is a `DocumentIndex` read lazily from disk."""

    @property
    def root(self) -> Path: ...

    @property
    def documents(self) -> Sequence[DocumentIndex]: ...

    def add(self, path: str | Path, **options: Any) -> DocumentIndex: ...

    def get(self, doc: str) -> DocumentIndex: ...

    def remove(self, doc: str) -> DocumentIndex: ...
