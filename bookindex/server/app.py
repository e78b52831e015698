"""The FastAPI app: `create_app(engine or {name: engine}, keys)`; `bookindex serve` runs it
under uvicorn.

One app serves one library or several, each with its own Engine and job queue (`Library`); the
library routes exist once per library at `/libraries/{name}/...` and, for a one-library server,
at the root. Routes call the Engine and return its pydantic models (DocumentInfo, NodeView,
Answer, Plan, IndexReport inside a Job). Errors are problem documents (`problems`); the key is
checked by `middleware.KeyGuard` before a route runs and its grant by the route (`_library`: a
library the key cannot read is a 404, like one that does not exist); every user string that
names a library, document, node, job or file is checked by `validate` first; every body leaving
the app passes `redact.RedactBodies`, and `access_log.AccessLog` writes one line per request.
Sync routes run in Starlette's thread pool, so questions are answered in parallel while the job
workers index.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

import bookindex
from bookindex.core.atomic import write_json_atomic
from bookindex.core.config import Settings, cache_dir, load_settings
from bookindex.core.errors import InputError
from bookindex.core.memory import freeze_long_lived, space_out_collections
from bookindex.core.model import Evidence
from bookindex.engine import AskRequest, DocumentInfo, Engine, NodeView, PlanRequest
from bookindex.retrieval import Answer, Plan
from bookindex.server import api_docs, handlers, launch, limits, skills_api, validate
from bookindex.server.access_log import AccessLog
from bookindex.server.access_log import configure as configure_logging
from bookindex.server.auth import OPEN, Grant, Keys
from bookindex.server.inspector import mount as mount_inspector
from bookindex.server.inspector.routes import is_page as inspector_page
from bookindex.server.jobs import Job, JobManager
from bookindex.server.launch import libraries_under
from bookindex.server.middleware import BodyLimit, KeyGuard
from bookindex.server.pages import page_png
from bookindex.server.problem import Problem
from bookindex.server.redact import RedactBodies, Redactor, default_folders, public_document
from bookindex.server.sessions import Sessions
from bookindex.server.skill_folders import skill_folders
from bookindex.server.sse import ask_events
from bookindex.server.threads import limit_blas_threads
from bookindex.server.uploads import accept_upload, reindex_document, remove_document
from bookindex.server.views import MAX_DEPTH, TreeNode, outline
from bookindex.storage.catalog import CATALOG, CATALOG_FORMAT
from bookindex.storage.catalog import now as catalog_now

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
    k: int | None = Field(default=None, ge=1, le=limits.MAX_K)


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    documents: int
    jobs_active: int
    auth: Literal["open", "keys"]


class LibraryInfo(BaseModel):
    name: str
    documents: int
    jobs_active: int


class NewLibrary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str


class Library:
    """One served library: its Engine, its job queue, and the catalog watch that picks up changes
    other processes (`bookindex index`, another worker) made to it."""

    def __init__(self, name: str, engine: Engine, isolate_builds: bool) -> None:
        self.name = name
        self.engine = engine
        self.limits = engine.settings.server
        self.root = Path(engine.library.root)
        self.dir = self.root / SERVER_DIR
        self.jobs = JobManager(engine, self.dir, self.limits.max_jobs, isolate=isolate_builds,
                               timeout_s=self.limits.job_timeout_s)
        self._catalog_mtime: int | None = None
        self.on_refresh: list[Any] = []  # called with the Engine after the catalog was re-read

    def fresh(self) -> Engine:
        """The Engine, its catalog re-read when library.json changed on disk."""
        try:
            mtime = (self.root / "library.json").stat().st_mtime_ns
        except OSError:
            mtime = None
        if mtime != self._catalog_mtime:
            self.engine.refresh()  # and drops the versions it no longer names from the cache
            self._catalog_mtime = mtime
            for hook in self.on_refresh:
                hook(self.engine)
        return self.engine


class Server:
    """What the routes share: the served libraries by name, the keys and login sessions, the
    limits and the redactor. `home` (`bookindex serve ROOT`) is where libraries are created and
    looked for; a server started on one library has none and serves that one only."""

    def __init__(self, libraries: dict[str, Engine], keys: Keys, settings: Settings, isolate_builds: bool = True,
                 home: Path | None = None) -> None:
        self.keys = keys
        self.settings = settings
        self.limits = settings.server
        self.isolate = isolate_builds
        self.home = home
        self.libraries: dict[str, Library] = {}
        self.started = False  # the job queues run (between the app's start-up and shutdown)
        self._bare: Engine | None = None
        self._lock = threading.Lock()
        self.skills: dict[str, Path] = {}  # skill folders served (`serve --skills`), by folder name
        # folders no client learns of: responses name files by their last component only
        self.redactor = Redactor([cache_dir(settings), *default_folders(), *([home] if home else [])])
        state = home / SERVER_DIR if home is not None else None
        for name, engine in libraries.items():
            self._open(name, engine)
            state = state or self.libraries[name].dir
        self.sessions = Sessions((state or Path(".")) / "sessions", self.limits.session_ttl_s)

    def _open(self, name: str, engine: Engine) -> Library:
        lib = Library(name, engine, self.isolate)
        self.redactor.add(lib.root)
        lib.on_refresh.append(lambda e: self.redactor.add(*source_folders(e)))
        self.libraries[name] = lib
        if self.started:
            lib.jobs.start()
        return lib

    def start(self) -> None:
        self.started = True
        for lib in list(self.libraries.values()):
            lib.jobs.start()

    def stop(self) -> None:
        for lib in list(self.libraries.values()):
            lib.jobs.stop()

    # -- libraries -------------------------------------------------------------------------
    def names(self) -> list[str]:
        """The served libraries' names; under `home`, libraries other workers created since."""
        if self.home is not None:
            with self._lock:
                for name in libraries_under(self.home):
                    if name not in self.libraries:
                        self._open(name, Engine(self.home / name, self.settings))
                gone = [n for n, lib in self.libraries.items()
                        if lib.root.parent.resolve() == self.home.resolve() and not lib.root.is_dir()]
                for name in gone:
                    self.libraries.pop(name).jobs.stop(timeout=0.1)
        return sorted(self.libraries)

    def library(self, name: str, grant: Grant | None) -> Library:
        """A library the grant may read; 404 for any other, so a key never learns that a library
        it cannot read exists."""
        known = self.libraries.get(name)
        if known is None or not known.root.is_dir():  # created or deleted by another worker
            self.names()
        if grant is None or not grant.can_read(name) or name not in self.libraries:
            raise Problem(404, f"no library {name[:80]!r}")
        return self.libraries[name]

    def default(self, grant: Grant | None) -> Library:
        """The library the one-library routes (`/documents`, `/ask`, ...) serve: the only one."""
        names = self.names()
        if len(names) != 1:
            raise Problem(404, "this server serves several libraries: use /libraries/{name}/... "
                               "(GET /libraries lists those your key reads)")
        return self.library(names[0], grant)

    def create(self, name: str) -> Library:
        if self.home is None:
            raise Problem(409, "this server was started on one library; start it on a folder of libraries "
                               "(`bookindex serve ROOT`) to create libraries")
        with self._lock:
            if name in self.libraries or (self.home / name).exists():
                raise Problem(409, f"library {name!r} exists")
            engine = Engine(self.home / name, self.settings)
            create_empty_library(engine)
            return self._open(name, engine)

    def delete(self, name: str) -> Library:
        if self.home is None:
            raise Problem(409, "this server was started on one library; it cannot be deleted through the API")
        with self._lock:
            lib = self.libraries.pop(name)
            lib.jobs.stop()
            shutil.rmtree(lib.root, ignore_errors=True)
            return lib

    def check_question(self, text: str, field: str = "question") -> None:
        limits.question(text, self.limits, field)

    def any_engine(self) -> Engine:
        """An Engine for what belongs to no library (the skill folders of `--skills`): the first
        library's, or one over no library when none is served yet."""
        names = self.names()
        if names:
            return self.libraries[names[0]].engine
        if self._bare is None:
            self._bare = Engine(None, self.settings)
        return self._bare


def source_folders(engine: Engine) -> set[Path]:
    """The folders the library's documents were indexed from (kept private like the library's
    own); a folder near the file system's root is left out, so text naming `/usr` stays whole."""
    out = set()
    for d in engine.documents():
        parent = Path(d.source).parent if d.source else None
        if parent is not None and parent.is_absolute() and len(parent.parts) > 2:
            out.add(parent)
    return out


def create_empty_library(engine: Engine) -> None:
    """An empty library folder with its catalog, so the server (and `bookindex`) open it."""
    root = Path(engine.library.root)
    root.mkdir(parents=True, exist_ok=False)
    write_json_atomic(root / CATALOG, {"format_version": CATALOG_FORMAT, "created": catalog_now(), "documents": {}})
    engine.library.refresh()


def _grant(request: Request) -> Grant | None:
    grant: Grant | None = request.scope.get("state", {}).get("grant")
    return grant


def _library(request: Request) -> Library:
    """The library a library route serves: the one its path names (`/libraries/{library}/...`),
    else the only one served; 404 unless the request's key reads it."""
    srv: Server = request.app.state.server
    name = request.path_params.get("library")
    lib = srv.library(validate.library_name(name), _grant(request)) if name is not None else srv.default(_grant(request))
    request.scope.setdefault("state", {})["library"] = lib.name
    return lib


L = Annotated["Library", Depends(_library)]


def create_app(served: Engine | Mapping[str, Engine], keys: Keys | None = None, *, isolate_builds: bool = True,
               skills: dict[str, Path] | None = None, home: Path | None = None) -> FastAPI:
    """The app over one library (an Engine) or several (name -> Engine); keys default to those
    the settings name (environment, keys file). `home`: the folder libraries are created in and
    found under. `isolate_builds=False` runs index jobs in the server process, with the Engine's
    own providers (for an Engine given test doubles); by default each runs in a child process.
    `skills` (name -> folder, default: the settings' `server.skills`) adds the /skills routes."""
    engines = {library_name_of(served): served} if isinstance(served, Engine) else dict(served)
    settings = next(iter(engines.values())).settings if engines else load_settings()
    keys = keys if keys is not None else Keys.from_env(settings)
    srv = Server(engines, keys, settings, isolate_builds, home)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        srv.start()
        try:
            yield
        finally:
            srv.stop()

    api = FastAPI(title="bookindex", version=bookindex.__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Question answering over long documents: upload, index, browse, ask.")
    api.state.server = srv
    handlers.install(api)
    api_docs.install(api, "bookindex")
    folders = skills if skills is not None else skill_folders(settings.server.skills)
    srv.skills = folders
    srv.redactor.add(*folders.values())
    skills_api.install(api, srv.any_engine, folders, tags=["skills"])

    # -- health, libraries ----------------------------------------------------------------
    @api.get("/health", response_model=Health, tags=["server"])
    def health() -> Health:
        libs = [srv.libraries[n] for n in srv.names()]
        return Health(version=bookindex.__version__, documents=sum(len(lib.fresh().library) for lib in libs),
                      jobs_active=sum(lib.jobs.active() for lib in libs), auth="open" if keys.open else "keys")

    @api.get("/libraries", response_model=list[LibraryInfo], tags=["libraries"])
    def list_libraries(request: Request) -> list[LibraryInfo]:
        """The libraries your key may read."""
        grant = _grant(request)
        out = []
        for name in srv.names():
            if grant is not None and grant.can_read(name):
                lib = srv.libraries[name]
                out.append(LibraryInfo(name=name, documents=len(lib.fresh().library), jobs_active=lib.jobs.active()))
        return out

    @api.post("/libraries", status_code=201, response_model=LibraryInfo, tags=["libraries"])
    def create_library(body: NewLibrary, request: Request) -> Any:
        """Create an empty library under the server's folder (an admin key)."""
        grant = _grant(request)
        if grant is None or not grant.admin:
            raise Problem(403, "creating a library needs an admin key")
        lib = srv.create(validate.library_name(body.name))
        return _json(LibraryInfo(name=lib.name, documents=0, jobs_active=0), 201,
                     {"Location": f"/libraries/{lib.name}"})

    @api.delete("/libraries/{library}", response_model=LibraryInfo, tags=["libraries"])
    def delete_library(library: str, request: Request) -> LibraryInfo:
        """Delete a library, its documents and jobs (an admin key)."""
        grant = _grant(request)
        if grant is not None and grant.admin:  # an admin manages every library, read or not
            lib = srv.library(validate.library_name(library), OPEN)
        else:
            srv.library(validate.library_name(library), grant)  # 404 unless the key reads it
            raise Problem(403, "deleting a library needs an admin key")
        info = LibraryInfo(name=lib.name, documents=len(lib.fresh().library), jobs_active=lib.jobs.active())
        srv.delete(lib.name)
        return info

    routes = library_routes(srv)
    api.include_router(routes)
    api.include_router(routes, prefix="/libraries/{library}")

    mount_inspector(api)  # the web inspector at /ui/ (bookindex/server/inspector)

    limit = int(srv.limits.max_upload_mb * 2**20) + MULTIPART_SLACK
    api.add_middleware(BodyLimit, limit=limit, applies=is_upload_path)
    api.add_middleware(BodyLimit, limit=srv.limits.max_body_kb * 1024, applies=lambda p: not is_upload_path(p),
                       what="request body")
    # The inspector's login form and static files are open; its pages send a browser without a
    # key to the form.
    api.add_middleware(KeyGuard, keys=keys, open_paths=frozenset({"/health", "/ui/login"}),
                       open_prefixes=("/ui/static/", api_docs.STATIC_PREFIX + "/"), login="/ui/login",
                       sessions=srv.sessions, is_page=inspector_page)
    api.add_middleware(RedactBodies, redactor=srv.redactor)  # every body and header
    api.add_middleware(AccessLog)  # added last: runs first, so refused requests are logged too
    return api


def is_upload_path(path: str) -> bool:
    """The upload routes: `/documents` and the inspector's `/ui/upload`, and both under
    `/libraries/{name}`."""
    if path.startswith("/libraries/") and path.count("/") >= 3:
        path = "/" + path.split("/", 3)[3]
    return path in ("/documents", "/ui/upload")


def library_name_of(engine: Engine) -> str:
    """A library's name: its folder's name."""
    return Path(engine.library.root).resolve().name or "library"


def library_routes(srv: Server) -> APIRouter:
    """The routes over one library (`_library`: the only one, or the one the path names).
    Reading needs a key that reads it, writing one that writes it."""
    router = APIRouter()

    def writable(lib: Library, request: Request) -> None:
        grant = _grant(request)
        if grant is None or not grant.can_write(lib.name):
            raise Problem(403, f"this endpoint needs a key that writes library {lib.name!r} (an admin key, or a scoped key with write)")

    @router.get("/stats", tags=["library"])
    def stats(lib: L, doc: str | None = None) -> dict[str, Any]:
        return lib.fresh().stats(validate.doc_ref(doc) if doc else None)

    # -- documents ------------------------------------------------------------------------
    @router.get("/documents", response_model=list[DocumentInfo], tags=["documents"])
    def list_documents(lib: L) -> list[DocumentInfo]:
        return [public_document(d) for d in lib.fresh().documents()]

    @router.get("/documents/{doc}", response_model=DocumentInfo, tags=["documents"])
    def get_document(doc: str, lib: L) -> DocumentInfo:
        return public_document(lib.fresh().document(validate.doc_ref(doc)))

    @router.post("/documents", status_code=202, response_model=Job, tags=["documents"])
    async def upload(request: Request, lib: L, graph: bool | None = None, replace: bool = False) -> Any:
        """Upload a PDF, Markdown or text file (multipart field `file`); an index job starts.
        Poll `GET /jobs/{id}` (the `Location` header) until its state is done or failed. The
        same content stored with other options is refused (409) unless `replace=true`."""
        writable(lib, request)
        job = await accept_upload(lib, request, graph, replace)
        prefix = f"/libraries/{lib.name}" if "library" in request.path_params else ""
        return _json(job, 202, {"Location": f"{prefix}/jobs/{job.id}"})

    @router.post("/documents/{doc}/reindex", status_code=202, response_model=Job, tags=["documents"])
    def reindex(doc: str, lib: L, request: Request, graph: bool | None = None) -> Any:
        """Rebuild a stored document from its source file (a write key): an index job, forced even
        when nothing changed; `graph` switches its knowledge graph on or off (default: as built).
        Poll `GET /jobs/{id}` (the `Location` header). 409 when its source file is gone or a
        re-index of it is already queued."""
        writable(lib, request)
        job = reindex_document(lib, doc, graph)
        prefix = f"/libraries/{lib.name}" if "library" in request.path_params else ""
        return _json(job, 202, {"Location": f"{prefix}/jobs/{job.id}"})

    @router.delete("/documents/{doc}", response_model=DocumentInfo, tags=["documents"])
    def delete_document(doc: str, lib: L, request: Request) -> DocumentInfo:
        writable(lib, request)
        return public_document(remove_document(lib, doc))

    @router.get("/documents/{doc}/tree", response_model=TreeNode, tags=["documents"])
    def get_tree(doc: str, lib: L, depth: Annotated[int, Query(ge=0, le=MAX_DEPTH)] = 2,
                 sections_only: bool = True) -> TreeNode:
        return outline(lib.fresh().tree(validate.doc_ref(doc)), depth, sections_only)

    @router.get("/documents/{doc}/nodes/{node_id}", response_model=NodeView, tags=["documents"])
    def get_node(doc: str, node_id: str, lib: L) -> NodeView:
        engine = lib.fresh()
        info = engine.document(validate.doc_ref(doc))
        view = engine.node(validate.node_id(node_id))
        if view.doc_id != info.doc_id:
            raise Problem(404, f"node {node_id} is not in {info.name}")
        return view

    @router.get("/nodes/{node_id}", response_model=NodeView, tags=["documents"])
    def get_any_node(node_id: str, lib: L) -> NodeView:
        return lib.fresh().node(validate.node_id(node_id))

    @router.get("/documents/{doc}/pages/{page}.png", tags=["documents"],
                responses={200: {"content": {"image/png": {}}}})
    def get_page(doc: str, page: int, lib: L, dpi: int = 110) -> FileResponse:
        info = lib.fresh().document(validate.doc_ref(doc))
        path = page_png(info, page, dpi, lib.dir / "pages", srv.limits.max_dpi)
        return FileResponse(path, media_type="image/png", headers={"Cache-Control": "max-age=3600"})

    # -- jobs -----------------------------------------------------------------------------
    @router.get("/jobs", response_model=list[Job], tags=["jobs"])
    def list_jobs(lib: L, state: Literal["queued", "running", "done", "failed", "cancelled"] | None = None) -> list[Job]:
        return lib.jobs.list(state)

    @router.get("/jobs/{job_id}", response_model=Job, tags=["jobs"])
    def get_job(job_id: str, lib: L) -> Job:
        return lib.jobs.get(validate.job_id(job_id))

    @router.post("/jobs/{job_id}/cancel", response_model=Job, tags=["jobs"])
    def cancel_job(job_id: str, lib: L, request: Request) -> Job:
        writable(lib, request)
        return lib.jobs.cancel(validate.job_id(job_id))

    # -- questions ------------------------------------------------------------------------
    @router.post("/ask", response_model=Answer, tags=["questions"],
                 responses={200: {"content": {"text/event-stream": {}}}})
    def ask(req: AskRequest, request: Request, lib: L) -> Any:
        """Answer a question (the Engine's Answer), or with `Accept: text/event-stream` stream
        it as server-sent events: plan, evidence, token..., usage, done."""
        srv.check_question(req.question)
        if req.doc is not None:
            validate.doc_ref(req.doc)
        engine = lib.fresh()
        if "text/event-stream" in request.headers.get("accept", ""):
            return StreamingResponse(ask_events(engine, req), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        return engine.ask(req)

    @router.post("/plan", response_model=Plan, tags=["questions"])
    def plan(req: PlanRequest, lib: L) -> Plan:
        srv.check_question(req.question)
        return lib.fresh().plan(req.question, doc=validate.doc_ref(req.doc) if req.doc else None)

    @router.post("/run-plan", response_model=Answer, tags=["questions"])
    def run_plan(req: RunPlanRequest, lib: L) -> Answer:
        try:
            p = Plan.from_dict(req.plan)
        except (ValueError, TypeError, KeyError, InputError) as e:
            raise Problem(422, f"plan: {' '.join(str(e).split())[:300]}") from None
        srv.check_question(p.question)
        return lib.fresh().run_plan(p, doc=validate.doc_ref(req.doc) if req.doc else None)

    @router.post("/search", response_model=list[Evidence], tags=["questions"])
    def search(req: SearchRequest, lib: L) -> list[Evidence]:
        srv.check_question(req.query, "query")
        hits = lib.fresh().search(req.query, doc=validate.doc_ref(req.doc) if req.doc else None,
                                  method=req.method, k=req.k)
        return hits[:req.k] if req.k else hits  # the bookindex method ranks its own number

    return router


def _json(model: BaseModel, status: int, headers: dict[str, str]) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json"), status_code=status, headers=headers)


def pending_app() -> FastAPI:
    """The app `bookindex serve` starts (uvicorn's factory): built from `launch.pending()`."""
    p = launch.pending()
    limit_blas_threads(p.settings.server.blas_threads)
    space_out_collections(p.settings.server.gc_threshold)
    configure_logging()
    engines = {name: Engine(path, p.settings) for name, path in p.libraries.items()}
    app = create_app(engines, p.keys, home=p.home)
    srv: Server = app.state.server
    for lib in srv.libraries.values():
        for job_id in lib.jobs.interrupted:
            job = lib.jobs.get(job_id)
            p.say(f"library {lib.name}: job {job.id} ({job.name}) was interrupted (x{job.interruptions}); resuming it")
        p.say(f"library {lib.name} ({lib.root}): {len(lib.engine.library)} document(s)")
    p.say(f"API docs at http://{p.host}:{p.port}/docs")
    if p.settings.server.warm_up:
        threading.Thread(target=_warm_up, args=(srv, p.say), name="bookindex-warm-up", daemon=True).start()
    return app


def _warm_up(srv: Server, say: Callable[[str], None]) -> None:
    """Each served library's models and router, loaded while the server already answers."""
    for lib in list(srv.libraries.values()):
        t = time.perf_counter()
        try:
            parts = lib.engine.warm_up()
        except Exception as exc:  # noqa: BLE001 - a failed warm-up only leaves the work to the first question
            say(f"library {lib.name}: warm-up failed ({type(exc).__name__}: {exc}); the first question loads instead")
            continue
        done = ", ".join(f"{k} {v:.1f} s" for k, v in parts.items())
        say(f"library {lib.name}: ready in {time.perf_counter() - t:.1f} s ({done})")
    if srv.settings.server.gc_threshold > 0:
        freeze_long_lived()  # the models and routers just loaded live as long as the process
