"""The models a library's builds and queries use, created on first use and then shared.

Given providers (tests and benchmark runs inject theirs) are kept as they are. The set satisfies
`bookindex.core.protocols.Providers`, so a library build takes its models from it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from bookindex.core.config import Settings
from bookindex.core.protocols import LLM, Embedder, Reranker
from bookindex.providers.embedding import get_corpus_embedder, get_embedder
from bookindex.providers.llm import get_llm
from bookindex.providers.query_vectors import QueryVectors
from bookindex.providers.reranker import get_reranker


class ProviderSet:
    """LLM, VLM, embedder and reranker of one Engine, each created once from the settings."""

    def __init__(self, settings: Callable[[], Settings], *, llm: LLM | None = None, embedder: Embedder | None = None,
                 reranker: Reranker | None = None, vlm: LLM | None = None) -> None:
        self._settings = settings
        self._llm, self._embedder, self._reranker, self._vlm = llm, embedder, reranker, vlm
        self._query_vectors: QueryVectors | None = None
        self._lock = threading.RLock()

    @property
    def settings(self) -> Settings:
        return self._settings()

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
    def query_vectors(self) -> QueryVectors:
        """Question vectors by text from `embedder`, shared by the router and every opened
        document: a question routed and then searched is embedded once."""
        with self._lock:
            if self._query_vectors is None:
                self._query_vectors = QueryVectors(self.embedder)
            return self._query_vectors

    @property
    def reranker(self) -> Reranker:
        with self._lock:
            if self._reranker is None:
                self._reranker = get_reranker(self.settings, embedder=self.embedder)
            return self._reranker

    def corpus_embedder(self, int8: bool | None = None, tokens: int | None = None) -> Embedder:
        """The embedder for a skill corpus's documents (`get_corpus_embedder`: the query
        embedder's model, int8 and truncated, when it is the ONNX one; else the embedder itself)."""
        return get_corpus_embedder(self.embedder, self.settings, int8=int8, tokens=tokens)
