"""Every `LLM` passes the LLM contract: the shared FakeLLM, LLMClient over a scripted in-memory
provider, and LLMClient over a real llama.cpp server with the small Qwen model."""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeLLM, LLMCall, ScriptedProvider, UnscriptedCall

from bookindex.core.config import LLMSettings, Settings, load_settings
from bookindex.core.errors import LLMRequestError
from bookindex.providers.llm import DiskCache, LLMClient, TransientError, get_llm
from bookindex.providers.llm.providers import NoneProvider
from contracts.llm import LLMContract, ScriptedLLMContract


class TestFakeLLM(ScriptedLLMContract):
    @pytest.fixture
    def scripted_llm(self) -> Callable[..., FakeLLM]:
        def make(script: Sequence[Any] = (), respond: Callable[[str], Any] | None = None) -> FakeLLM:
            queue = list(script)

            def reply(call: LLMCall) -> Any:
                if queue:
                    return queue.pop(0)
                if respond is not None:
                    return respond(call.prompt)
                raise UnscriptedCall(f"no reply left for call {call.index}")

            return FakeLLM(reply, cache=True)

        return make

    @pytest.fixture
    def failing_llm(self) -> FakeLLM:
        return FakeLLM(default=LLMRequestError("stage 'x': llm request failed: connection refused"))

    @pytest.fixture
    def unavailable_llm(self) -> FakeLLM:
        return FakeLLM(available=False)


def _client(provider: Any, cache: DiskCache | None = None) -> LLMClient:
    settings = LLMSettings(provider="openai", model="scripted-1", max_retries=1)
    return LLMClient(provider, settings, cache=cache, sleep=lambda _s: None)


class TestLLMClientOverScriptedProvider(ScriptedLLMContract):
    @pytest.fixture
    def scripted_llm(self, tmp_path: Path) -> Callable[..., LLMClient]:
        n = count()

        def make(script: Sequence[Any] = (), respond: Callable[[str], Any] | None = None) -> LLMClient:
            cache = DiskCache(tmp_path / f"llm-{next(n)}.sqlite")
            return _client(ScriptedProvider(script, respond), cache)

        return make

    @pytest.fixture
    def failing_llm(self) -> LLMClient:
        return _client(ScriptedProvider(respond=lambda _p: TransientError("connection refused")))

    @pytest.fixture
    def unavailable_llm(self) -> LLMClient:
        return LLMClient(NoneProvider(), LLMSettings())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.realmodel
class TestLLMClientOverLlamaServer(LLMContract):
    """What a real (small) model guarantees: types, schema or LLMOutputError, plumbing."""

    @pytest.fixture
    def llm(self, llama_settings: Settings) -> LLMClient:
        return get_llm(llama_settings.with_overrides({"llm.max_tokens": 64}))

    @pytest.fixture
    def failing_llm(self, tmp_path: Path) -> LLMClient:
        return get_llm(load_settings(env={}, overrides={
            "llm.provider": "openai", "llm.base_url": f"http://127.0.0.1:{_closed_port()}/v1",
            "llm.model": "qwen2.5-coder-0.5b", "llm.max_retries": 0, "llm.timeout": 5,
            "cache.path": str(tmp_path / "cache")}))

    @pytest.fixture
    def unavailable_llm(self, tmp_path: Path) -> LLMClient:
        return get_llm(load_settings(env={}, overrides={"llm.provider": "none",
                                                        "cache.path": str(tmp_path / "cache")}))
