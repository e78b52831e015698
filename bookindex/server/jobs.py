"""Index jobs: a persisted queue served by one writer thread.

Each job is one JSON file under `LIB/.server/jobs/<id>.json`, rewritten atomically on every
state change and (throttled) on progress, so a restarted server knows what was queued or
running. An upload is stored content-addressed under `LIB/.server/files/<sha16>/<name>` (the
document's id is the same sha prefix), so the path the catalog records as the source is stable
and the PDF stays available for page images; a job that fails or is cancelled deletes its upload
unless a stored document already uses it.

One worker thread runs the jobs one at a time through `Engine.index`, which writes through the
library (its lock and atomic catalog swap); queueing here keeps the server itself to one writer.
In the server each build runs in a child process (`builds`); the catalog is re-read after it
commits.
A restarted server marks the jobs it finds `running` as interrupted (`interruptions` counts
them) and queues them again with the queued ones: the build starts over, cheaply, because LLM
calls are answered from the disk cache.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bookindex.core.atomic import write_json_atomic
from bookindex.core.errors import BookIndexError
from bookindex.engine import Engine, IndexReport
from bookindex.server.builds import JobCancelled, build_in_process
from bookindex.server.problem import Problem

log = logging.getLogger("bookindex.server.jobs")

JobState = Literal["queued", "running", "done", "failed", "cancelled"]
ACTIVE: tuple[str, ...] = ("queued", "running")
SAVE_EVERY_S = 0.5  # progress is persisted at most this often (state changes always)


class JobProgress(BaseModel):
    """How far a build is, from the Engine's index events."""

    stage: str = "queued"  # queued, parsing, tree, embedding, graph, committing, done
    pages: int = 0  # pages parsed (the parser reports them when parsing ends)
    blocks: int = 0
    nodes: int = 0  # tree nodes to embed
    nodes_embedded: int = 0
    graph: Literal["pending", "running", "done", "skipped"] = "pending"
    graph_nodes: int = 0  # graph retry: nodes to re-extract
    graph_nodes_done: int = 0


class Job(BaseModel):
    id: str
    state: JobState = "queued"
    name: str  # the uploaded file's name
    file: str  # the upload, relative to LIB/.server
    sha256: str
    options: dict[str, Any] = Field(default_factory=dict)  # Engine.index options (graph, ...)
    created: str
    started: str | None = None
    finished: str | None = None
    progress: JobProgress = Field(default_factory=JobProgress)
    report: IndexReport | None = None
    error: str | None = None
    interruptions: int = 0  # times a server stopped while this job ran; each restart resumed it
    cancel_requested: bool = False


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class JobManager:
    """The job queue of one library; `start()` launches the worker, `stop()` ends it."""

    def __init__(self, engine: Engine, root: Path, max_jobs: int, isolate: bool = False) -> None:
        self.engine = engine
        self.isolate = isolate  # builds in a child process (the server) or in the worker thread
        self.root = root  # LIB/.server
        self.jobs_dir = root / "jobs"
        self.files_dir = root / "files"
        self.max_jobs = max_jobs
        self._jobs: dict[str, Job] = {}
        self._queue: deque[str] = deque()
        self._cond = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._saved_at: dict[str, float] = {}
        self.interrupted: list[str] = []  # ids found running at start-up
        self._load()

    # -- persistence ---------------------------------------------------------------------
    def _load(self) -> None:
        """Read the persisted jobs; requeue the unfinished ones, oldest first."""
        if not self.jobs_dir.is_dir():
            return
        found: list[Job] = []
        for p in sorted(self.jobs_dir.glob("*.json")):
            try:
                found.append(Job.model_validate(json.loads(p.read_text(encoding="utf-8"))))
            except (OSError, ValueError) as e:
                log.warning("%s: unreadable job file, skipped (%s)", p, e)
        for job in sorted(found, key=lambda j: j.created):
            self._jobs[job.id] = job
            if job.state == "running":
                job.interruptions += 1
                job.state = "queued"
                job.progress = JobProgress()
                self.interrupted.append(job.id)
                self._save(job)
            if job.state == "queued":
                self._queue.append(job.id)

    def _save(self, job: Job, *, throttle: bool = False) -> None:
        now = time.monotonic()
        if throttle and now - self._saved_at.get(job.id, 0.0) < SAVE_EVERY_S:
            return
        self._saved_at[job.id] = now
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.jobs_dir / f"{job.id}.json", job.model_dump(mode="json"))

    # -- the API -------------------------------------------------------------------------
    def list(self, state: str | None = None) -> list[Job]:
        with self._cond:
            jobs = [j.model_copy(deep=True) for j in self._jobs.values() if state in (None, j.state)]
        return sorted(jobs, key=lambda j: j.created, reverse=True)

    def get(self, job_id: str) -> Job:
        with self._cond:
            job = self._jobs.get(job_id)
            if job is None:
                raise Problem(404, f"no job {job_id}")
            return job.model_copy(deep=True)

    def active(self) -> int:
        with self._cond:
            return sum(1 for j in self._jobs.values() if j.state in ACTIVE)

    def upload_path(self, sha256: str, name: str) -> Path:
        """Where an upload with this content and (validated) name is stored."""
        return self.files_dir / sha256[:16] / name

    def submit(self, staged: Path, name: str, sha256: str, options: dict[str, Any]) -> Job:
        """Queue an index job for a staged upload (moved into place here); 429 when full."""
        with self._cond:
            if sum(1 for j in self._jobs.values() if j.state in ACTIVE) >= self.max_jobs:
                staged.unlink(missing_ok=True)
                raise Problem(429, f"{self.max_jobs} index jobs are already queued or running; retry later",
                              headers={"Retry-After": "30"})
            target = self.upload_path(sha256, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            staged.replace(target)
            job = Job(id=uuid.uuid4().hex, name=name, file=str(target.relative_to(self.root)),
                      sha256=sha256, options=options, created=_now())
            self._jobs[job.id] = job
            self._save(job)
            self._queue.append(job.id)
            self._cond.notify_all()
            return job.model_copy(deep=True)

    def cancel(self, job_id: str) -> Job:
        """Cancel a queued job at once, a running one at its next progress event; 409 if ended."""
        with self._cond:
            job = self._jobs.get(job_id)
            if job is None:
                raise Problem(404, f"no job {job_id}")
            if job.state not in ACTIVE:
                raise Problem(409, f"job {job_id} has already ended ({job.state})")
            job.cancel_requested = True
            queued = job.state == "queued"
            if queued:
                with contextlib.suppress(ValueError):
                    self._queue.remove(job_id)
                self._finish(job, "cancelled", error="cancelled before it started")
            else:
                self._save(job)
            copy = job.model_copy(deep=True)
        if queued:
            self._discard_upload(job)
        return copy

    # -- the worker ----------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="bookindex-jobs", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop taking jobs; a running build is cancelled at its next event (and requeued by
        the next start, as interrupted, if the process ends before it stops)."""
        with self._cond:
            self._stop = True
            for j in self._jobs.values():
                if j.state == "running":
                    j.cancel_requested = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def wait_idle(self, timeout: float) -> bool:
        """Block until no job is queued or running (tests, benchmarks); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(j.state in ACTIVE for j in self._jobs.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
            return True

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                job = self._jobs[self._queue.popleft()]
                job.state = "running"
                job.started = _now()
                job.progress = JobProgress(stage="parsing")
                self._save(job)
            self._run(job)

    def _run(self, job: Job) -> None:
        path = self.root / job.file
        try:
            if not path.is_file():
                raise BookIndexError(f"{job.name}: the uploaded file is missing ({job.file})")
            if self.isolate:
                report = self._index_in_child(job, path)
            else:
                report = self.engine.index(path, on_event=self._events(job), **job.options)
        except JobCancelled:
            with self._cond:
                stopping = self._stop and job.state == "running"
                if stopping:  # server shutdown: leave it to be resumed by the next start
                    job.interruptions += 1
                    job.state = "queued"
                    job.progress = JobProgress()
                    job.cancel_requested = False
                    self._save(job)
                    return
                self._finish(job, "cancelled", error="cancelled while running")
            self._discard_upload(job)
            return
        except Exception as e:  # a failed build leaves the library unchanged (Library.add)
            msg = " ".join(str(e).split()) if isinstance(e, BookIndexError) else f"{type(e).__name__}: {e}"
            msg = msg.replace(str(path), job.name)  # the client knows its file by name, not by our path
            with self._cond:
                self._finish(job, "failed", error=msg)
            self._discard_upload(job)
            return
        with self._cond:
            job.report = report
            job.progress.stage = "done"
            if job.progress.graph == "pending":
                job.progress.graph = "done" if report.graph_built else "skipped"
            self._finish(job, "done")

    def _index_in_child(self, job: Job, path: Path) -> IndexReport:
        report = build_in_process(self.engine, job.name, path, job.options, self._events(job),
                                  lambda: job.cancel_requested)
        self.engine.library.refresh()  # the child committed: read the new catalog
        return report

    def _finish(self, job: Job, state: JobState, error: str | None = None) -> None:
        """(Under the condition lock.) Record a job's end and wake waiters."""
        job.state = state
        job.error = error
        job.finished = _now()
        self._save(job)
        self._cond.notify_all()

    def _discard_upload(self, job: Job) -> None:
        """Delete a failed or cancelled job's upload unless a stored document or an active job
        uses the same file."""
        path = self.root / job.file
        with self._cond:
            if any(j.file == job.file and j.state in ACTIVE for j in self._jobs.values()):
                return
        with contextlib.suppress(Exception):
            if any(d.source == str(path.resolve()) for d in self.engine.documents()):
                return
        shutil.rmtree(path.parent, ignore_errors=True)

    def _events(self, job: Job) -> Callable[[str, dict[str, Any]], None]:
        """The Engine's index events → the job's progress (and the cancellation point)."""
        def on_event(event: str, info: dict[str, Any]) -> None:
            p = job.progress
            if event == "parsed":
                p.pages, p.blocks, p.stage = int(info.get("pages", 0)), int(info.get("blocks", 0)), "tree"
            elif event == "tree":
                p.nodes, p.stage = int(info.get("nodes", 0)), "embedding"
            elif event == "embed_start":
                p.nodes = int(info.get("total", p.nodes))
            elif event == "embed_advance":
                p.nodes_embedded += int(info.get("n", 0))
            elif event == "embed_done":
                p.nodes_embedded, p.stage = p.nodes, "graph" if job.options.get("graph", True) else "committing"
            elif event == "graph_start":
                p.graph, p.stage = "running", "graph"
            elif event == "graph_done":
                p.graph, p.stage = "done", "committing"
            elif event == "graph_retry_start":
                p.graph, p.graph_nodes, p.stage = "running", int(info.get("nodes", 0)), "graph"
            elif event == "graph_retry_done":
                p.graph, p.graph_nodes_done, p.stage = "done", p.graph_nodes, "committing"
            with self._cond:
                cancel = job.cancel_requested
                self._save(job, throttle=event == "embed_advance")
            if cancel:
                raise JobCancelled(job.id)
        return on_event

