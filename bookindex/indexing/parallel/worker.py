"""What a worker process or a Ray task runs: one document's build, staged, with the worker's models.

`build_staged` runs `build_into` (bookindex.indexing.build_job) for one `BuildJob` into a
staging folder and commits nothing, so it can run in a local worker process or in a Ray task on
another machine. The one writer (holding `DocumentLibrary.writer`) then commits the folder with
`DocumentLibrary.commit_build`: one rename into `docs/` and one `os.replace` of library.json,
exactly as a serial build does.

Across machines the staging folder travels as tar bytes (`pack` / `unpack`), and the LLM
completions a build made travel with it as cache rows (`BuildResult.cache_rows`) that the writer
merges into its own cache (see docs/distributed.md, "The LLM cache across workers").
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.core.protocols import LLM, Embedder, Reranker
from bookindex.indexing.build_job import BuildJob, build_into
from bookindex.providers.embedding import get_embedder
from bookindex.providers.llm import get_llm
from bookindex.providers.llm.cache import RecordingCache
from bookindex.providers.reranker import get_reranker
from bookindex.storage.catalog import new_generation_dir


@dataclass
class BuildResult:
    """A finished build: its staging folder (same machine) or its tar bytes (any machine)."""

    job: BuildJob
    manifest: dict[str, Any]
    folder: str | None = None
    archive: bytes | None = None
    cache_rows: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    worker: str = ""
    seconds: float = 0.0


@dataclass
class WorkerProviders:
    """The models one worker process builds with (loaded once per process, then reused)."""

    llm: LLM
    embedder: Embedder
    reranker: Reranker | None


ProviderFactory = Callable[[Settings], WorkerProviders]


def default_providers(settings: Settings) -> WorkerProviders:
    """The configured models, as the Engine would create them (embedders are per-process singletons)."""
    embedder = get_embedder(settings)
    reranker = get_reranker(settings, embedder=embedder) if settings.graph.enabled else None
    return WorkerProviders(get_llm(settings), embedder, reranker)


_PROVIDERS: dict[tuple[Any, str], WorkerProviders] = {}
_PROVIDERS_LOCK = threading.Lock()


def worker_providers(settings: Settings, factory: ProviderFactory) -> WorkerProviders:
    """The providers of this process for these settings: a worker builds many documents with
    one loaded embedder; its LLM client caches into a `RecordingCache` so new rows can leave."""
    key = (factory, settings.model_dump_json())
    with _PROVIDERS_LOCK:
        if key not in _PROVIDERS:
            made = factory(settings)
            client = made.llm
            if hasattr(client, "cache") and not isinstance(client.cache, RecordingCache):
                client.cache = RecordingCache(client.cache)
            _PROVIDERS[key] = made
        return _PROVIDERS[key]


def build_staged(job: BuildJob, stage_root: str | None = None, *, archive: bool = False,
                 factory: ProviderFactory = default_providers) -> BuildResult:
    """The pure per-document build a worker runs: stage into `stage_root` (the library's .tmp/
    when the worker shares the writer's file system) or, with `archive`, into a private temporary
    folder returned as tar bytes and then deleted. Commits nothing."""
    t0 = time.perf_counter()
    check_job_source(job)
    providers = worker_providers(job.settings, factory)
    root = Path(stage_root) if stage_root else Path(tempfile.mkdtemp(prefix="bookindex-stage-"))
    build_dir = new_generation_dir(root, job.doc_id)
    cache = getattr(providers.llm, "cache", None)
    if isinstance(cache, RecordingCache):
        cache.take()  # rows of an earlier (failed) document in this process are not ours
    try:
        manifest = build_into(job, build_dir, llm=providers.llm, embedder=providers.embedder,
                              reranker=providers.reranker)
        rows = cache.take() if isinstance(cache, RecordingCache) else []
        result = BuildResult(job, manifest, cache_rows=rows, worker=f"{socket.gethostname()}:{os.getpid()}")
        if archive:
            result.archive = pack(build_dir)
            shutil.rmtree(build_dir, ignore_errors=True)
        else:
            result.folder = str(build_dir)
    except BaseException:
        shutil.rmtree(build_dir, ignore_errors=True)
        raise
    finally:
        if not stage_root:
            shutil.rmtree(root, ignore_errors=True)
    result.seconds = round(time.perf_counter() - t0, 3)
    return result


def pack(folder: Path) -> bytes:
    """A staging folder as uncompressed tar bytes (vectors and JSON barely compress; speed wins)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for p in sorted(folder.rglob("*")):
            tar.add(p, arcname=p.relative_to(folder).as_posix(), recursive=False)
    return buf.getvalue()


def unpack(data: bytes, dest: Path) -> Path:
    """Extract `pack` bytes into the new folder `dest`: regular files and folders only, each
    inside `dest` (no links, no absolute paths, no device files; tarfile's "data" filter where
    this Python has it, and the same rules checked here for those that do not, e.g. 3.11.2)."""
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        members = tar.getmembers()
        root = dest.resolve()
        for m in members:
            target = (dest / m.name).resolve()
            if not (m.isfile() or m.isdir()) or m.name.startswith("/") or (target != root and root not in target.parents):
                raise ValueError(f"staged build archive: refused member {m.name!r} (only files and folders inside it)")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, members=members, filter="data")
        else:
            tar.extractall(dest, members=members)  # noqa: S202 - every member checked above
    return dest


def check_job_source(job: BuildJob) -> None:
    """A worker that cannot read the file fails with the file's name (a cluster needs shared paths)."""
    if not Path(job.source).exists():
        raise InputError(f"{job.source}: not readable on worker {socket.gethostname()} "
                         "(on a cluster, every worker must see the same path)")
