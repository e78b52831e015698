"""The FastAPI app: `create_app(engine, keys)`; `bookindex serve` runs it under uvicorn.

Routes call the Engine and return its pydantic models (DocumentInfo, NodeView, Answer, Plan,
IndexReport inside a Job). Errors are problem documents (`problems`), keys are checked by
`middleware.KeyGuard` before a route runs, and every user string that names a document, node,
job or file is checked by `validate` first. Sync routes run in Starlette's thread pool, so
questions are answered in parallel while the job worker indexes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile as StarletteUpload

import bookindex
from bookindex.core.errors import InputError
from bookindex.core.model import Evidence
from bookindex.engine import AskRequest, DocumentInfo, Engine, NodeView, PlanRequest
from bookindex.parsing.pdf_open import open_pdf
from bookindex.retrieval import Answer, Plan
from bookindex.server import handlers, launch, skills_api, validate
from bookindex.server.auth import Keys, Role, allows
from bookindex.server.inspector import mount as mount_inspector
from bookindex.server.jobs import Job, JobManager
from bookindex.server.middleware import BodyLimit, KeyGuard
from bookindex.server.pages import page_png
from bookindex.server.problem import Problem
from bookindex.server.skill_folders import skill_folders
from bookindex.server.sse import ask_events
from bookindex.server.threads import limit_blas_threads
from bookindex.server.views import MAX_DEPTH, TreeNode, outline

SERVER_DIR = ".server"  # LIB/.server: jobs, uploads, page images (hidden: not part of the catalog)
SUFFIXES = {".pdf": "application/pdf", ".md": "text/markdown", ".markdown": "text/markdown",
            ".txt": "text/plain", ".text": "text/plain"}
MULTIPART_SLACK = 64 * 1024  # multipart framing around the file, allowed over the upload limit


class RunPlanRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan: dict[str, Any]
    doc: str | None = None


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    doc: str | None = None
    method: str = "bookindex"
    k: int | None = Field(default=None, ge=1, le=100)


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    documents: int
    jobs_active: int
    auth: Literal["open", "keys"]


class Server:
    """What the routes share: the Engine, the jobs, the keys, the limits, and the catalog
    watch that picks up changes other processes (`bookindex index`) made to the library."""

    def __init__(self, engine: Engine, keys: Keys, isolate_builds: bool = True) -> None:
        self.engine = engine
        self.keys = keys
        self.limits = engine.settings.server
        self.root = Path(engine.library.root)
        self.dir = self.root / SERVER_DIR
        self.jobs = JobManager(engine, self.dir, self.limits.max_jobs, isolate=isolate_builds,
                               timeout_s=self.limits.job_timeout_s)
        self.skills: dict[str, Path] = {}  # skill folders served (`serve --skills`), by folder name
        self._catalog_mtime: int | None = None

    def fresh(self) -> Engine:
        """The Engine, its catalog re-read when library.json changed on disk."""
        try:
            mtime = (self.root / "library.json").stat().st_mtime_ns
        except OSError:
            mtime = None
        if mtime != self._catalog_mtime:
            self.engine.library.refresh()
            self._catalog_mtime = mtime
        return self.engine

    def check_question(self, text: str) -> None:
        if len(text) > self.limits.max_question_chars:
            raise Problem(422, f"question is {len(text)} characters; the limit is {self.limits.max_question_chars}")


def _engine(request: Request) -> Engine:
    """The request's Engine, catalog fresh (a route dependency)."""
    server: Server = request.app.state.server
    return server.fresh()


E = Annotated[Engine, Depends(_engine)]


def create_app(engine: Engine, keys: Keys | None = None, *, isolate_builds: bool = True,
               skills: dict[str, Path] | None = None) -> FastAPI:
    """The app for one library; keys default to the environment variables the settings name.
    `isolate_builds=False` runs index jobs in the server process, with the Engine's own
    providers (for an Engine given test doubles); by default each runs in a child process.
    `skills` (name -> folder, default: the settings' `server.skills`) adds the /skills routes."""
    keys = keys if keys is not None else Keys.from_env(engine.settings)
    srv = Server(engine, keys, isolate_builds)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        srv.jobs.start()
        try:
            yield
        finally:
            srv.jobs.stop()

    api = FastAPI(title="bookindex", version=bookindex.__version__, lifespan=lifespan,
                  description="Question answering over long documents: upload, index, browse, ask.")
    api.state.server = srv
    handlers.install(api)
    folders = skills if skills is not None else skill_folders(engine.settings.server.skills)
    srv.skills = folders
    skills_api.install(api, srv.fresh, folders, tags=["skills"])

    def need(role: Role) -> Any:
        def check(request: Request) -> None:
            if not allows(request.scope.get("state", {}).get("role"), role):
                raise Problem(403, f"this endpoint needs an {role} key")
        return Depends(check)

    # -- health, stats --------------------------------------------------------------------
    @api.get("/health", response_model=Health, tags=["server"])
    def health() -> Health:
        return Health(version=bookindex.__version__, documents=len(srv.fresh().library),
                      jobs_active=srv.jobs.active(), auth="open" if keys.open else "keys")

    @api.get("/stats", tags=["library"])
    def stats(engine: E, doc: str | None = None) -> dict[str, Any]:
        return engine.stats(validate.doc_ref(doc) if doc else None)

    # -- documents ------------------------------------------------------------------------
    @api.get("/documents", response_model=list[DocumentInfo], tags=["documents"])
    def list_documents(engine: E) -> list[DocumentInfo]:
        return engine.documents()

    @api.get("/documents/{doc}", response_model=DocumentInfo, tags=["documents"])
    def get_document(doc: str, engine: E) -> DocumentInfo:
        return engine.document(validate.doc_ref(doc))

    @api.post("/documents", status_code=202, response_model=Job, tags=["documents"],
              dependencies=[need("admin")])
    async def upload(request: Request, graph: bool | None = None) -> Any:
        """Upload a PDF, Markdown or text file (multipart field `file`); an index job starts.
        Poll `GET /jobs/{id}` (the `Location` header) until its state is done or failed."""
        form = await request.form(max_files=1, max_fields=4)
        file = form.get("file")
        if not isinstance(file, StarletteUpload):
            raise Problem(400, "multipart field 'file' with the document is required")
        name = validate.upload_name(file.filename)
        suffix = Path(name).suffix.lower()
        if suffix not in SUFFIXES:
            raise Problem(415, f"{name}: unsupported file type; upload {', '.join(sorted(SUFFIXES))}")
        staged, sha = await _stage(file, srv.dir / "uploads", int(srv.limits.max_upload_mb * 2**20))
        try:  # PyMuPDF opens the file: off the event loop
            await run_in_threadpool(_check_content, staged, name, suffix, srv.limits.max_pages)
        except BaseException:
            staged.unlink(missing_ok=True)
            raise
        options = {"graph": graph} if graph is not None else {}
        job = srv.jobs.submit(staged, name, sha, options)
        return _json(job, 202, {"Location": f"/jobs/{job.id}"})

    @api.delete("/documents/{doc}", response_model=DocumentInfo, tags=["documents"],
                dependencies=[need("admin")])
    def delete_document(doc: str, engine: E) -> DocumentInfo:
        info = engine.document(validate.doc_ref(doc))
        removed = engine.remove(info.doc_id)
        _forget_files(srv, removed)
        return removed

    @api.get("/documents/{doc}/tree", response_model=TreeNode, tags=["documents"])
    def get_tree(doc: str, engine: E, depth: Annotated[int, Query(ge=0, le=MAX_DEPTH)] = 2,
                 sections_only: bool = True) -> TreeNode:
        return outline(engine.tree(validate.doc_ref(doc)), depth, sections_only)

    @api.get("/documents/{doc}/nodes/{node_id}", response_model=NodeView, tags=["documents"])
    def get_node(doc: str, node_id: str, engine: E) -> NodeView:
        info = engine.document(validate.doc_ref(doc))
        view = engine.node(validate.node_id(node_id))
        if view.doc_id != info.doc_id:
            raise Problem(404, f"node {node_id} is not in {info.name}")
        return view

    @api.get("/nodes/{node_id}", response_model=NodeView, tags=["documents"])
    def get_any_node(node_id: str, engine: E) -> NodeView:
        return engine.node(validate.node_id(node_id))

    @api.get("/documents/{doc}/pages/{page}.png", tags=["documents"],
             responses={200: {"content": {"image/png": {}}}})
    def get_page(doc: str, page: int, engine: E, dpi: int = 110) -> FileResponse:
        info = engine.document(validate.doc_ref(doc))
        path = page_png(info, page, dpi, srv.dir / "pages", srv.limits.max_dpi)
        return FileResponse(path, media_type="image/png", headers={"Cache-Control": "max-age=3600"})

    # -- jobs -----------------------------------------------------------------------------
    @api.get("/jobs", response_model=list[Job], tags=["jobs"])
    def list_jobs(state: Literal["queued", "running", "done", "failed", "cancelled"] | None = None) -> list[Job]:
        return srv.jobs.list(state)

    @api.get("/jobs/{job_id}", response_model=Job, tags=["jobs"])
    def get_job(job_id: str) -> Job:
        return srv.jobs.get(validate.job_id(job_id))

    @api.post("/jobs/{job_id}/cancel", response_model=Job, tags=["jobs"], dependencies=[need("admin")])
    def cancel_job(job_id: str) -> Job:
        return srv.jobs.cancel(validate.job_id(job_id))

    # -- questions ------------------------------------------------------------------------
    @api.post("/ask", response_model=Answer, tags=["questions"],
              responses={200: {"content": {"text/event-stream": {}}}})
    def ask(req: AskRequest, request: Request, engine: E) -> Any:
        """Answer a question (the Engine's Answer), or with `Accept: text/event-stream` stream
        it as server-sent events: plan, evidence, token..., usage, done."""
        srv.check_question(req.question)
        if req.doc is not None:
            validate.doc_ref(req.doc)
        if "text/event-stream" in request.headers.get("accept", ""):
            return StreamingResponse(ask_events(engine, req), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        return engine.ask(req)

    @api.post("/plan", response_model=Plan, tags=["questions"])
    def plan(req: PlanRequest, engine: E) -> Plan:
        srv.check_question(req.question)
        return engine.plan(req.question, doc=validate.doc_ref(req.doc) if req.doc else None)

    @api.post("/run-plan", response_model=Answer, tags=["questions"])
    def run_plan(req: RunPlanRequest, engine: E) -> Answer:
        try:
            p = Plan.from_dict(req.plan)
        except (ValueError, TypeError, KeyError, InputError) as e:
            raise Problem(422, f"plan: {' '.join(str(e).split())[:300]}") from None
        srv.check_question(p.question)
        return engine.run_plan(p, doc=validate.doc_ref(req.doc) if req.doc else None)

    @api.post("/search", response_model=list[Evidence], tags=["questions"])
    def search(req: SearchRequest, engine: E) -> list[Evidence]:
        srv.check_question(req.query)
        hits = engine.search(req.query, doc=validate.doc_ref(req.doc) if req.doc else None,
                             method=req.method, k=req.k)
        return hits[:req.k] if req.k else hits  # the bookindex method ranks its own number

    mount_inspector(api)  # the web inspector at /ui/ (bookindex/server/inspector)

    limit = int(srv.limits.max_upload_mb * 2**20) + MULTIPART_SLACK
    api.add_middleware(BodyLimit, limit=limit, paths=frozenset({"/documents"}))
    # added last: runs first. The inspector's key form and static files are open; its pages
    # send a browser without a key to the form.
    api.add_middleware(KeyGuard, keys=keys, open_paths=frozenset({"/health", "/ui/login"}),
                       open_prefixes=("/ui/static/",), login="/ui/login")
    return api


def _json(model: BaseModel, status: int, headers: dict[str, str]) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json"), status_code=status, headers=headers)


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


def _forget_files(srv: Server, removed: DocumentInfo) -> None:
    """After a delete: drop the document's page images, and its upload unless still in use."""
    shutil.rmtree(srv.dir / "pages" / removed.doc_id, ignore_errors=True)
    src = Path(removed.source or "")
    files = (srv.dir / "files").resolve()
    if src.parent.parent == files and not any(d.source == removed.source for d in srv.engine.documents()):
        shutil.rmtree(src.parent, ignore_errors=True)


def pending_app() -> FastAPI:
    """The app `bookindex serve` starts (uvicorn's factory): built from `launch.pending()`."""
    p = launch.pending()
    limit_blas_threads(p.settings.server.blas_threads)
    engine = Engine(p.library, p.settings)
    app = create_app(engine, p.keys)
    jobs = app.state.server.jobs
    for job_id in jobs.interrupted:
        job = jobs.get(job_id)
        p.say(f"job {job.id} ({job.name}) was interrupted (x{job.interruptions}); resuming it")
    p.say(f"library {engine.root}: {len(engine.library)} document(s); API docs at http://{p.host}:{p.port}/docs")
    return app
