"""The one writer of a parallel or distributed index run: plan, hand builds out, commit as they arrive.

The writer holds `DocumentLibrary.writer` for the whole run (as a serial `bookindex index` does).
It decides per file what is needed (unchanged, graph retry: done here, serially; else a build
job), gives the builds to a `Runner` (local processes or Ray), and commits each finished staging
folder with `DocumentLibrary.commit_build` the moment it arrives: one rename, one catalog swap. A failed
document is counted failed and the rest go on. Worker LLM completions are merged into the
writer's cache (`merge_rows`).
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookindex.core.errors import BookIndexError
from bookindex.indexing.build_job import BuildJob
from bookindex.indexing.library import DocumentLibrary
from bookindex.indexing.parallel.executors import Progress, Runner
from bookindex.indexing.parallel.worker import unpack
from bookindex.indexing.stored_document import StoredDocument
from bookindex.providers.llm import open_cache
from bookindex.providers.llm.cache import merge_rows
from bookindex.storage.catalog import remove_if_empty


@dataclass
class BatchItem:
    """One input file's outcome: a stored document (with its status) or an error message."""

    path: str
    status: str  # added | replaced | unchanged | retried | failed
    doc: StoredDocument | None = None
    error: str | None = None
    worker: str = ""
    seconds: float = 0.0


def _noop(event: str, info: dict[str, Any]) -> None:
    return None


def index_batch(library: DocumentLibrary, paths: list[Path], runner: Runner, *, options: dict[str, Any] | None = None,
                on_item: Callable[[BatchItem], None] | None = None, on_progress: Progress = _noop,
                command: str | None = None) -> list[BatchItem]:
    """Index `paths` with builds on `runner` and this process as the single committing writer."""
    opts = options or {}
    emit = on_item or (lambda item: None)
    items: list[BatchItem] = []

    def done(item: BatchItem) -> None:
        items.append(item)
        emit(item)

    created_root = not library.root.exists()
    jobs: list[BuildJob] = []
    sources: dict[str, list[str]] = {}
    with library.writer(command, on_wait=lambda holder: on_progress("lock_wait", {"holder": holder})):
        for p in paths:
            t0 = time.perf_counter()
            try:
                job = library.job_for(p, **opts)
                current = library.current(job)
            except BookIndexError as exc:
                done(BatchItem(str(p), "failed", error=str(exc)))
                continue
            if current is not None:
                done(BatchItem(str(p), current.status, doc=current, seconds=round(time.perf_counter() - t0, 3)))
            elif job.doc_id in sources:  # the same content twice in one run: built once
                sources[job.doc_id].append(str(p))
            else:
                sources[job.doc_id] = [str(p)]
                jobs.append(job)
        on_progress("planned", {"builds": len(jobs), "total": len(paths)})
        stage = library.staging_root() / f"batch-{uuid.uuid4().hex[:8]}"
        stage.mkdir(parents=True, exist_ok=True)
        cache = open_cache(library.settings) if any(j.settings.llm.provider != "none" for j in jobs) else None
        try:
            for job, out in runner.run(jobs, stage, on_progress):
                if isinstance(out, BaseException):
                    message = str(out) if isinstance(out, BookIndexError) else \
                        f"{job.source}: could not be indexed ({type(out).__name__}: {out})"
                    done(BatchItem(job.source, "failed", error=message))
                    continue
                try:
                    folder = Path(out.folder) if out.folder else unpack(out.archive or b"", stage / Path(
                        f"{job.doc_id}.{uuid.uuid4().hex[:10]}"))
                    doc = library.commit_build(job, folder)
                    merge_rows(cache, out.cache_rows)
                except (BookIndexError, OSError) as exc:
                    done(BatchItem(job.source, "failed", error=f"{job.source}: commit failed ({exc})"))
                    continue
                done(BatchItem(job.source, doc.status, doc=doc, worker=out.worker, seconds=out.seconds))
                for dup in sources[job.doc_id][1:]:
                    done(BatchItem(dup, "unchanged", doc=library.get(job.doc_id)))
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    if created_root:
        remove_if_empty(library.root)
    return items
