"""Native tool calling through the real client and OpenAIProvider, against a stub
OpenAI-compatible server on 127.0.0.1 that answers with a tool call and stops by itself."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from bookindex.core.config import Settings
from bookindex.core.errors import LLMRequestError
from bookindex.providers.llm import get_llm

TOOLS = [{"type": "function", "function": {"name": "view", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]


class Handler(BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Handler.bodies.append(body)
        reply = {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
                 "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                     "role": "assistant", "content": None, "tool_calls": [{
                         "id": "call_1", "type": "function",
                         "function": {"name": "view", "arguments": '{"path": "skill-01-a/SKILL.md"}'}}]}}],
                 "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stub_server() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), Handler)
    server.timeout = 5
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_complete_tools_returns_the_calls_and_counts_them(stub_server: str, tmp_path: Any) -> None:
    settings = Settings().with_overrides({"llm.provider": "openai", "llm.base_url": stub_server, "llm.model": "stub",
                                          "cache.path": str(tmp_path), "llm.max_retries": 0})
    client = get_llm(settings)
    assert client.supports_tools
    comp = client.complete_tools([{"role": "user", "content": "go"}], TOOLS, stage="nav")
    assert comp.extra["tool_calls"] == [{"id": "call_1", "name": "view", "arguments": '{"path": "skill-01-a/SKILL.md"}'}]
    assert Handler.bodies[-1]["tools"] == TOOLS
    again = client.complete_tools([{"role": "user", "content": "go"}], TOOLS, stage="nav")  # from the cache
    assert again.extra == comp.extra and len(Handler.bodies) == 1
    stage = client.ledger.snapshot()["stages"]["nav"]
    assert stage["calls"] == 1 and stage["cache_hits"] == 1 and stage["prompt_tokens"] == 42


def test_providers_without_tools_say_so() -> None:
    client = get_llm(Settings().with_overrides({"llm.provider": "none"}))
    assert not client.supports_tools
    with pytest.raises(LLMRequestError, match="JSON action protocol"):
        client.complete_tools("x", TOOLS)
