"""Rerankers: `score(query, passages) -> list[float]`, higher is more relevant.

Implementations: embedding cosine (default, no extra model), a sentence-transformers CrossEncoder
from a local path, an OpenAI-compatible / vLLM `/rerank` endpoint (how Qwen3-Reranker is served),
and the configured LLM as a yes/no judge (P(yes) from llama.cpp log-probabilities).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.config import RerankerSettings, Settings
from bookindex.core.errors import ConfigError, LLMRequestError
from bookindex.core.protocols import LLM, Embedder, Reranker
from bookindex.providers.embedding import get_embedder
from bookindex.providers.llm import get_llm
from bookindex.providers.llm.providers import is_loopback_url

__all__ = ["CrossEncoderReranker", "EmbeddingReranker", "EndpointReranker", "LLMJudgeReranker",
           "Reranker", "get_reranker"]

JUDGE_PROMPT = ("Judge whether the passage helps answer the question. Answer only \"yes\" or "
                "\"no\".\n\nQuestion: {query}\n\nPassage: {passage}")


class EmbeddingReranker:
    """Cosine similarity of query and passage embeddings."""

    name = "embedding"

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        vecs = self.embedder.encode([query] + list(passages))
        return [float(x) for x in vecs[1:] @ vecs[0]]


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder loaded from a user-supplied local directory."""

    name = "cross-encoder"

    def __init__(self, model_path: str, batch_size: int = 32) -> None:
        path = Path(model_path).expanduser() if model_path else None
        if path is None or not path.exists():
            raise ConfigError(f"reranker.model: cross-encoder directory not found: "
                              f"{model_path or '(empty)'}; give a local model path "
                              "(bookindex never downloads models)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # deferred: sentence-transformers imports torch (seconds)
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(str(path), device="cpu", local_files_only=True)
        self.batch_size = batch_size

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        scores = self.model.predict([(query, p) for p in passages], batch_size=self.batch_size,
                                    show_progress_bar=False)
        return [float(s) for s in np.asarray(scores).reshape(len(passages), -1)[:, -1]]


class EndpointReranker:
    """POST {base_url}/rerank {model, query, documents} → results[{index, relevance_score}]
    (vLLM, Jina, Cohere-style and llama.cpp server with --reranking)."""

    name = "endpoint"

    def __init__(self, cfg: RerankerSettings, timeout: float = 60.0) -> None:
        import httpx  # deferred: ~0.2 s to import, and only this reranker needs it

        if not cfg.base_url:
            raise ConfigError("reranker.base_url is empty; set it to the server that serves /rerank")
        key = os.environ.get(cfg.api_key_env or "", "")
        if not key and not is_loopback_url(cfg.base_url):
            raise ConfigError(f"reranker.api_key_env: environment variable "
                              f"{cfg.api_key_env or '(empty)'} is not set; export the API key for "
                              f"{cfg.base_url}")
        self.cfg = cfg
        self.url = cfg.base_url.rstrip("/") + "/rerank"
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self._httpx = httpx

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        body: dict[str, Any] = {"query": query, "documents": list(passages)}
        if self.cfg.model:
            body["model"] = self.cfg.model
        try:
            resp = self._client.post(self.url, json=body)
            resp.raise_for_status()
            data = resp.json()
        except self._httpx.HTTPError as exc:
            raise LLMRequestError(f"rerank request to {self.url} failed: {exc}") from None
        results = data.get("results") or data.get("data") or []
        scores = [float("-inf")] * len(passages)
        for item in results:
            value = item.get("relevance_score", item.get("score"))
            if value is not None and 0 <= int(item["index"]) < len(passages):
                scores[int(item["index"])] = float(value)
        if any(s == float("-inf") for s in scores):
            raise LLMRequestError(f"rerank response from {self.url} did not score every passage")
        return scores


class LLMJudgeReranker:
    """The LLM as a pointwise yes/no relevance judge; score = P(yes)."""

    name = "llm"

    def __init__(self, llm: LLM, stage: str = "rerank", max_chars: int = 2000) -> None:
        if not getattr(llm, "available", False):
            raise ConfigError("reranker.provider = llm needs a configured LLM (llm.provider)")
        self.llm = llm
        self.stage = stage
        self.max_chars = max_chars

    def score(self, query: str, passages: list[str]) -> list[float]:
        return [self.llm.judge(JUDGE_PROMPT.format(query=query, passage=p[:self.max_chars]),
                               stage=self.stage) for p in passages]


def get_reranker(settings: Settings | None = None, *, embedder: Embedder | None = None,
                 llm: LLM | None = None) -> Reranker:
    """The configured reranker; `embedder` / `llm` are reused when given."""
    cfg = settings.reranker if settings is not None else RerankerSettings()
    if cfg.provider == "embedding":
        if embedder is None:
            embedder = get_embedder(settings)
        return EmbeddingReranker(embedder)
    if cfg.provider == "cross-encoder":
        return CrossEncoderReranker(cfg.model)
    if cfg.provider == "endpoint":
        return EndpointReranker(cfg)
    if cfg.provider == "llm":
        if llm is None:
            if settings is None:
                raise ConfigError("reranker.provider = llm needs settings with an llm section")
            llm = get_llm(settings)
        return LLMJudgeReranker(llm)
    raise ConfigError(f"reranker.provider: unknown provider {cfg.provider!r}")
