"""One document's build into a staging folder, apart from its commit: the unit a writer or a worker runs.

`build_into` runs every stage for one `BuildJob` into a staging folder and writes its manifest;
it touches nothing else, so it can run anywhere: in the writer itself (a serial
`DocumentLibrary.add`), in a local worker process, or in a Ray task on another machine
(bookindex.indexing.parallel). The one writer then commits the folder through the library's
catalog: one rename into `docs/` and one `os.replace` of library.json.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookindex.core.config import Settings
from bookindex.core.events import Events
from bookindex.indexing.construction import build_document
from bookindex.indexing.document_folder import FORMAT_VERSION, write_manifest
from bookindex.storage.catalog import now

# Test hook for fault injection: "NAME:MARKER_DIR" makes the first attempt at building the
# document named NAME kill its process (os._exit) mid-build; MARKER_DIR records the attempts.
FAULT_ENV = "BOOKINDEX_FAULT_EXIT"


@dataclass(frozen=True)
class BuildJob:
    """What a worker needs to build one document: the file, its identity and the settings."""

    source: str  # absolute path of the file (on a cluster: a path every worker can read)
    sha256: str
    doc_id: str
    name: str
    settings: Settings  # with the index options applied (DocumentLibrary.job_for)
    recorded: dict[str, Any]  # the options as recorded in the manifest
    # documents the commit removes besides those from the same source path: an upload that
    # replaces the document an earlier upload of the same file name made (the server)
    replaces: tuple[str, ...] = ()


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
        # what the document says about itself (title, organisation, form, period, fiscal year)
        "identity": report.get("identity", {}),
    }
    write_manifest(build_dir, manifest)
    return manifest


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
