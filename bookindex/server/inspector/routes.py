"""The inspector's routes under `/ui/`: server-rendered pages (Jinja2, autoescaped) and the two
JSON fragments the page script loads lazily (a tree node's children, a node with its boxes).

Every route calls the Engine only (through the library's catalog-fresh `Library.fresh()`), checks
ids with `validate` first, and renders Engine errors as a page with the problem's status. Page
images come from the REST route `/documents/{doc}/pages/{n}.png` (the PNG cache).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from bookindex.core.errors import BookIndexError, InputError
from bookindex.engine import METHODS, AskRequest, Engine
from bookindex.retrieval import Answer, Plan
from bookindex.server import validate
from bookindex.server.inspector import present
from bookindex.server.middleware import session_cookie
from bookindex.server.problem import Problem, status_of
from bookindex.server.sessions import COOKIE
from bookindex.server.uploads import accept_upload, reindex_document, remove_document
from bookindex.skills.navigator.answer import SkillsAskRequest

if TYPE_CHECKING:
    from bookindex.server.app import Library, Server

HERE = Path(__file__).resolve().parent
PREFIX = "/ui"
DPI = 110  # page images the viewer asks for (the REST route's default, so both share one cache)
COMPARE = tuple(m for m in METHODS if m != "bookindex")


def environment() -> Environment:
    """Jinja2 with autoescape on for every template: no user string is ever markup."""
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.globals.update(prefix=PREFIX, dpi=DPI)
    return env


ENV = environment()


def page_prefixes(request: Request) -> tuple[str, str]:
    """(the inspector's prefix, the REST prefix) for this request: `/ui` and `` on the one
    library's pages, `/libraries/NAME/ui` and `/libraries/NAME` on a named library's."""
    name = request.path_params.get("library")
    if name is None:
        return PREFIX, ""
    api = f"/libraries/{quote(validate.library_name(name), safe='')}"
    return api + PREFIX, api


def render(request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    """A page; its navigation and its Sign out are there only for a reader the request's key or
    session lets in (`signed_in`): the sign-in form a signed-out browser sees offers nothing it
    cannot use (every other page would send it straight back to the form)."""
    srv: Server = request.app.state.server
    prefix, api = page_prefixes(request)
    signed_in = request.scope.get("state", {}).get("grant") is not None  # KeyGuard's: OPEN on an open server
    html = ENV.get_template(template).render(request=request, keyed=not srv.keys.open, signed_in=signed_in,
                                             prefix=prefix, api=api, ui=PREFIX, **ctx)
    return HTMLResponse(html, status_code=status,
                        headers={"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                                 "style-src 'self'; script-src 'self'; frame-ancestors 'none'",
                                 "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"})


def error_page(request: Request, exc: Exception) -> HTMLResponse:
    """An Engine or request error as a page with the status the REST API would give."""
    if isinstance(exc, Problem):
        status, detail = exc.status, exc.detail
    elif isinstance(exc, BookIndexError):
        status, detail = status_of(exc), " ".join(str(exc).split())
    else:
        raise exc
    return render(request, "error.html", status=status, status_code=status, detail=detail)


def _srv(request: Request) -> "Server":
    server: Server = request.app.state.server
    return server


def _engine(request: Request) -> Engine:
    """The page's library (named in the path, else the only one), if the request's key reads it
    (404 otherwise, as the API)."""
    grant = request.scope.get("state", {}).get("grant")
    name = request.path_params.get("library")
    srv = _srv(request)
    lib = srv.library(validate.library_name(name), grant) if name is not None else srv.default(grant)
    request.scope.setdefault("state", {})["library"] = lib.name
    return lib.fresh()


def safe_next(value: str | None) -> str:
    """Where a login goes back to: an inspector path only, never another site."""
    if value and is_page(value) and not value.startswith("//") and "\\" not in value:
        return value
    return PREFIX + "/"


LIBRARY_PAGE = re.compile(r"/libraries/[A-Za-z0-9][A-Za-z0-9._-]{0,63}" + PREFIX + "/")


def is_page(path: str) -> bool:
    """Whether a path is an inspector page: `/ui/...` or `/libraries/NAME/ui/...`."""
    return path.startswith(PREFIX + "/") or LIBRARY_PAGE.match(path) is not None


router = APIRouter(prefix=PREFIX, include_in_schema=False)


# -- auth: a key form that opens a server-side session; the cookie holds its random id ---------
@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str | None = None) -> HTMLResponse:  # noqa: A002
    return render(request, "login.html", next=safe_next(next), failed=False)


@router.post("/login", response_model=None)
def login(request: Request, key: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "") -> Response:  # noqa: A002
    srv = _srv(request)
    grant = srv.keys.grant(key.strip())
    if grant is None or srv.keys.open:
        return render(request, "login.html", status=401, next=safe_next(next), failed=True)
    request.scope.setdefault("state", {})["key_id"] = grant.id
    session = srv.sessions.create(grant.id)
    resp = RedirectResponse(safe_next(next), status_code=303)
    resp.set_cookie(COOKIE, session, httponly=True, samesite="strict", path="/", max_age=int(srv.sessions.ttl_s),
                    secure=request.url.scheme == "https")
    return resp


@router.post("/logout")
def logout(request: Request) -> RedirectResponse:
    """End the session on the server (its id no longer opens anything), then drop the cookie."""
    _srv(request).sessions.end(session_cookie(request.headers.get("cookie", "")))
    resp = RedirectResponse(PREFIX + "/login", status_code=303)
    resp.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return resp


# -- library -------------------------------------------------------------------------------------
@router.get("/", response_class=HTMLResponse)
def library(request: Request) -> HTMLResponse:
    srv = _srv(request)
    if "library" not in request.path_params and len(srv.names()) != 1:  # several: choose one
        grant = request.scope.get("state", {}).get("grant")
        names = [n for n in srv.names() if grant is not None and grant.can_read(n)]
        return render(request, "libraries.html", libraries=names)
    engine = _engine(request)
    name = request.scope["state"]["library"]
    grant = request.scope.get("state", {}).get("grant")
    try:
        docs = engine.documents() if engine.exists() else []
        rows = [{"info": d, "stats": _stats(request, engine, d.doc_id)} for d in docs]
    except (BookIndexError, Problem) as e:
        return error_page(request, e)
    jobs = srv.libraries[name].jobs.list()[:10]
    return render(request, "library.html", docs=rows, library=name, jobs=jobs,
                  writable=grant is not None and grant.can_write(name))


def _writable(request: Request) -> "Library":
    """The page's library, if the request's key writes it (403 when it only reads it)."""
    _engine(request)
    srv = _srv(request)
    name = request.scope["state"]["library"]
    grant = request.scope.get("state", {}).get("grant")
    if grant is None or not grant.can_write(name):
        raise Problem(403, f"uploading, re-indexing and deleting need a key that writes library {name!r}")
    return srv.libraries[name]


@router.post("/upload", response_model=None)
async def upload_page(request: Request) -> Response:
    """The library page's upload form (multipart `file`, checkboxes `graph`, `replace`): queue an
    index job as `POST /documents` does, then back to the library page, which lists the job."""
    prefix, _ = page_prefixes(request)
    try:
        lib = _writable(request)
        form = await request.form(max_files=1, max_fields=4)
        graph = form.get("graph") == "on"
        replace = form.get("replace") == "on"
        job = await accept_upload(lib, request, graph, replace)
    except (BookIndexError, Problem) as e:
        return error_page(request, e)
    return RedirectResponse(f"{prefix}/?job={job.id}", status_code=303)


@router.post("/documents/{doc}/reindex", response_model=None)
async def reindex_page(request: Request, doc: str) -> Response:
    """The library page's re-index button (a write key): a forced rebuild of the document from its
    source, with the knowledge graph as its checkbox says, queued as `POST /documents/{doc}/reindex`
    does; then back to the library page, which lists the job."""
    prefix, _ = page_prefixes(request)
    try:
        lib = _writable(request)
        form = await request.form(max_files=0, max_fields=2)
        job = reindex_document(lib, doc, form.get("graph") == "on")
    except (BookIndexError, Problem) as e:
        return error_page(request, e)
    return RedirectResponse(f"{prefix}/?job={job.id}", status_code=303)


@router.post("/documents/{doc}/delete", response_model=None)
def delete_page(request: Request, doc: str) -> Response:
    """The library page's delete button (a write key): the document goes, as `DELETE /documents/{doc}`."""
    prefix, _ = page_prefixes(request)
    try:
        remove_document(_writable(request), doc)
    except (BookIndexError, Problem) as e:
        return error_page(request, e)
    return RedirectResponse(f"{prefix}/", status_code=303)


STATS_CACHE: dict[tuple[str, str], dict[str, Any]] = {}


def _stats(request: Request, engine: Engine, doc_id: str) -> dict[str, Any]:
    """A document's graph and LLM statistics, computed once per generation (graph diameters
    take seconds on a large graph)."""
    stored = engine.cache.browse(doc_id)
    key = (doc_id, stored.dir.name)
    if key not in STATS_CACHE:
        s = engine.stats(doc_id)
        llm = (s.get("llm") or {}).get("total") or {}
        STATS_CACHE[key] = {"entities": s.get("entities", 0), "relations": s.get("relations", 0),
                            "components": s.get("components", 0), "er_merges": s.get("er_merges", 0),
                            "nodes": s.get("nodes", {}), "llm_calls": int(llm.get("calls", 0) or 0),
                            "llm_tokens": int((llm.get("prompt_tokens", 0) or 0) + (llm.get("completion_tokens", 0) or 0)),
                            "nodes_failed": s.get("nodes_failed", 0), "extractor": s.get("extractor") or ""}
    return STATS_CACHE[key]


# -- document: tree, node, pages ---------------------------------------------------------------
@router.get("/documents/{doc}", response_class=HTMLResponse)
def document(request: Request, doc: str) -> HTMLResponse:
    engine = _engine(request)
    try:
        info = engine.document(validate.doc_ref(doc))
        stored = engine.cache.browse(info.doc_id)
        tree = stored.tree
        pages = engine.page_info(info.doc_id)
    except (BookIndexError, Problem) as e:
        return error_page(request, e)
    data = {"doc": info.doc_id, "name": info.name, "root": present.node_row(tree, tree.root),
            "rows": present.top_rows(tree), "pages": pages.pages,
            "sizes": pages.sizes, "labels": pages.labels, "pdf": (info.source or "").lower().endswith(".pdf")}
    return render(request, "document.html", info=info, data=data, nodes=len(tree))


@router.get("/api/documents/{doc}/children/{node_id}")
def children(request: Request, doc: str, node_id: str) -> JSONResponse:
    engine = _engine(request)
    stored = engine.cache.browse(validate.doc_ref(doc))
    nid = validate.node_id(node_id)
    if nid not in stored.tree.nodes:
        raise Problem(404, f"{stored.name}: no node {nid}")
    return JSONResponse(present.children_rows(stored.tree, nid))


@router.get("/api/documents/{doc}/matter/{group}")
def matter(request: Request, doc: str, group: str) -> JSONResponse:
    """The rows of a folded group of the document page's first level (`front` or `back` matter)."""
    engine = _engine(request)
    stored = engine.cache.browse(validate.doc_ref(doc))
    rows = present.group_rows(stored.tree, group) if group in present.FOLDS else None
    if rows is None:
        raise Problem(404, f"{stored.name}: no {quote(group[:40])} matter")
    return JSONResponse(rows)


@router.get("/api/nodes/{node_id}")
def node(request: Request, node_id: str) -> JSONResponse:
    """A node (the Engine's NodeView) with its boxes on every page it spans."""
    engine = _engine(request)
    view = engine.node(validate.node_id(node_id))
    tree = engine.cache.browse(view.doc_id).tree
    n = tree.nodes[view.id]
    body = view.model_dump(mode="json", exclude={"image_file"})
    body.update(boxes=present.node_boxes(tree, view.id), entry=present.entry_name(n),
                path_ids=[p.id for p in tree.parent_path(n)], label=n.label)
    return JSONResponse(body)


# -- graph -------------------------------------------------------------------------------------
@router.get("/documents/{doc}/graph", response_class=HTMLResponse)
def graph(request: Request, doc: str, q: str = "", entity: str | None = None) -> HTMLResponse:
    engine = _engine(request)
    try:
        info = engine.document(validate.doc_ref(doc))
        if q:
            _srv(request).check_question(q, "q")
        found = engine.graph.entities(info.doc_id, q, limit=50)
        view = engine.graph.entity(info.doc_id, validate.entity_id(entity)) if entity else None
        tree = engine.cache.browse(info.doc_id).tree
    except (BookIndexError, Problem) as e:
        return error_page(request, e)
    linked = [present.node_row(tree, tree.nodes[n]) for n in (view.node_ids if view else [])[:200]]
    drawing = None
    if view is not None:
        drawing = present.graph_data(view, engine.graph.links(info.doc_id, present.drawn_ids(view)))
    return render(request, "graph.html", info=info, q=q, found=found, view=view, linked=linked, drawing=drawing)


# -- ask: answer, citations, plan trace, plan editor, baselines ---------------------------------
@router.get("/ask", response_class=HTMLResponse)
def ask_page(request: Request, q: str = "", doc: str = "", method: str = "bookindex",
             compare: Annotated[list[str] | None, Query()] = None) -> HTMLResponse:
    engine = _engine(request)
    chosen = [m for m in compare or [] if m in COMPARE]
    form: dict[str, Any] = {"q": q, "doc": doc, "method": method if method in METHODS else "bookindex",
                            "compare": chosen}
    docs = engine.documents() if engine.exists() else []
    if not q.strip():
        return render(request, "ask.html", form=form, docs=docs, methods=METHODS, compare_methods=COMPARE, result=None)
    try:
        _srv(request).check_question(q)
        req = AskRequest(question=q, doc=validate.doc_ref(doc) if doc else None, method=form["method"])
        answer = engine.ask(req)
        result = _result(engine, answer, chosen)
    except (BookIndexError, Problem) as e:
        return _ask_error(request, e, form, docs)
    return render(request, "ask.html", form=form, docs=docs, methods=METHODS, compare_methods=COMPARE, result=result)


@router.post("/ask", response_class=HTMLResponse)
def run_plan_page(request: Request, plan: Annotated[str, Form()], doc: Annotated[str, Form()] = "",
                  compare: Annotated[list[str] | None, Form()] = None) -> HTMLResponse:
    """Re-run an edited plan (the editor's JSON) and show the new answer."""
    engine = _engine(request)
    docs = engine.documents() if engine.exists() else []
    chosen = [m for m in compare or [] if m in COMPARE]
    form: dict[str, Any] = {"q": "", "doc": doc, "method": "bookindex", "compare": chosen, "plan_text": plan}
    try:
        if len(plan) > 200_000:
            raise Problem(413, f"plan is {len(plan)} characters; the limit is 200000")
        try:
            p = Plan.from_json(plan)
        except (ValueError, TypeError, KeyError, InputError) as e:
            raise Problem(422, f"plan: {' '.join(str(e).split())[:300]}") from None
        form["q"] = p.question
        _srv(request).check_question(p.question)
        answer = engine.run_plan(p, doc=validate.doc_ref(doc) if doc else None)
        result = _result(engine, answer, chosen, edited=True)
    except (BookIndexError, Problem) as e:
        return _ask_error(request, e, form, docs)
    return render(request, "ask.html", form=form, docs=docs, methods=METHODS, compare_methods=COMPARE, result=result)


def _ask_error(request: Request, exc: Exception, form: dict[str, Any], docs: list[Any]) -> HTMLResponse:
    status, detail = (exc.status, exc.detail) if isinstance(exc, Problem) else \
        (status_of(exc), " ".join(str(exc).split())) if isinstance(exc, BookIndexError) else (500, "error")
    return render(request, "ask.html", status=status, form=form, docs=docs, methods=METHODS,
                  compare_methods=COMPARE, result=None, error=detail)


def _result(engine: Engine, answer: Answer, compare: list[str], edited: bool = False) -> dict[str, Any]:
    """Everything the ask template shows of an answer (and the baselines' evidence)."""
    a = answer.model_dump(mode="json")
    doc_id = a["doc"].get("doc_id", "")
    tree = engine.cache.browse(doc_id).tree if doc_id else None
    pages = engine.page_info(doc_id) if doc_id else None
    boxes = present.evidence_boxes(tree, a["evidence"])
    baselines = []
    for m in compare:
        hits = engine.search(answer.question, doc=doc_id or None, method=m, k=10)
        baselines.append({"method": m, "evidence": [h.model_dump(mode="json") for h in hits[:10]]})
    usage = a.get("usage") or {}
    return {
        "answer": a, "edited": edited, "parts": present.answer_parts(a["answer"], len(a["evidence"])),
        "steps": [present.step_view(r) for r in a["trace"]],
        "plan_json": present.plan_json(a["plan"]) if a.get("plan") else "",
        "baselines": baselines, "ms": usage.get("ms"), "llm": (usage.get("llm") or {}),
        "data": {"doc": doc_id, "sizes": pages.sizes if pages else [], "labels": pages.labels if pages else None,
                 "pdf": bool(pages and pages.sizes), "evidence": boxes},
    }


# -- skills: the hierarchy of a compiled skill folder, and a navigation replayed step by step ---
@router.get("/skills", response_class=HTMLResponse)
def skills(request: Request, folder: str = "", question: str = "", k: int = Query(10, ge=1, le=50)) -> HTMLResponse:
    engine = _engine(request)
    choices = _skill_choices(request, engine)
    tree = None
    nav = None
    error = ""
    if not folder and len(choices) == 1:
        folder = next(iter(choices))
    path = _skills_folder(choices, folder)
    if path is not None:
        try:
            tree = engine.skills.tree(path).model_dump(mode="json")
            if question.strip():
                _srv(request).check_question(question)
                nav = engine.skills.ask(SkillsAskRequest(folder=str(path), question=question, navigator="embedding",
                                                         k=k)).model_dump(mode="json")
        except BookIndexError as e:
            error = " ".join(str(e).split())
    return render(request, "skills.html", folder=folder, tree=tree, nav=nav, question=question, k=k,
                  error=error, choices=sorted(choices))


def _skill_choices(request: Request, engine: Engine) -> dict[str, Path]:
    """Skill folders the inspector may show, by name: those the server was started with
    (`serve --skills DIR`), then those inside the library folder (`LIB/skills*`)."""
    out = dict(_srv(request).skills)
    root = Path(engine.root)
    if root.is_dir():
        for p in sorted(root.iterdir()):
            if p.is_dir() and (p / "skills.json").is_file():
                out.setdefault(p.name, p)
    return out


def _skills_folder(choices: dict[str, Path], name: str) -> Path | None:
    """A skill folder by its name among the choices; never a user-given path."""
    if not name:
        return None
    if name not in choices:
        raise Problem(404, f"no skill folder {quote(name[:80])!r} served here")
    return choices[name]
