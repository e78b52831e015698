"""Real servers on 127.0.0.1 for the serving tests: uvicorn in a thread (in-process app) or
`bookindex serve|mcp` in a subprocess; both bounded and stopped by their context managers."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from conftest import free_port

REPO = Path(__file__).resolve().parents[1]
LIBTASN1 = REPO / "data" / "libtasn1.pdf"


def wait_http(url: str, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    """Poll `url` until it answers (any status); fail after `timeout` or when `proc` exits."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=2.0)
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not answer within {timeout:.0f} s") from None
            time.sleep(0.2)


@contextmanager
def thread_server(app: Any) -> Iterator[str]:
    """Serve an ASGI app with uvicorn in a daemon thread; yields the base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/health", 30)
        yield base
    finally:
        server.should_exit = True
        t.join(20)


def cli_env(cache: Path, **extra: str) -> dict[str, str]:
    """Environment for a `bookindex` subprocess: this checkout first, no LLM, the given cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOOKINDEX_")}
    env.update(PYTHONPATH=str(REPO), BOOKINDEX_CACHE_DIR=str(cache), BOOKINDEX_LLM__PROVIDER="none")
    env.update(extra)
    return env


@contextmanager
def cli_server(args: list[str], env: dict[str, str], cwd: Path, log: Path, ready_url: str,
               timeout: float = 90.0) -> Iterator[subprocess.Popen]:
    """Run `python -m bookindex.cli.app ARGS` until `ready_url` answers; kill it on exit."""
    with open(log, "ab") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "bookindex.cli.app", *args], env=env, cwd=cwd,
                                stdout=fh, stderr=subprocess.STDOUT)
    try:
        try:
            wait_http(ready_url, timeout, proc)
        except (RuntimeError, TimeoutError) as e:
            raise RuntimeError(f"{e}; log:\n{log.read_text()[-3000:]}") from None
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def poll_job(base: str, job_id: str, headers: dict[str, str] | None = None, timeout: float = 240.0,
             until: tuple[str, ...] = ("done", "failed", "cancelled")) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = httpx.get(f"{base}/jobs/{job_id}", headers=headers, timeout=10).json()
        if job["state"] in until:
            return job
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} still {job['state']} after {timeout:.0f} s: {job}")
        time.sleep(0.3)


def sse_events(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of an SSE body."""
    out = []
    for frame in text.split("\n\n"):
        name, data = "message", []
        for line in frame.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            out.append((name, "\n".join(data)))
    return out
