"""MCP tools and resources over one library, with the SDK 2.x `MCPServer` API.

API used (mcp 2.x): `MCPServer(name, instructions=...)`, `@server.tool(description=...)`,
`@server.resource("bookindex://...{doc}...")` for template resources, `server.run("stdio")` and
`server.streamable_http_app(...)` (served by uvicorn behind the REST server's `KeyGuard`, so
the same API keys work). Sync tool functions: the SDK runs them in worker threads. The server is
`strict.StrictServer`, an `MCPServer` refusing undeclared arguments; resources raise the SDK's
resource errors (`strict.guard_resource`); `run` owns stderr (`strict.log_to_stderr`).

Every tool returns text or JSON shaped for an agent's context window: outlines as indented
lines with node ids, evidence with page numbers and node ids, so the agent can cite pages and
drill down with `get_node` or `get_pages`. The tools that retrieve (ask, plan, search) are
time-limited (`server.mcp_tool_timeout_s`, `bounded`).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

import bookindex
from bookindex.core.config import cache_dir
from bookindex.core.memory import space_out_collections
from bookindex.engine import Engine
from bookindex.mcp_server.bounded import Bounds
from bookindex.server import limits, validate
from bookindex.server.auth import OPEN, Grant, Keys, check_bind
from bookindex.server.middleware import BodyLimit, KeyGuard
from bookindex.server.problem import Problem, anticipated
from bookindex.server.redact import Redactor, default_folders
from bookindex.server.skill_folders import skill_folders
from bookindex.server.threads import limit_blas_threads
from bookindex.server.views import MAX_DEPTH, outline, outline_text, summary

if TYPE_CHECKING:  # the SDK is imported when a server is built (its import takes ~1 s)
    from mcp.server.mcpserver import MCPServer

MAX_PAGES_PER_CALL = 10

INSTRUCTIONS = """\
bookindex answers questions over long documents (manuals, handbooks, reports) indexed as a
section tree plus a knowledge graph. Start with list_documents, read a document's outline with
get_structure, then either ask (a grounded answer with cited pages) or search (ranked passages
to read yourself). Use get_node or get_pages to read exact text before quoting it."""


def caller_grant(ctx: Any) -> Grant | None:
    """What the caller may read: over HTTP the grant the key guard put in the request's state;
    over stdio (no HTTP request) everything, as the local user who started the server."""
    request = getattr(getattr(ctx, "request_context", None), "request", None) if ctx is not None else None
    if request is None:
        return OPEN
    grant: Grant | None = request.scope.get("state", {}).get("grant")
    return grant


def guard_with(redactor: Redactor, context: Any = None) -> Callable[[Any], Any]:
    """A decorator turning Engine and validation errors into MCP tool errors with their one-line
    message, and keeping the server's folders out of results and errors (`redact`). `context`:
    the SDK's Context class, put in place of the `ctx` annotation (a string here, as the SDK is
    imported late) so the SDK hands the tool its request context."""
    def guard(fn: Any) -> Any:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            from mcp.server.mcpserver.exceptions import ToolError  # deferred with the SDK (see build_server)

            if "ctx" in kwargs:  # read here, in the SDK's thread: a bounded tool runs in a pool of its own
                kwargs["ctx"] = caller_grant(kwargs["ctx"])
            try:
                return redactor.value(fn(*args, **kwargs))
            except Exception as e:  # an Engine error, a Problem, a request model's ValidationError: REST's detail
                known = anticipated(e)
                if known is None:
                    raise
                raise ToolError(redactor.text(known[1])) from None
        if context is not None and "ctx" in getattr(fn, "__annotations__", {}):
            call.__annotations__ = {**fn.__annotations__, "ctx": context | None}
        return call
    return guard


def parse_pages(spec: str, last: int) -> list[int]:
    """'3', '3-5', '3,7,9-10' → sorted 1-based pages within 1..last, at most MAX_PAGES_PER_CALL."""
    pages: set[int] = set()
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise Problem(400, f"pages {spec!r}: use numbers and ranges like '3', '3-5' or '3,7'")
        a, b = int(lo), int(hi or lo)
        if a > b or a < 1 or b > last:
            raise Problem(400, f"pages {spec!r}: the document has pages 1-{last}")
        pages.update(range(a, b + 1))
        if len(pages) > MAX_PAGES_PER_CALL:
            raise Problem(400, f"pages {spec!r}: at most {MAX_PAGES_PER_CALL} pages per call")
    if not pages:
        raise Problem(400, "pages: give at least one page, e.g. '3' or '3-5'")
    return sorted(pages)


def build_server(served: Engine | Mapping[str, Engine]) -> MCPServer:
    """The MCP server of one library or several (name -> Engine): the tools and resources below.
    With several, every tool takes the library by name (`library`); over HTTP a key sees only
    the libraries it may read (others are unknown: "no library"), over stdio the local user sees all."""
    from bookindex.mcp_server.strict import Context, StrictServer, guard_resource  # deferred: imports the SDK (~1 s)

    engines = {Path(served.library.root).resolve().name or "library": served} if isinstance(served, Engine) \
        else dict(served)
    first = next(iter(engines.values()))
    mcp = StrictServer("bookindex", instructions=INSTRUCTIONS, version=bookindex.__version__, log_level="WARNING")

    settings = first.settings.server
    bounds = Bounds(settings.mcp_tool_timeout_s)  # ask, plan, search: time-limited
    redactor = Redactor([*(e.root for e in engines.values()), cache_dir(first.settings), *default_folders(),
                         *skill_folders(settings.skills).values()])
    _guard = guard_with(redactor, Context)

    def pick(library: str | None, grant: Any) -> Engine:
        """The library a tool call names (or the only one), if the caller may read it (`grant`:
        what `guard` made of the call's context)."""
        readable = sorted(n for n in engines if grant is not None and grant.can_read(n))
        if library is None:
            if len(engines) == 1 and readable:
                return engines[readable[0]]
            raise Problem(422, f"library: name one of {', '.join(readable) or '(none readable with this key)'}")
        if library not in readable:
            raise Problem(404, f"no library {validate.library_name(library)!r}")
        return engines[library]

    def ref(doc: str | None) -> str | None:
        return validate.doc_ref(doc) if doc else None

    @mcp.tool(description=(
        "List the documents in this library. Returns one object per document: doc_id, name "
        "(file name), pages, nodes, sections, graph (whether a knowledge graph was built), created. "
        "Call this first to learn which documents exist; pass a doc_id or name as `doc` to other tools."))
    @_guard
    def list_documents(library: str | None = None, ctx: "Context | None" = None) -> list[dict[str, Any]]:
        engine = pick(library, ctx)
        engine.refresh()  # and lets go of the versions replaced since
        return [summary(d) for d in engine.documents()]

    @mcp.tool(description=(
        "Show a document's table of contents as indented lines 'title [pages] (node_id)', down to "
        "`depth` section levels (1 = chapters; default 2; '+N below' marks sections cut off). Use it "
        "to see how a document is organised and to find the node_id of a section to read with get_node."))
    @_guard
    def get_structure(doc: str, depth: int = 2, library: str | None = None, ctx: "Context | None" = None) -> str:
        engine = pick(library, ctx)
        limits.depth(depth)
        return outline_text(outline(engine.tree(validate.doc_ref(doc)), depth))

    @mcp.tool(description=(
        "Read one node of a document tree by node_id (ids look like '3917eb460d87e275-00042'). Returns "
        "its type, title, full text, 1-based page range, the titles of its ancestors (parent_path) and "
        "its children's ids. Use it to read a section found with get_structure or a search hit exactly."))
    @_guard
    def get_node(node_id: str, library: str | None = None, ctx: "Context | None" = None) -> dict[str, Any]:
        engine = pick(library, ctx)
        view = engine.node(validate.node_id(node_id))
        data = view.model_dump(mode="json", exclude={"image_file", "meta"})
        data["page"], data["page_end"] = view.page_idx + 1, view.page_end_idx + 1
        return data

    @mcp.tool(description=(
        "Read the text of whole pages of a document, in reading order, each block prefixed by its "
        "node_id. `pages` is 1-based: '12', '12-14' or '3,7' (at most 10 pages per call). Use it when "
        "an answer cites pages and you need the surrounding text, or for tables and lists that span nodes."))
    @_guard
    def get_pages(doc: str, pages: str, library: str | None = None, ctx: "Context | None" = None) -> str:
        engine = pick(library, ctx)
        info = engine.document(validate.doc_ref(doc))
        tree = engine.tree(info.doc_id)
        wanted = parse_pages(pages, int(info.pages or 0))
        out: list[str] = []
        for p in wanted:
            out.append(f"--- page {p} ---")
            for n in tree.nodes_on_pages(p - 1, p - 1):
                if n.type == "document" or n.page_idx != p - 1:
                    continue
                body = n.title if n.type == "section" else n.text
                if body.strip():
                    out.append(f"[{n.id}] {body.strip()}")
        return "\n".join(out)

    @mcp.tool(description=(
        "Find passages relevant to `query` without writing an answer. Returns up to `k` (default 5) "
        "ranked hits: node_id, page, page_ref (how to cite the page: 'p. 36 (printed 30)' where the page prints "
        "its own number), section title, scores and the passage text (title path + text). Without `doc` the query "
        "goes to the best-matching document. Use it to gather evidence to read and cite yourself; use "
        "`ask` when you just want the answer."))
    @_guard
    @bounds.bound("search")
    def search(query: str, doc: str | None = None, k: int = 5, library: str | None = None,
               ctx: "Context | None" = None) -> list[dict[str, Any]]:
        engine = pick(library, ctx)
        limits.question(query, settings, "query")
        limits.k(k)
        hits = engine.search(query, doc=ref(doc), k=k)
        return [{"rank": e.rank or i, "node_id": e.node_id, "page": e.page, "page_label": e.page_label,
                 "page_ref": e.page_ref, "section": e.section,
                 "scores": {n: round(float(v), 4) for n, v in e.scores.items()},
                 "text": engine.passage(e.doc_id, e)} for i, e in enumerate(hits[:k], 1)]

    @mcp.tool(description=(
        "Answer a question from the library with bookindex's planned retrieval (section tree + "
        "knowledge graph). Returns the answer text with [n] citations, the cited evidence (node_id, "
        "page, page_ref such as 'p. 36 (printed 30)', snippet) and the query type. Without `doc` the question "
        "is routed to the best document. "
        "Answers are grounded in the documents only; check cited pages with get_pages if it matters."))
    @_guard
    @bounds.bound("ask")
    def ask(question: str, doc: str | None = None, library: str | None = None, ctx: "Context | None" = None) -> dict[str, Any]:
        engine = pick(library, ctx)
        limits.question(question, settings)
        a = engine.ask(question, doc=ref(doc))
        return {"answer": a.answer, "query_type": a.query_type, "document": a.doc.get("name"),
                "citations": a.citations, "citation_check": a.citation_check,
                "evidence": [{"n": i, "node_id": e.node_id, "page": e.page, "page_label": e.page_label,
                              "page_ref": e.page_ref, "section": e.section, "snippet": e.snippet}
                             for i, e in enumerate(a.evidence, 1)]}

    @mcp.tool(description=(
        "Show how bookindex would answer a question without running it: the query type (single-hop, "
        "multi-hop, global, ...) and the operator plan (JSON steps). Use it to understand or debug "
        "retrieval; it retrieves nothing."))
    @_guard
    @bounds.bound("plan")
    def plan(question: str, doc: str | None = None, library: str | None = None, ctx: "Context | None" = None) -> dict[str, Any]:
        engine = pick(library, ctx)
        limits.question(question, settings)
        return engine.plan(question, doc=ref(doc)).model_dump(mode="json")

    folders = skill_folders(settings.skills)
    if folders:
        add_skill_tools(mcp, first, folders, _guard)
    if len(engines) == 1:
        add_resources(mcp, first, guard_resource(redactor))
    return mcp


def add_resources(mcp: MCPServer, engine: Engine, _guard: Callable[[Any], Any]) -> None:
    """The document list and outlines as resources (a one-library server; with several, the
    tools take the library by name). `_guard`: `strict.guard_resource`, so a missing document is
    a resource error with REST's detail, not a crash."""

    @mcp.resource("bookindex://documents", name="documents", mime_type="application/json",
                  description="The library's documents (doc_id, name, pages, nodes, sections).")
    @_guard
    def documents_resource() -> list[dict[str, Any]]:
        return [summary(d) for d in engine.documents()]

    @mcp.resource("bookindex://documents/{doc}/tree", name="document-tree", mime_type="text/plain",
                  description="A document's section outline, all levels: 'title [pages] (node_id)' lines.")
    @_guard
    def tree_resource(doc: str) -> str:
        return outline_text(outline(engine.tree(validate.doc_ref(doc)), MAX_DEPTH))


SKILLS_INSTRUCTIONS = """\
Skill folders (Corpus2Skill) organise a corpus as a hierarchy of topic folders: each top folder
has a SKILL.md, each group an INDEX.md listing its sub-groups or its documents' ids. Start with
list_skills, view a skill's SKILL.md, descend with view into the groups that fit the question,
then read documents with get_document."""


def add_skill_tools(mcp: MCPServer, engine: Engine, folders: dict[str, Path], _guard: Callable[[Any], Any]) -> None:
    """The navigator's tools over the served skill folders: `list_skills`, `view`,
    `get_document` and `skills_search` (the embedding navigator, no LLM)."""
    only = next(iter(folders)) if len(folders) == 1 else None

    def folder(skill: str | None) -> Path:
        name = skill or only
        if name is None:
            raise Problem(400, f"several skill folders are served; pass skill= one of {', '.join(sorted(folders))}")
        if name not in folders:
            raise Problem(404, f"no skill folder {name!r}; served: {', '.join(sorted(folders))}")
        return folders[name]

    @mcp.tool(description=(
        "List the skill folders (compiled topic hierarchies over a document corpus) this server offers: "
        "name, documents, clusters and top-level skills. " + SKILLS_INSTRUCTIONS.replace("\n", " ")))
    @_guard
    def list_skills() -> list[dict[str, Any]]:
        out = []
        for name, path in sorted(folders.items()):
            opened = engine.skills.open(path)
            out.append({"name": name, "documents": len(opened.documents), "clusters": len(opened.tree.clusters),
                        "roots": [opened.tree.clusters[r].path for r in opened.tree.roots]})
        return out

    @mcp.tool(description=(
        "Browse a skill folder like a file system. `path` is relative to the skill root: '' or '.' lists the "
        "top-level skills; a folder path returns its listing plus its SKILL.md / INDEX.md (summaries of its "
        "sub-groups, or the ids and titles of its documents); a file path returns the file. `skill` names the "
        "folder (optional when only one is served). Descend into the groups whose summaries fit your question."))
    @_guard
    def view(path: str = "", skill: str | None = None) -> str:
        return engine.skills.view(folder(skill), path).text

    @mcp.tool(description=(
        "Read one document of a skill folder by its id (ids are listed in the leaf INDEX.md files that "
        "view shows). Returns '[id] title' and the document's text (long texts are cut). Read the documents "
        "a leaf group lists before answering from them."))
    @_guard
    def get_document(doc_id: str, skill: str | None = None) -> str:
        return engine.skills.document(folder(skill), doc_id).text

    @mcp.tool(description=(
        "Rank a skill folder's documents for `query` by beam search down its hierarchy (embeddings, no LLM). "
        "Returns up to `k` (default 10) documents: id, title, score, and the group path that led there. Use it "
        "to jump near the answer, then read the documents with get_document."))
    @_guard
    def skills_search(query: str, skill: str | None = None, k: int = 10) -> list[dict[str, Any]]:
        limits.question(query, engine.settings.server, "query")
        limits.k(k)
        found = engine.skills.search(folder(skill), query, "skills-embedding", k=k)
        return [d.model_dump(mode="json") for d in found.documents[:k]]


def run(served: Engine | Mapping[str, Engine], transport: Literal["stdio", "http"] = "stdio", host: str = "127.0.0.1",
        port: int = 8001, verbosity: int = 0) -> None:
    """Serve one library or several (name -> Engine) over stdio (for an agent that launches the
    command) or streamable HTTP at /mcp (behind the REST server's key guard and body cap).
    `verbosity` (`--verbose` count): what reaches stderr besides warnings (`strict.log_to_stderr`)."""
    from bookindex.mcp_server.strict import log_to_stderr  # deferred with the SDK it imports

    log_to_stderr(verbosity)  # before build_server: the SDK installs its own handler on a bare root logger
    first = served if isinstance(served, Engine) else next(iter(served.values()))
    limit_blas_threads(first.settings.server.blas_threads)
    space_out_collections(first.settings.server.gc_threshold)
    mcp = build_server(served)
    if transport == "stdio":
        mcp.run("stdio")
        return
    import uvicorn  # deferred: only the HTTP transport needs the ASGI server

    keys = Keys.from_env(first.settings)
    print(check_bind(host, keys, first.settings), file=sys.stderr, flush=True)
    app = BodyLimit(KeyGuard(mcp.streamable_http_app(host=host), keys, open_paths=frozenset()),
                    limit=first.settings.server.max_body_kb * 1024, what="request body")
    print(f"MCP endpoint: http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
