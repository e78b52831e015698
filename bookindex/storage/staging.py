"""One document's build, apart from its commit: the unit of work a worker process or a Ray task runs.

`build_into` runs every stage for one `BuildJob` into a staging folder and writes its manifest;
it touches nothing else, so it can run anywhere: in the writer itself (a serial `Library.add`),
in a local worker process, or in a Ray task on another machine. The one writer (holding
`Library.writer`) then commits the folder with `Library.commit_build`: one rename into `docs/`
and one `os.replace` of library.json, exactly as a serial build does.

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
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from bookindex.core.atomic import write_json_atomic
from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.core.protocols import LLM, Embedder, Reranker
from bookindex.indexing.construction import build_document
from bookindex.providers.embedding import get_embedder
from bookindex.providers.llm import get_llm
from bookindex.providers.llm.cache import RecordingCache
from bookindex.providers.reranker import get_reranker

FORMAT_VERSION = 1  # the library format (bookindex.storage.library re-exports it)
MANIFEST = "manifest.json"
# Test hook for fault injection: "NAME:MARKER_DIR" makes the first attempt at building the
# document named NAME kill its process (os._exit) mid-build; MARKER_DIR records the attempts.
FAULT_ENV = "BOOKINDEX_FAULT_EXIT"

Events = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class BuildJob:
    """What a worker needs to build one document: the file, its identity and the settings."""

    source: str  # absolute path of the file (on a cluster: a path every worker can read)
    sha256: str
    doc_id: str
    name: str
    settings: Settings  # with the index options applied (Library.job_for)
    recorded: dict[str, Any]  # the options as recorded in the manifest
    # documents the commit removes besides those from the same source path: an upload that
    # replaces the document an earlier upload of the same file name made (the server)
    replaces: tuple[str, ...] = ()


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


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_build_dir(root: Path, doc_id: str) -> Path:
    """A fresh staging folder `<root>/<doc_id>.<stamp>` (the stamp names the generation)."""
    root.mkdir(parents=True, exist_ok=True)
    stamp = f"{int(time.time()):x}{uuid.uuid4().hex[:6]}"
    d = root / f"{doc_id}.{stamp}"
    d.mkdir()
    return d


def build_into(job: BuildJob, build_dir: Path, *, llm: Any, embedder: Any, reranker: Any,
               on_event: Events | None = None, progress: bool = False) -> dict[str, Any]:
    """Run every stage of `job` into `build_dir` and write its manifest; return the manifest."""
    src = Path(job.source)
    user_events = on_event or (lambda e, i: None)

    def events(event: str, info: dict[str, Any]) -> None:
        if event == "tree":
            fault_hook(job)  # mid-document: parsed, tree written, vectors and graph to come
        user_events(event, info)

    settings = job.settings
    t0 = time.perf_counter()
    report = build_document(src, build_dir, doc_id=job.doc_id, name=job.name, settings=settings,
                            llm=llm, embedder=embedder, reranker=reranker if settings.graph.enabled else None,
                            on_event=events, progress=progress)
    manifest = {
        "format_version": FORMAT_VERSION, "doc_id": job.doc_id, "name": job.name, "source": job.source,
        "sha256": job.sha256, "size": src.stat().st_size if src.is_file() else None,
        "pages": report["pages"], "parser": report["parser"], "options": job.recorded,
        "created": now(), "nodes": report["nodes"], "sections": report["sections"],
        "blocks": report["blocks"], "graph": bool(report.get("graph", {}).get("built")),
        "graph_failed": int(report.get("graph", {}).get("nodes_failed") or 0),
        "embedding": report.get("embedding"), "seconds": round(time.perf_counter() - t0, 3),
        "warnings": report.get("warnings", []),
    }
    write_json_atomic(build_dir / MANIFEST, manifest)
    return manifest


def build_staged(job: BuildJob, stage_root: str | None = None, *, archive: bool = False,
                 factory: ProviderFactory = default_providers) -> BuildResult:
    """The pure per-document build a worker runs: stage into `stage_root` (the library's .tmp/
    when the worker shares the writer's file system) or, with `archive`, into a private temporary
    folder returned as tar bytes and then deleted. Commits nothing."""
    t0 = time.perf_counter()
    check_job_source(job)
    providers = worker_providers(job.settings, factory)
    root = Path(stage_root) if stage_root else Path(tempfile.mkdtemp(prefix="bookindex-stage-"))
    build_dir = new_build_dir(root, job.doc_id)
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


def fault_hook(job: BuildJob) -> None:
    """Fault injection for tests ($BOOKINDEX_FAULT_EXIT = "NAME:MARKER_DIR"): the first attempt
    at `NAME` dies here, as a worker killed mid-document would; later attempts go on."""
    spec = os.environ.get(FAULT_ENV, "")
    name, sep, marker_dir = spec.partition(":")
    if not sep or name != job.name:
        return
    marker = Path(marker_dir) / f"attempt-{job.doc_id}"
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        with open(marker, "a", encoding="utf-8") as fh:
            fh.write(f"retry {os.getpid()}\n")
        return
    os.write(fd, f"killed {os.getpid()}\n".encode())
    os.close(fd)
    os._exit(17)


def check_job_source(job: BuildJob) -> None:
    """A worker that cannot read the file fails with the file's name (a cluster needs shared paths)."""
    if not Path(job.source).exists():
        raise InputError(f"{job.source}: not readable on worker {socket.gethostname()} "
                         "(on a cluster, every worker must see the same path)")
