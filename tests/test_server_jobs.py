"""Index jobs: persisted state, resume after a restart, the queue limit, cancellation — with a
scripted engine (unit), and `kill -9` of a real `bookindex serve` during a build (fault)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import free_port
from fakes import FakeEmbedder
from server_helpers import LIBTASN1, cli_env, cli_server, poll_job
from skills_helpers import build_skill_folder

from bookindex.cli.library import _Progress
from bookindex.core.config import load_settings
from bookindex.engine import Engine, IndexReport
from bookindex.server.jobs import Job, JobManager
from bookindex.server.problem import Problem


class ScriptedEngine:
    """Stands in for the Engine: `index` emits embed events until released (or cancelled)."""

    def __init__(self) -> None:
        self.calls: list[Path] = []
        self.release = threading.Event()
        self.release.set()

    def index(self, path: Path, on_event: Any = None, **options: Any) -> IndexReport:
        self.calls.append(Path(path))
        on_event("parsed", {"pages": 3, "blocks": 9})
        on_event("tree", {"nodes": 4, "sections": 2})
        on_event("embed_start", {"total": 4})
        while not self.release.wait(0.02):
            on_event("embed_advance", {"n": 0})
        on_event("embed_advance", {"n": 4})
        on_event("embed_done", {"n": 4})
        return IndexReport(doc_id="ab" * 8, name=Path(path).name, status="added", pages=3, nodes=4)

    def documents(self) -> list[Any]:
        return []


def staged(root: Path, text: str = "hello") -> Path:
    p = root / "uploads" / f"{time.monotonic_ns()}.part"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_running_job_is_reported_interrupted_and_resumed(tmp_path: Path) -> None:
    root = tmp_path / ".server"
    eng = ScriptedEngine()
    first = JobManager(eng, root, max_jobs=4)  # type: ignore[arg-type]
    job = first.submit(staged(root), "doc.md", "cd" * 32, {})
    # the process dies while the job runs: its file says "running"
    data = json.loads((root / "jobs" / f"{job.id}.json").read_text())
    data["state"] = "running"
    (root / "jobs" / f"{job.id}.json").write_text(json.dumps(data))
    first.role.release()  # the process died: the kernel dropped its runner lock

    second = JobManager(eng, root, max_jobs=4)  # type: ignore[arg-type]
    assert second.interrupted == [job.id]
    j = second.get(job.id)
    assert j.state == "queued" and j.interruptions == 1
    second.start()
    try:
        assert second.wait_idle(20)
    finally:
        second.stop()
    done = Job.model_validate_json((root / "jobs" / f"{job.id}.json").read_text())
    assert done.state == "done" and done.interruptions == 1 and done.progress.nodes_embedded == 4
    assert eng.calls == [root / "files" / ("cd" * 8) / "doc.md"]


def test_queue_limit_is_429_and_cancel(tmp_path: Path) -> None:
    root = tmp_path / ".server"
    eng = ScriptedEngine()
    jobs = JobManager(eng, root, max_jobs=1)  # type: ignore[arg-type]  # not started: jobs stay queued
    a = jobs.submit(staged(root), "a.md", "aa" * 32, {})
    with pytest.raises(Problem) as e:
        jobs.submit(staged(root), "b.md", "bb" * 32, {})
    assert e.value.status == 429 and e.value.headers["Retry-After"]
    assert not list((root / "uploads").iterdir())  # the refused upload is not kept
    c = jobs.cancel(a.id)
    assert c.state == "cancelled" and not (root / "files" / ("aa" * 8)).exists()
    with pytest.raises(Problem) as e:
        jobs.cancel(a.id)
    assert e.value.status == 409

    eng.release.clear()  # the next build blocks in its embedding stage until cancelled
    jobs.start()
    try:
        b = jobs.submit(staged(root), "b.md", "bb" * 32, {})
        deadline = time.monotonic() + 20
        while jobs.get(b.id).state != "running" and time.monotonic() < deadline:
            time.sleep(0.02)
        jobs.cancel(b.id)
        assert jobs.wait_idle(20)
        assert jobs.get(b.id).state == "cancelled" and "running" in (jobs.get(b.id).error or "")
    finally:
        eng.release.set()
        jobs.stop()


def consistent(lib: Path) -> list[str]:
    """The catalog's documents, after checking every one has its folder and manifest and no
    document folder is left outside the catalog."""
    cat_path = lib / "library.json"
    if not cat_path.exists():
        assert not (lib / "docs").exists() or not any((lib / "docs").iterdir())
        return []
    cat = json.loads(cat_path.read_text())
    if not (lib / "docs").exists():  # a library created empty (POST /libraries)
        assert cat["documents"] == {}
        return []
    dirs = {e["dir"] for e in cat["documents"].values()}
    for d in dirs:
        assert (lib / "docs" / d / "manifest.json").is_file()
    assert {p.name for p in (lib / "docs").iterdir()} == dirs
    return [e["name"] for e in cat["documents"].values()]


@pytest.mark.slow
def test_kill_9_during_index_then_restart_resumes(tmp_path: Path, libtasn1_library: tuple[Path, Path]) -> None:
    _, cache = libtasn1_library
    lib = tmp_path / "lib"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = cli_env(cache)
    args = ["serve", str(lib), "--port", str(port)]
    log = tmp_path / "serve.log"
    with cli_server(args, env, tmp_path, log, base + "/health") as proc:
        with open(LIBTASN1, "rb") as fh:
            r = httpx.post(f"{base}/documents", files={"file": ("libtasn1.pdf", fh, "application/pdf")}, timeout=60)
        assert r.status_code == 202, r.text
        job_id = r.json()["id"]
        job = poll_job(base, job_id, timeout=120, until=("running",))
        deadline = time.monotonic() + 120
        while job["progress"]["stage"] in ("queued", "parsing") and time.monotonic() < deadline:
            time.sleep(0.05)
            job = httpx.get(f"{base}/jobs/{job_id}").json()
        assert job["state"] == "running", job
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert consistent(lib) == []  # the build never committed: nothing half-added

    with cli_server(args, env, tmp_path, log, base + "/health"):
        job = httpx.get(f"{base}/jobs/{job_id}").json()
        assert job["interruptions"] == 1 and job["state"] in ("queued", "running")
        job = poll_job(base, job_id, timeout=240)
        assert job["state"] == "done", job
        assert job["interruptions"] == 1 and job["report"]["pages"] == 36
        assert [d["name"] for d in httpx.get(f"{base}/documents").json()] == ["libtasn1.pdf"]
    assert "was interrupted (x1); resuming it" in log.read_text()
    assert consistent(lib) == ["libtasn1.pdf"]


@pytest.mark.slow
def test_kill_9_during_an_upload_to_one_of_two_libraries(tmp_path: Path, libtasn1_library: tuple[Path, Path]) -> None:
    """`serve ROOT` with libraries a and b: kill -9 while a indexes an upload. After the restart
    the GET of a's job says it was interrupted (never "running" for a dead server) and it resumes
    and finishes; b is byte-identical; both catalogs are consistent, nothing half-written is left
    (no staging folder, no partial upload), and both libraries list and answer."""
    lib, cache = libtasn1_library
    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(lib, root / "b", ignore=shutil.ignore_patterns(".server"))
    b_catalog = (root / "b" / "library.json").read_bytes()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    h = {"X-API-Key": "admin-k"}
    env = cli_env(cache, BOOKINDEX_ADMIN_KEYS="admin-k")
    args = ["serve", str(root), "--port", str(port)]
    log = tmp_path / "serve.log"
    a_base = f"{base}/libraries/a"
    with cli_server(args, env, tmp_path, log, base + "/health") as proc:
        assert httpx.post(f"{base}/libraries", json={"name": "a"}, headers=h).status_code == 201
        with open(LIBTASN1, "rb") as fh:
            r = httpx.post(f"{a_base}/documents", files={"file": ("libtasn1.pdf", fh, "application/pdf")},
                           headers=h, timeout=60)
        assert r.status_code == 202, r.text
        job_id = r.json()["id"]
        job = poll_job(a_base, job_id, headers=h, timeout=120, until=("running",))
        deadline = time.monotonic() + 120
        while job["progress"]["stage"] in ("queued", "parsing") and time.monotonic() < deadline:
            time.sleep(0.05)
            job = httpx.get(f"{a_base}/jobs/{job_id}", headers=h).json()
        assert job["state"] == "running", job
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    on_disk = json.loads((root / "a" / ".server" / "jobs" / f"{job_id}.json").read_text())
    assert on_disk["state"] == "running"  # what the dead server left: the restart must not trust it
    assert consistent(root / "a") == [] and consistent(root / "b") == ["libtasn1.pdf"]

    with cli_server(args, env, tmp_path, log, base + "/health"):
        job = httpx.get(f"{a_base}/jobs/{job_id}", headers=h).json()
        assert job["interruptions"] == 1 and job["state"] in ("queued", "running"), job
        job = poll_job(a_base, job_id, headers=h, timeout=240)
        assert job["state"] == "done" and job["report"]["pages"] == 36, job
        assert job["interruptions"] == 1 and not job["error"]
        assert httpx.get(f"{base}/libraries/b/jobs", headers=h).json() == []  # b's queue never held it
        assert [x["name"] for x in httpx.get(f"{base}/libraries", headers=h).json()] == ["a", "b"]
        for name in ("a", "b"):  # both list their document and answer from it
            docs = httpx.get(f"{base}/libraries/{name}/documents", headers=h).json()
            assert [d["name"] for d in docs] == ["libtasn1.pdf"], (name, docs)
            answer = httpx.post(f"{base}/libraries/{name}/ask", headers=h, timeout=120,
                                json={"question": "What does asn1_der_coding do?"})
            assert answer.status_code == 200, (name, answer.text)
            assert answer.json()["evidence"] and answer.json()["doc"]["name"] == "libtasn1.pdf"
    text = log.read_text()
    assert "library a: job" in text and "was interrupted (x1); resuming it" in text
    assert consistent(root / "a") == ["libtasn1.pdf"]
    assert (root / "b" / "library.json").read_bytes() == b_catalog
    for name in ("a", "b"):  # no build left half-written: staging swept, no partial upload
        staging = root / name / ".tmp"
        assert not staging.exists() or not any(staging.iterdir()), list(staging.iterdir())
        uploads = root / name / ".server" / "uploads"
        assert not uploads.exists() or not list(uploads.glob("*.part"))


def test_processes_share_the_queue_through_the_job_files(tmp_path: Path) -> None:
    """`serve --workers N`: two managers on one server folder stand for two server processes.
    Only the runner runs jobs; the other queues, reads progress and cancels through the files,
    and takes the runner role over (resuming the running job) when the runner's process ends."""
    root = tmp_path / ".server"
    eng = ScriptedEngine()
    runner = JobManager(eng, root, max_jobs=4)  # type: ignore[arg-type]
    other = JobManager(eng, root, max_jobs=4)  # type: ignore[arg-type]
    assert runner.role.held and not other.role.held

    queued = other.submit(staged(root), "q.md", "ee" * 32, {})
    assert other.cancel(queued.id).cancel_requested  # the runner acts on the marker
    job = other.submit(staged(root), "a.md", "aa" * 32, {})
    runner.start()
    other.start()
    try:
        assert other.wait_idle(20)
        assert other.get(job.id).state == "done" and other.get(queued.id).state == "cancelled"
        assert eng.calls == [root / "files" / ("aa" * 8) / "a.md"]
        assert not list((root / "jobs").glob("*.cancel"))

        eng.release.clear()  # the next build blocks until released
        slow = other.submit(staged(root), "b.md", "bb" * 32, {})
        deadline = time.monotonic() + 20
        while other.get(slow.id).state != "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert other.get(slow.id).state == "running"
        # the runner's process ends mid-build: its file still says running, its lock is gone
        runner._stop = True  # its worker thread ends after this build
        runner.role.release()
        eng.release.set()
        deadline = time.monotonic() + 20
        while not other.role.held and time.monotonic() < deadline:
            time.sleep(0.05)
        assert other.role.held
        assert other.wait_idle(20)
        assert other.get(slow.id).state == "done"
    finally:
        eng.release.set()
        other.stop()
        runner.stop()


@pytest.mark.slow
def test_serve_with_two_worker_processes(tmp_path: Path) -> None:
    """`bookindex serve --workers 2 --skills DIR`: both processes answer; an upload queued through
    either is built once by the runner, and every process then answers from the new catalog; the
    skill folder given on the command line reaches both processes."""
    lib = tmp_path / "lib"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    doc = tmp_path / "pumps.md"
    doc.write_text("# Pumps\n\n## Priming\n\nThe centrifugal pump is primed with the blue valve "
                   "before start-up.\n\n## Cleaning\n\nThe filter is rinsed every week.\n")
    skills = build_skill_folder(tmp_path / "recipes", FakeEmbedder(dim=64, word=r"\w+"))
    env = cli_env(tmp_path / "cache")
    log = tmp_path / "serve.log"
    with cli_server(["serve", str(lib), "--port", str(port), "--workers", "2", "--skills", str(skills)], env,
                    tmp_path, log, base + "/health"):
        with open(doc, "rb") as fh:
            r = httpx.post(f"{base}/documents", files={"file": ("pumps.md", fh, "text/markdown")}, timeout=60)
        assert r.status_code == 202, r.text
        job = poll_job(base, r.json()["id"], timeout=180)
        assert job["state"] == "done", job
        for _ in range(6):  # fresh connections: the kernel spreads them over both processes
            with httpx.Client(timeout=60) as client:
                assert [d["name"] for d in client.get(f"{base}/documents").json()] == ["pumps.md"]
                a = client.post(f"{base}/ask", json={"question": "How is the pump primed?", "doc": "pumps.md"})
                assert a.status_code == 200, a.text
                assert any("blue valve" in e["snippet"] for e in a.json()["evidence"]), a.json()["evidence"]
                assert client.get(f"{base}/skills/recipes/documents/d5").json()["text"].startswith("[d5] Saturn")
    text = log.read_text()
    assert "2 server processes" in text and text.count("Started server process") == 2
    assert len(list((lib / ".server" / "jobs").glob("*.json"))) == 1


PUMPS = ("# Pumps\n\n## Priming\n\nThe centrifugal pump is primed with the blue valve before start-up.\n\n"
         "## Cleaning\n\nThe filter of the Acme pump is rinsed every week.\n\n## Storage\n\n"
         "Drain the pump housing before winter storage.\n")


def md_engine(tmp_path: Path) -> Engine:
    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(tmp_path / "cache")}, env={})
    return Engine(tmp_path / "lib", settings, embedder=FakeEmbedder(dim=64, word=r"\w+"))


def test_graph_progress_counts_nodes_done(tmp_path: Path) -> None:
    """A real build reports the graph's nodes (graph_start) and each extracted batch
    (graph_advance); a job's progress counts them, visible while it runs and at the end."""
    doc = tmp_path / "pumps.md"
    doc.write_text(PUMPS)
    events: list[tuple[str, dict[str, Any]]] = []
    md_engine(tmp_path).index(doc, on_event=lambda e, i: events.append((e, dict(i))))
    start = [i for e, i in events if e == "graph_start"]
    assert len(start) == 1 and start[0]["nodes"] > 0
    assert sum(i["n"] for e, i in events if e == "graph_advance") == start[0]["nodes"]
    names = [e for e, _ in events]
    assert names.index("graph_start") < names.index("graph_advance") < names.index("graph_done")

    root = tmp_path / ".server"
    jobs = JobManager(md_engine(tmp_path), root, max_jobs=2)
    job = jobs.submit(staged(root, PUMPS.replace("blue", "red")), "pumps.md", "ab" * 32, {})
    on_event = jobs._events(jobs._jobs[job.id])
    on_event("graph_start", {"nodes": 10})
    on_event("graph_advance", {"n": 4})
    mid = jobs._jobs[job.id].progress
    assert (mid.stage, mid.graph, mid.graph_nodes, mid.graph_nodes_done) == ("graph", "running", 10, 4)
    jobs._jobs[job.id].progress = type(mid)()
    jobs.start()
    try:
        assert jobs.wait_idle(60)
    finally:
        jobs.stop()
    done = jobs.get(job.id)
    assert done.state == "done", done.error
    assert done.progress.graph == "done"
    assert done.progress.graph_nodes == done.progress.graph_nodes_done == start[0]["nodes"]


def test_cli_progress_draws_a_graph_bar() -> None:
    prog = _Progress(True)
    prog("graph_start", {"nodes": 10})
    assert prog.bar is not None and prog.bar.total == 10
    prog("graph_advance", {"n": 4})
    assert prog.bar.n == 4
    prog("graph_done", {"seconds": 0.1})
    assert prog.bar is None


def test_job_past_its_timeout_fails_and_leaves_the_library_unchanged(tmp_path: Path) -> None:
    """A build in the server's own process stops at its next event past `job_timeout_s`."""
    root = tmp_path / ".server"
    engine = md_engine(tmp_path)
    jobs = JobManager(engine, root, max_jobs=2, timeout_s=1e-6)
    job = jobs.submit(staged(root, PUMPS), "pumps.md", "ab" * 32, {})
    jobs.start()
    try:
        assert jobs.wait_idle(60)
    finally:
        jobs.stop()
    failed = jobs.get(job.id)
    assert failed.state == "failed" and "job_timeout_s" in (failed.error or ""), failed.error
    assert not (tmp_path / "lib" / "library.json").exists() and engine.documents() == []
    assert not (root / "files" / ("ab" * 8)).exists()  # its upload went with it


@pytest.mark.slow
def test_build_process_past_its_timeout_is_stopped(tmp_path: Path) -> None:
    """The server's child-process build is stopped at the deadline even between events."""
    root = tmp_path / ".server"
    lib = tmp_path / "lib"
    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(tmp_path / "cache")}, env={})
    engine = Engine(lib, settings)
    (tmp_path / "keep.md").write_text(PUMPS)
    engine.index(tmp_path / "keep.md", graph=False)
    before = (lib / "library.json").read_bytes()
    jobs = JobManager(engine, root, max_jobs=2, isolate=True, timeout_s=0.5)
    job = jobs.submit(staged(root, PUMPS.replace("blue", "green")), "other.md", "cd" * 32, {})
    jobs.start()
    try:
        assert jobs.wait_idle(120)
    finally:
        jobs.stop()
    failed = jobs.get(job.id)
    assert failed.state == "failed" and "0.5 s (server.job_timeout_s)" in (failed.error or ""), failed.error
    assert (lib / "library.json").read_bytes() == before
    assert [d.name for d in engine.documents()] == ["keep.md"]
