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
commits and the versions it replaced are dropped from the server's cache, so their folders go as
soon as the questions still reading them finish (docs/server.md, "Old versions").
A build running past `server.job_timeout_s` is stopped (the child told to cancel, killed if it
lingers) and the job fails with a message naming the setting; the library is unchanged. An upload
whose file name an earlier upload's document has (other content) replaces that document in the
same commit, as `bookindex index` replaces a changed file at the same path: uploads are stored
one folder per content, so the name is what makes them the same file.
A re-index job (`submit_reindex`) has no upload: it rebuilds a stored document from the source
file the catalog records for it, forced (`Engine.index(force=True)`), with the options it names.
A restarted server marks the jobs it finds `running` as interrupted (`interruptions` counts
them) and queues them again with the queued ones: the build starts over, cheaply, because LLM
calls are answered from the disk cache.

Several server processes (`bookindex serve --workers N`) share the queue through these files:
the process holding the runner role (`runner.RunnerRole`) runs the jobs; every process answers
the job routes from the files (re-read when they change) and queues uploads by writing one; a
cancel from a process that is not the runner leaves a `<id>.cancel` marker the runner acts on
within `POLL_S`. When the runner dies, another process takes the role and resumes its job.
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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bookindex.core.atomic import write_json_atomic
from bookindex.core.errors import BookIndexError
from bookindex.core.events import Events
from bookindex.engine import Engine, IndexReport
from bookindex.server.builds import JobCancelled, JobTimedOut, build_in_process
from bookindex.server.job_runner_role import RunnerRole
from bookindex.server.problem import Problem

log = logging.getLogger("bookindex.server.jobs")

JobState = Literal["queued", "running", "done", "failed", "cancelled"]
ACTIVE: tuple[str, ...] = ("queued", "running")
SAVE_EVERY_S = 0.5  # progress is persisted at most this often (state changes always)
POLL_S = 1.0  # how often the runner looks for jobs other processes queued (and others for the role)
CANCEL_SUFFIX = ".cancel"  # LIB/.server/jobs/<id>.cancel: a cancel asked for in another process


class JobProgress(BaseModel):
    """How far a build is, from the Engine's index events."""

    stage: str = "queued"  # queued, parsing, tree, embedding, graph, committing, done
    pages: int = 0  # pages parsed (the parser reports them when parsing ends)
    blocks: int = 0
    nodes: int = 0  # tree nodes to embed
    nodes_embedded: int = 0
    graph: Literal["pending", "running", "done", "skipped"] = "pending"
    graph_nodes: int = 0  # tree nodes the graph extracts entities from (a retry: the failed ones)
    graph_nodes_done: int = 0  # of those, extracted so far


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
    reindex: str | None = None  # a re-index: the stored document rebuilt from its source (file is "")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class JobManager:
    """The job queue of one library; `start()` launches the worker, `stop()` ends it."""

    def __init__(self, engine: Engine, root: Path, max_jobs: int, isolate: bool = False,
                 timeout_s: float | None = None) -> None:
        self.engine = engine
        self.isolate = isolate  # builds in a child process (the server) or in the worker thread
        self.timeout_s = timeout_s  # server.job_timeout_s: a longer build is stopped and fails
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
        self._seen: dict[str, int] = {}  # job file -> mtime_ns when last read
        self._current: str | None = None  # the job this process is running
        self.interrupted: list[str] = []  # ids found running when this process took the runner role
        self.role = RunnerRole(root)
        if self.role.try_take():
            self._resume()
        else:
            self._sync()

    # -- persistence ---------------------------------------------------------------------
    def _read(self, path: Path) -> Job | None:
        try:
            return Job.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            log.warning("%s: unreadable job file, skipped (%s)", path, e)
            return None

    def _resume(self) -> None:
        """(The runner, on taking the role.) Read the persisted jobs; requeue the unfinished ones,
        oldest first: a job found running was interrupted by the process that ran it."""
        if not self.jobs_dir.is_dir():
            return
        found = [j for p in sorted(self.jobs_dir.glob("*.json")) if (j := self._read(p)) is not None]
        self._queue.clear()
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

    def _sync(self) -> None:
        """(Under the condition lock.) Re-read the job files that changed since last read: jobs
        other processes queued, finished or asked to cancel. The runner keeps its own copy of
        the job it is running (newer than the file) and queues the new ones it finds."""
        if not self.jobs_dir.is_dir():
            return
        runner = self.role.held
        for path in self.jobs_dir.glob("*.json"):
            job_id = path.stem
            try:
                mtime = path.stat().st_mtime_ns
            except FileNotFoundError:
                continue
            if self._seen.get(job_id) == mtime or job_id == self._current:
                continue
            job = self._read(path)
            if job is None:
                continue
            self._seen[job_id] = mtime
            self._jobs[job_id] = job
            if runner and job.state == "queued" and job_id not in self._queue:
                self._queue.append(job_id)
        if runner:
            self._take_cancels()

    def _take_cancels(self) -> None:
        """(The runner, under the lock.) Act on the cancel markers other processes left."""
        for marker in self.jobs_dir.glob(f"*{CANCEL_SUFFIX}"):
            job = self._jobs.get(marker.name[: -len(CANCEL_SUFFIX)])
            if job is None or job.state not in ACTIVE:
                marker.unlink(missing_ok=True)
            elif job.state == "queued":
                with contextlib.suppress(ValueError):
                    self._queue.remove(job.id)
                job.cancel_requested = True
                self._finish(job, "cancelled", error="cancelled before it started")
                self._discard_upload(job)  # the condition's lock is re-entrant
            else:
                job.cancel_requested = True

    def _cancel_marker(self, job_id: str) -> Path:
        return self.jobs_dir / f"{job_id}{CANCEL_SUFFIX}"

    def _save(self, job: Job, *, throttle: bool = False) -> None:
        now = time.monotonic()
        if throttle and now - self._saved_at.get(job.id, 0.0) < SAVE_EVERY_S:
            return
        self._saved_at[job.id] = now
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        path = self.jobs_dir / f"{job.id}.json"
        write_json_atomic(path, job.model_dump(mode="json"))
        with contextlib.suppress(OSError):  # our own write: nothing for _sync to re-read
            self._seen[job.id] = path.stat().st_mtime_ns

    # -- the API -------------------------------------------------------------------------
    def list(self, state: str | None = None) -> list[Job]:
        with self._cond:
            self._sync()
            jobs = [j.model_copy(deep=True) for j in self._jobs.values() if state in (None, j.state)]
        return sorted(jobs, key=lambda j: j.created, reverse=True)

    def get(self, job_id: str) -> Job:
        with self._cond:
            self._sync()
            job = self._jobs.get(job_id)
            if job is None:
                raise Problem(404, f"no job {job_id}")
            return job.model_copy(deep=True)

    def active(self) -> int:
        with self._cond:
            self._sync()
            return sum(1 for j in self._jobs.values() if j.state in ACTIVE)

    def upload_path(self, sha256: str, name: str) -> Path:
        """Where an upload with this content and (validated) name is stored."""
        return self.files_dir / sha256[:16] / name

    def submit(self, staged: Path, name: str, sha256: str, options: dict[str, Any]) -> Job:
        """Queue an index job for a staged upload (moved into place here); 429 when full."""
        with self._cond:
            self._sync()
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
            if self.role.held:  # otherwise the runner process finds the file within POLL_S
                self._queue.append(job.id)
            self._cond.notify_all()
            return job.model_copy(deep=True)

    def submit_reindex(self, doc_id: str, name: str, sha256: str, options: dict[str, Any]) -> Job:
        """Queue a re-index of stored document `doc_id`: a forced build of the source file the
        catalog records for it (looked up when the job runs, so no path is kept in the job);
        409 while another job re-indexes it, 429 when the queue is full."""
        with self._cond:
            self._sync()
            active = [j for j in self._jobs.values() if j.state in ACTIVE]
            if any(j.reindex == doc_id for j in active):
                raise Problem(409, f"{name} is already being re-indexed")
            if len(active) >= self.max_jobs:
                raise Problem(429, f"{self.max_jobs} index jobs are already queued or running; retry later",
                              headers={"Retry-After": "30"})
            job = Job(id=uuid.uuid4().hex, name=name, file="", sha256=sha256, options=dict(options, force=True),
                      created=_now(), reindex=doc_id)
            self._jobs[job.id] = job
            self._save(job)
            if self.role.held:
                self._queue.append(job.id)
            self._cond.notify_all()
            return job.model_copy(deep=True)

    def _source(self, job: Job) -> Path:
        """The file a job builds: its upload, or for a re-index the stored document's source."""
        if job.reindex is None:
            return self.root / job.file
        source = self.engine.document(job.reindex).source
        if not source or not Path(source).is_file():
            raise BookIndexError(f"{job.name}: its source file is gone; upload it again to rebuild it")
        return Path(source)

    def cancel(self, job_id: str) -> Job:
        """Cancel a queued job at once, a running one at its next progress event; 409 if ended."""
        with self._cond:
            self._sync()
            job = self._jobs.get(job_id)
            if job is None:
                raise Problem(404, f"no job {job_id}")
            if job.state not in ACTIVE:
                raise Problem(409, f"job {job_id} has already ended ({job.state})")
            if not self.role.held:  # the runner process cancels it within POLL_S
                self._cancel_marker(job_id).touch()
                copy = job.model_copy(deep=True)
                copy.cancel_requested = True
                return copy
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
        self.role.release()

    def wait_idle(self, timeout: float) -> bool:
        """Block until no job is queued or running (tests, benchmarks); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                self._sync()
                if not any(j.state in ACTIVE for j in self._jobs.values()):
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))

    def _work(self) -> None:
        while True:
            with self._cond:
                if self._stop:
                    return
                if not self.role.held and self.role.try_take():  # the runner process ended
                    before = len(self.interrupted)
                    self._resume()
                    for job_id in self.interrupted[before:]:
                        log.warning("took over the index jobs; job %s was interrupted, resuming it", job_id)
                if self.role.held:
                    self._sync()
                if not self._queue or not self.role.held:
                    self._cond.wait(POLL_S)
                    continue
                job = self._jobs[self._queue.popleft()]
                if job.state != "queued":
                    continue
                job.state = "running"
                job.started = _now()
                job.progress = JobProgress(stage="parsing")
                self._current = job.id
                self._save(job)
            try:
                self._run(job)
            finally:
                with self._cond:
                    self._current = None

    def _run(self, job: Job) -> None:
        path = self.root / job.file
        replaces: tuple[str, ...] = ()
        try:
            path = self._source(job)
            if not path.is_file():
                raise BookIndexError(f"{job.name}: the uploaded file is missing ({job.file})")
            replaces = () if job.reindex else self._earlier_uploads(job)
            if self.isolate:
                report = self._index_in_child(job, path, replaces)
            else:
                deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
                report = self.engine.index(path, on_event=self._events(job, deadline), replaces=replaces,
                                           **job.options)
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
        except Exception as e:  # a failed build leaves the library unchanged (DocumentLibrary.add)
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
        if report.status == "replaced":
            self._forget_replaced(replaces)

    def _index_in_child(self, job: Job, path: Path, replaces: tuple[str, ...]) -> IndexReport:
        report = build_in_process(self.engine, job.name, path, job.options, self._events(job),
                                  lambda: self._cancelled(job), replaces=replaces, timeout_s=self.timeout_s)
        self.engine.refresh()  # the child committed: the new catalog, the replaced versions let go
        return report

    def _earlier_uploads(self, job: Job) -> tuple[str, ...]:
        """The stored documents an earlier upload under the same file name made (other content):
        the new build replaces them when it commits, as `bookindex index` replaces the document
        of a changed file at the same path. Uploads are stored one folder per content, so the
        name is what makes them the same file."""
        files = self.files_dir.resolve()
        new_id = job.sha256[:16]
        out = []
        for d in self.engine.documents():
            src = Path(d.source or "")
            if src.parent.parent == files and src.name == job.name and d.doc_id != new_id:
                out.append(d.doc_id)
        return tuple(out)

    def _forget_replaced(self, replaced: tuple[str, ...]) -> None:
        """After a replacing build committed: drop the replaced documents' page images and their
        uploads (each unless a stored document still uses it)."""
        in_use = {str(Path(d.source or "").parent) for d in self.engine.documents()}
        for doc_id in replaced:
            shutil.rmtree(self.root / "pages" / doc_id, ignore_errors=True)
            folder = self.files_dir / doc_id  # uploads are stored under their sha's first 16 digits
            if str(folder.resolve()) not in in_use:
                shutil.rmtree(folder, ignore_errors=True)

    def _finish(self, job: Job, state: JobState, error: str | None = None) -> None:
        """(Under the condition lock.) Record a job's end and wake waiters."""
        job.state = state
        job.error = error
        job.finished = _now()
        self._save(job)
        self._cancel_marker(job.id).unlink(missing_ok=True)
        self._cond.notify_all()
        if state == "failed":
            log.warning("job %s (%s) failed: %s", job.id, job.name, error)
        else:
            log.info("job %s (%s) %s", job.id, job.name, state)

    def _cancelled(self, job: Job) -> bool:
        """Whether a running job was asked to stop, here or (a marker) in another process."""
        if not job.cancel_requested and self._cancel_marker(job.id).exists():
            job.cancel_requested = True
        return job.cancel_requested

    def _discard_upload(self, job: Job) -> None:
        """Delete a failed or cancelled job's upload unless a stored document or an active job
        uses the same file. A re-index has no upload of its own: its source stays."""
        if job.reindex is not None:
            return
        path = self.root / job.file
        with self._cond:
            if any(j.file == job.file and j.state in ACTIVE for j in self._jobs.values()):
                return
        with contextlib.suppress(Exception):
            if any(d.source == str(path.resolve()) for d in self.engine.documents()):
                return
        shutil.rmtree(path.parent, ignore_errors=True)

    def _events(self, job: Job, deadline: float | None = None) -> Events:
        """The Engine's index events → the job's progress (and the cancellation point; for a
        build in this process, also where it is stopped past `deadline`)."""
        def on_event(event: str, info: dict[str, Any]) -> None:
            if deadline is not None and time.monotonic() > deadline:
                raise JobTimedOut(job.name, self.timeout_s or 0.0)
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
            elif event in ("graph_start", "graph_retry_start"):
                p.graph, p.graph_nodes, p.graph_nodes_done, p.stage = "running", int(info.get("nodes", 0)), 0, "graph"
            elif event == "graph_advance":
                p.graph_nodes_done = min(p.graph_nodes_done + int(info.get("n", 0)), p.graph_nodes)
            elif event == "graph_done":
                p.graph, p.graph_nodes_done, p.stage = "done", p.graph_nodes, "committing"
            elif event == "graph_retry_done":
                p.graph, p.graph_nodes_done, p.stage = "done", p.graph_nodes, "committing"
            with self._cond:
                cancel = self._cancelled(job)
                self._save(job, throttle=event in ("embed_advance", "graph_advance"))
            if cancel:
                raise JobCancelled(job.id)
        return on_event

