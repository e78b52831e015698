"""Uploads, re-indexes and deletes, shared by the REST routes and the inspector's forms: an upload
is staged (hashed, size-capped), its content checked against its name, refused when the same
content is stored with other options (unless `replace`), then queued as the library's index job;
a re-index queues a forced rebuild of a stored document from its source file; a delete drops the
document, its page images and its upload.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request, UploadFile
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile as StarletteUpload

from bookindex.core.errors import InputError
from bookindex.engine import DocumentInfo, Engine
from bookindex.parsing.pdf_open import open_pdf
from bookindex.server import validate
from bookindex.server.jobs import Job
from bookindex.server.problem import Problem

if TYPE_CHECKING:
    from bookindex.server.app import Library

SUFFIXES = {".pdf": "application/pdf", ".md": "text/markdown", ".markdown": "text/markdown",
            ".txt": "text/plain", ".text": "text/plain"}


async def accept_upload(lib: Library, request: Request, graph: bool | None, replace: bool) -> Job:
    """The multipart field `file` of `request`, queued as an index job of `lib`."""
    form = await request.form(max_files=1, max_fields=4)
    file = form.get("file")
    if not isinstance(file, StarletteUpload):
        raise Problem(400, "multipart field 'file' with the document is required")
    name = validate.upload_name(file.filename)
    suffix = Path(name).suffix.lower()
    if suffix not in SUFFIXES:
        raise Problem(415, f"{name}: unsupported file type; upload {', '.join(sorted(SUFFIXES))}")
    staged, sha = await _stage(file, lib.dir / "uploads", int(lib.limits.max_upload_mb * 2**20))
    options = {"graph": graph} if graph is not None else {}
    try:  # PyMuPDF opens the file: off the event loop
        await run_in_threadpool(_check_content, staged, name, suffix, lib.limits.max_pages)
        if not replace:
            _refuse_changed_options(lib.fresh(), name, sha, options)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    return lib.jobs.submit(staged, name, sha, options)


def reindex_document(lib: Library, doc: str, graph: bool | None) -> Job:
    """Queue a re-index of a stored document of `lib` (a reference checked by `validate`): rebuilt
    from its source file with `graph` (None: as it was built), even when nothing changed. 409 when
    the source file is gone (a document indexed from a path that no longer exists)."""
    info = lib.fresh().document(validate.doc_ref(doc))
    if not info.source or not Path(info.source).is_file():
        raise Problem(409, f"{info.name}: its source file is gone; upload it again to rebuild it")
    stored = (info.manifest.get("options") or {}).get("graph")
    options = {"graph": graph if graph is not None else bool(stored if stored is not None else info.graph)}
    sha = str(info.manifest.get("sha256") or info.doc_id)
    return lib.jobs.submit_reindex(info.doc_id, info.name, sha, options)


def remove_document(lib: Library, doc: str) -> DocumentInfo:
    """Delete a document of `lib` (a reference checked by `validate`), with its files."""
    engine = lib.fresh()
    info = engine.document(validate.doc_ref(doc))
    removed = engine.remove(info.doc_id)
    _forget_files(lib, removed)
    return removed


async def _stage(file: UploadFile | StarletteUpload, folder: Path, limit: int) -> tuple[Path, str]:
    """Copy an upload to a staging file, hashing it; 413 past the limit."""
    folder.mkdir(parents=True, exist_ok=True)
    staged = folder / f"{uuid.uuid4().hex}.part"
    h = hashlib.sha256()
    size = 0
    try:
        with open(staged, "wb") as out:
            while chunk := await file.read(1 << 20):
                size += len(chunk)
                if size > limit:
                    raise Problem(413, f"{file.filename}: over the {limit / 2**20:.1f} MiB upload limit")
                h.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    if size == 0:
        staged.unlink(missing_ok=True)
        raise Problem(400, f"{file.filename}: empty file")
    return staged, h.hexdigest()


def _check_content(staged: Path, name: str, suffix: str, max_pages: int) -> None:
    """415 for content that is not what the name says; 413 past the page limit. A damaged PDF
    passes here: its job fails with the parser's message, as `bookindex index` would."""
    with open(staged, "rb") as fh:
        head = fh.read(1024)
    if suffix == ".pdf":
        if b"%PDF-" not in head:
            raise Problem(415, f"{name}: not a PDF (no %PDF header)")
        try:
            with open_pdf(staged) as pdf:
                pages = pdf.page_count
        except InputError:
            return
        if pages > max_pages:
            raise Problem(413, f"{name}: {pages} pages; the limit is {max_pages} pages per document")
    elif b"\x00" in head:
        raise Problem(415, f"{name}: binary content in a {suffix} file")


def _forget_files(lib: Library, removed: DocumentInfo) -> None:
    """After a delete: drop the document's page images, and its upload unless still in use."""
    shutil.rmtree(lib.dir / "pages" / removed.doc_id, ignore_errors=True)
    src = Path(removed.source or "")
    files = (lib.dir / "files").resolve()
    if src.parent.parent == files and not any(d.source == removed.source for d in lib.engine.documents()):
        shutil.rmtree(src.parent, ignore_errors=True)


def _refuse_changed_options(engine: Engine, name: str, sha: str, options: dict[str, Any]) -> None:
    """409 when this content is stored already, built with other options than this upload asks
    for: a rebuild would drop what the stored one has (a knowledge graph), so it needs
    `replace=true`."""
    doc_id = sha[:16]
    stored = next((d for d in engine.documents() if d.doc_id == doc_id), None)
    if stored is None:
        return
    before = stored.manifest.get("options") or {}
    after = engine.library.recorded_options(**options)
    changed = {k: (before.get(k), v) for k, v in after.items() if k in before and before[k] != v}
    if changed:
        diff = ", ".join(f"{k}={json.dumps(old)} -> {json.dumps(new)}" for k, (old, new) in sorted(changed.items()))
        raise Problem(409, f"{name} is stored already ({stored.name}) with other options ({diff}); "
                           "upload it with replace=true to rebuild it with the new options",
                      changed={k: {"stored": old, "requested": new} for k, (old, new) in changed.items()})


