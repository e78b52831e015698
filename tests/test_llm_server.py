"""Integration against a real llama.cpp OpenAI-compatible server (Qwen2.5-Coder-0.5B GGUF) on
127.0.0.1, with a small fault-injecting HTTP proxy in front of it for the retry policy."""

from __future__ import annotations

import http.server
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bookindex.core.config import Settings, load_settings
from bookindex.core.errors import LLMRequestError
from bookindex.providers.llm import get_llm

pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(600)]

MODEL = "qwen2.5-coder-0.5b"
PROMPT = "Reply with the single word: ready"


class CityFact(BaseModel):
    city: str
    country: str


def settings_for(base_url: str, cache: Path | None, **llm: Any) -> Settings:
    overrides: dict[str, Any] = {"llm.provider": "openai", "llm.base_url": base_url,
                                 "llm.model": MODEL, "llm.max_tokens": 64,
                                 "llm.retry_base_delay": 0.05, "llm.retry_max_delay": 0.2}
    overrides.update({f"llm.{k}": v for k, v in llm.items()})
    if cache is None:
        overrides["cache.enabled"] = False
    else:
        overrides["cache.path"] = str(cache)
    return load_settings(overrides=overrides)


class FaultProxy:
    """Forwards to `upstream`; the i-th request follows script[i] ("500", "stall", "pass"),
    then `default`. Records every request it saw."""

    def __init__(self, upstream: str, script: list[str], default: str = "pass",
                 stall_seconds: float = 6.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.script = list(script)
        self.default = default
        self.stall_seconds = stall_seconds
        self.seen: list[str] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._handle(None)

            def do_POST(self) -> None:
                self._handle(self.rfile.read(int(self.headers.get("Content-Length", 0))))

            def _handle(self, body: bytes | None) -> None:
                with lock:
                    action = proxy.script.pop(0) if proxy.script else proxy.default
                    proxy.seen.append(action)
                if action == "500":
                    self._send(500, b'{"error": {"message": "injected failure"}}')
                    return
                if action == "stall":
                    time.sleep(proxy.stall_seconds)  # past the client's timeout, then hang up
                    self.close_connection = True
                    return
                target = proxy.upstream + self.path.removeprefix("/v1")
                req = urllib.request.Request(target, data=body, method=self.command,
                                             headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=300) as resp:
                        self._send(resp.status, resp.read())
                except urllib.error.HTTPError as exc:
                    self._send(exc.code, exc.read())

            def _send(self, status: int, payload: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        lock = threading.Lock()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy_factory(llama_server: str) -> Iterator[Any]:
    proxies: list[FaultProxy] = []

    def make(script: list[str], **kw: Any) -> FaultProxy:
        proxies.append(FaultProxy(llama_server, script, **kw))
        return proxies[-1]

    yield make
    for p in proxies:
        p.close()


@pytest.fixture(scope="module")
def warm(llama_server: str) -> str:
    """One uncached call so the server has PROMPT's prefix evaluated (later calls are quick)."""
    client = get_llm(settings_for(llama_server, None, max_tokens=4))
    client.complete(PROMPT, max_tokens=4)
    return llama_server


def test_schema_call_returns_valid_object(llama_settings: Settings) -> None:
    client = get_llm(llama_settings)
    fact = client.complete("Paris is the capital of France. Extract the city and its country.",
                           schema=CityFact, stage="extract")
    assert isinstance(fact, CityFact)
    assert "paris" in fact.city.lower() and "france" in fact.country.lower()
    usage = client.ledger.snapshot()["stages"]["extract"]
    assert usage["calls"] >= 1 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0


def test_twenty_requests_twice_hit_the_cache(llama_server: str, tmp_path: Path) -> None:
    requests = [{"messages": f"Write the number {i} in words. Reply with the words only.",
                 "stage": "numbers", "max_tokens": 8} for i in range(20)]
    first = get_llm(settings_for(llama_server, tmp_path))
    out1 = first.map(requests)
    snap1 = first.ledger.snapshot()["stages"]["numbers"]
    assert snap1["calls"] == 20 and snap1["cache_hits"] == 0
    assert all(isinstance(t, str) and t.strip() for t in out1)

    second = get_llm(settings_for(llama_server, tmp_path))
    out2 = second.map(requests)
    snap2 = second.ledger.snapshot()["stages"]["numbers"]
    assert snap2["calls"] == 0 and snap2["cache_hits"] == 20
    assert out2 == out1


def test_retry_survives_two_500s(warm: str, proxy_factory: Any) -> None:
    proxy = proxy_factory(["500", "500"])
    client = get_llm(settings_for(proxy.base_url, None, max_retries=3, max_tokens=4))
    assert client.complete(PROMPT, stage="faults").strip()
    assert proxy.seen == ["500", "500", "pass"]
    usage = client.ledger.stage("faults")
    assert usage.calls == 1 and usage.retries == 2


def test_retry_survives_a_stalled_response(warm: str, proxy_factory: Any) -> None:
    proxy = proxy_factory(["stall"], stall_seconds=8.0)
    client = get_llm(settings_for(proxy.base_url, None, max_retries=2, timeout=4.0, max_tokens=4))
    start = time.monotonic()
    assert client.complete(PROMPT, stage="faults").strip()
    assert proxy.seen == ["stall", "pass"]
    assert time.monotonic() - start >= 4.0  # it really waited for the timeout
    assert client.ledger.stage("faults").retries == 1


def test_permanent_failure_raises_within_configured_attempts(llama_server: str,
                                                             proxy_factory: Any) -> None:
    proxy = proxy_factory([], default="500")
    client = get_llm(settings_for(proxy.base_url, None, max_retries=3))
    with pytest.raises(LLMRequestError, match="after 4 attempts.*HTTP 500"):
        client.complete(PROMPT, stage="faults")
    assert proxy.seen == ["500"] * 4
    assert client.ledger.stage("faults").errors == 1


def test_cli_llm_test_round_trip(llama_server: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    from bookindex.cli.app import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--set", "llm.provider=openai", "--set", f"llm.base_url={llama_server}",
              "--set", f"cache.path={tmp_path}", "llm", "test"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0, out
    assert f"model: {MODEL}" in out and "latency:" in out and "tokens: prompt" in out
    assert '"capital"' in out
