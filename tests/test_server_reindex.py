"""Re-indexing through REST while questions are asked, with the builds in the server's child
processes as `bookindex serve` runs them: every question is answered, and once the jobs and the
questions are done the library holds one folder for the document (each replaced version went
when the last question reading it let go), not one per re-index until the next CLI run."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import poll_job, thread_server

from bookindex.core.config import load_settings
from bookindex.engine import Engine
from bookindex.server.app import create_app
from bookindex.server.auth import Keys
from bookindex.storage.catalog import CATALOG, DOCS

pytestmark = pytest.mark.slow

ASKERS = 2  # threads asking while the document is re-indexed
MAX_ASKS = 60  # per thread: the load is bounded even if a re-index hangs
PAUSE_S = 0.1  # between one thread's questions
REINDEXES = 2
WAIT_S = 120.0  # the longest the test waits for the replaced folders to go (a loaded machine)
JOB_S = 900.0  # the longest one index job may take: builds run niced, so a busy machine slows them most

MANUAL = """# Pump manual

## Priming

The pump is primed with the blue valve before the first start.

## Draining

Open the drain plug at the bottom of the housing and let the water run out.
"""
QUESTION = "Which valve primes the pump?"


def generations(lib: Path, doc_id: str) -> list[str]:
    return sorted(p.name for p in (lib / DOCS).iterdir() if p.name.startswith(f"{doc_id}."))


def test_reindex_while_asking_answers_every_question_and_leaves_one_folder(tmp_path: Path) -> None:
    doc = tmp_path / "pumps.md"
    doc.write_text(MANUAL)
    lib = tmp_path / "lib"
    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(tmp_path / "cache")}, env={})
    engine = Engine(lib, settings)
    with thread_server(create_app(engine, Keys(frozenset(), frozenset()))) as base:
        with open(doc, "rb") as fh:
            r = httpx.post(f"{base}/documents", files={"file": ("pumps.md", fh, "text/markdown")},
                           params={"graph": "false"}, timeout=60)
        assert r.status_code == 202, r.text
        first = poll_job(base, r.json()["id"], timeout=JOB_S)
        assert first["state"] == "done", first
        doc_id = first["report"]["doc_id"]

        answers: list[tuple[int, Any]] = []
        stop = threading.Event()

        def ask() -> None:
            with httpx.Client(timeout=120) as client:
                for _ in range(MAX_ASKS):
                    if stop.is_set():
                        return
                    r = client.post(f"{base}/ask", json={"question": QUESTION, "doc": doc_id})
                    answers.append((r.status_code, r.json() if r.status_code == 200 else r.text))
                    time.sleep(PAUSE_S)

        askers = [threading.Thread(target=ask, daemon=True) for _ in range(ASKERS)]
        for t in askers:
            t.start()
        while not answers:  # the askers have started before the first re-index
            time.sleep(0.05)
        during = len(answers)
        try:
            for _ in range(REINDEXES):
                r = httpx.post(f"{base}/documents/{doc_id}/reindex", timeout=60)
                assert r.status_code == 202, r.text
                job = poll_job(base, r.json()["id"], timeout=JOB_S)
                assert job["state"] == "done" and job["report"]["status"] == "replaced", job
            during = len(answers) - during
        finally:
            stop.set()
            for t in askers:
                t.join(180)
        assert not any(t.is_alive() for t in askers)

        assert answers and during > 0  # questions were answered while the document was rebuilt
        failed = [(status, body) for status, body in answers if status != 200]
        assert not failed, failed[:3]
        for _, body in answers:
            assert body["answer"] and any("blue valve" in e["snippet"] for e in body["evidence"]), body

        current = httpx.get(f"{base}/documents/{doc_id}").json()
        assert current["doc_id"] == doc_id
        deadline = time.monotonic() + WAIT_S
        while len(generations(lib, doc_id)) > 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        named = json.loads((lib / CATALOG).read_text())["documents"][doc_id]["dir"]
        assert generations(lib, doc_id) == [named], "replaced versions are still on disk"
        after = httpx.post(f"{base}/ask", json={"question": QUESTION, "doc": doc_id}, timeout=120)
        assert after.status_code == 200 and after.json()["answer"]
