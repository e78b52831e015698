"""Where per-document builds run: local worker processes, or one Ray task per document.

Neither is a scheduler of our own: local workers are a `concurrent.futures.ProcessPoolExecutor`
(spawn start method: no forked copies of loaded models or locks), Ray tasks are scheduled,
placed and retried by Ray. A runner only submits `worker.build_staged` for each job and yields
`(job, BuildResult | exception)` as builds finish, so the one writer can commit as they arrive.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Protocol

from bookindex.core.errors import ConfigError
from bookindex.core.events import Events
from bookindex.indexing.build_job import BuildJob
from bookindex.indexing.parallel.worker import BuildResult, ProviderFactory, build_staged, default_providers

Outcome = tuple[BuildJob, "BuildResult | BaseException"]
Progress = Events  # (event name, fields) of the builds in flight
RAY_OBJECT_STORE = 256 * 1024 * 1024  # a local instance's object store: results are a few MiB each


def _quiet(event: str, info: dict[str, Any]) -> None:
    return None


class Runner(Protocol):
    """Runs builds somewhere; yields each job's result (or its exception) as it finishes."""

    def run(self, jobs: list[BuildJob], stage_root: Path, on_progress: Progress = _quiet) -> Iterator[Outcome]: ...


PARENT_POLL_S = 1.0  # how often a local worker checks that the process that started it still runs


def _exit_with_parent(parent: int) -> None:
    """A pool worker's initializer: leave when the indexing process is gone. A pool's workers
    outlive a parent killed by a signal it cannot catch (SIGKILL, or SIGTERM's default action):
    they wait on its call queue for ever, each holding its loaded models (about 1 GB)."""
    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_S)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


class LocalRunner:
    """N worker processes on this machine; builds stage straight into the library's .tmp/.

    A worker that dies (killed, out of memory) breaks a process pool; its jobs, and the others in
    flight then, are resubmitted to a fresh pool, each at most `max_retries` times. A worker whose
    indexing process is killed leaves too (`_exit_with_parent`).
    """

    def __init__(self, workers: int, factory: ProviderFactory = default_providers, max_retries: int = 2) -> None:
        self.workers = max(1, workers)
        self.factory = factory
        self.max_retries = max_retries

    def run(self, jobs: list[BuildJob], stage_root: Path, on_progress: Progress = _quiet) -> Iterator[Outcome]:
        ctx = multiprocessing.get_context("spawn")
        pending = list(jobs)
        attempts: Counter[str] = Counter()
        while pending:
            with ProcessPoolExecutor(max_workers=min(self.workers, len(pending)), mp_context=ctx,
                                     initializer=_exit_with_parent, initargs=(os.getpid(),)) as pool:
                futures = {pool.submit(build_staged, job, str(stage_root), factory=self.factory): job
                           for job in pending}
                on_progress("submitted", {"jobs": len(pending), "workers": self.workers})
                pending = []
                for fut in as_completed(futures):
                    job = futures[fut]
                    try:
                        yield job, fut.result()
                    except BrokenProcessPool as exc:
                        attempts[job.doc_id] += 1
                        if attempts[job.doc_id] <= self.max_retries:
                            on_progress("retry", {"name": job.name, "attempt": attempts[job.doc_id] + 1})
                            pending.append(job)
                        else:
                            yield job, exc
                    except Exception as exc:  # the build's own error: this document fails, the rest go on
                        yield job, exc


def import_ray() -> Any:
    """The ray module, or a clear error naming the extra that installs it."""
    try:
        import ray  # deferred: an optional extra, and seconds to import
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'bookindex[ray]'") from None
    return ray


def _ray_build(job: BuildJob, factory: ProviderFactory) -> BuildResult:
    """The body of one Ray task: build in a private temporary folder, return it as tar bytes."""
    return build_staged(job, None, archive=True, factory=factory)


def _worker_env() -> dict[str, str]:
    """What a local Ray instance's workers need to import this same checkout and settings."""
    env = {k: v for k, v in os.environ.items() if k.startswith("BOOKINDEX_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


class RayRunner:
    """One Ray task per document on a Ray cluster: `address` "local" starts an instance here
    (`num_cpus`), "auto" or "ray://HOST:PORT" joins one. Tasks whose worker dies are retried by
    Ray (`max_retries`); at most `max_in_flight` tasks are submitted at once (default: twice the
    cluster's CPUs), so results never pile up in the object store faster than the writer commits."""

    def __init__(self, address: str, num_cpus: int | None = None, max_in_flight: int | None = None,
                 max_retries: int = 3, factory: ProviderFactory = default_providers) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.max_in_flight = max_in_flight
        self.max_retries = max_retries
        self.factory = factory

    def _connect(self, ray: Any) -> bool:
        """Start or join the cluster; True when this call started it (and must shut it down)."""
        if ray.is_initialized():
            return False
        if self.address == "local":
            ray.init(num_cpus=self.num_cpus, include_dashboard=False, log_to_driver=False,
                     object_store_memory=RAY_OBJECT_STORE, runtime_env={"env_vars": _worker_env()})
        else:
            try:
                ray.init(address=self.address, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError(f"--ray {self.address}: cannot join a Ray cluster ({exc}); start one with "
                                  "`ray start --head`, or use --ray local") from None
        return True

    def run(self, jobs: list[BuildJob], stage_root: Path, on_progress: Progress = _quiet) -> Iterator[Outcome]:
        ray = import_ray()
        started = self._connect(ray)
        try:
            cluster = ray.cluster_resources()
            cpus = int(cluster.get("CPU", 1))
            nodes = len([n for n in ray.nodes() if n.get("Alive")])
            cap = self.max_in_flight or max(1, 2 * cpus)
            task = ray.remote(num_cpus=1, max_retries=self.max_retries)(_ray_build)
            queue = deque(jobs)
            in_flight: dict[Any, BuildJob] = {}
            while queue or in_flight:
                while queue and len(in_flight) < cap:
                    job = queue.popleft()
                    in_flight[task.remote(job, self.factory)] = job
                on_progress("cluster", {"nodes": nodes, "cpus": cpus, "in_flight": len(in_flight),
                                        "queued": len(queue)})
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    job = in_flight.pop(ref)
                    try:
                        yield job, ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:  # the build raised: not retried
                        cause = getattr(exc, "cause", None)
                        yield job, cause if isinstance(cause, BaseException) else exc
                    except ray.exceptions.RayError as exc:  # worker lost beyond max_retries
                        yield job, exc
        finally:
            if started:
                ray.shutdown()


def make_runner(workers: int = 1, ray: str | None = None, ray_cpus: int | None = None,
                factory: ProviderFactory = default_providers, max_in_flight: int | None = None) -> Runner:
    """The runner the CLI flags ask for: Ray when an address is given, else local processes."""
    if ray:
        if ray != "local" and ray != "auto" and not ray.startswith("ray://") and ":" not in ray:
            raise ConfigError(f"--ray {ray!r}: use local, auto, ray://HOST:PORT or HOST:PORT")
        return RayRunner(ray, num_cpus=ray_cpus or (workers if workers > 1 else None),
                         max_in_flight=max_in_flight, factory=factory)
    return LocalRunner(workers, factory)
