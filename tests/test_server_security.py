"""The server as a hostile or merely curious client meets it, against real uvicorn servers on
127.0.0.1: a key for library A learns nothing of library B (404 on every route, as for a
library that does not exist); no response body, header or page carries the server's paths;
REST and MCP refuse the same bad input with the same reason; oversized JSON is refused before
it is parsed; every request leaves an access-log line naming the key's id, never the key.

Every response the REST tests receive goes through `Recorder`, and each test ends by scanning
all of them for the server's folders (library, temporary, cache, home, document sources).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from conftest import free_port
from server_helpers import LIBTASN1, cli_env, cli_server, poll_job, thread_server

from bookindex.core.config import Settings, load_settings
from bookindex.core.errors import ConfigError
from bookindex.engine import Engine
from bookindex.server.app import create_app
from bookindex.server.auth import Grant, Keys, allows, digest
from bookindex.server.sessions import COOKIE

pytestmark = pytest.mark.slow

STATIC_TYPES = ("text/javascript", "application/javascript", "text/css", "image/")
ADMIN, KEY_A, KEY_B = "admin-key-zz", "team-a-key-zz", "team-b-reader-zz"


def settings_for(cache: Path) -> Settings:
    return load_settings(overrides={"llm.provider": "none", "cache.path": str(cache)}, env={})


def scoped_keys() -> Keys:
    """An admin key from the environment's kind (every library), a key reading and writing A,
    a key reading B only."""
    return Keys(admin=frozenset({ADMIN}),
                scoped=((digest(KEY_A), Grant("team-a", frozenset({"a"}), frozenset({"a"}))),
                        (digest(KEY_B), Grant("team-b-reader", frozenset({"b"})))))


class Recorder:
    """An httpx client that keeps every response, and the folders none may mention."""

    def __init__(self, base: str, forbidden: list[Path]) -> None:
        self.responses: list[httpx.Response] = []
        self.client = httpx.Client(base_url=base, timeout=120, event_hooks={"response": [self._keep]})
        folders = sorted({str(p) for f in forbidden for p in (f, f.resolve())}, key=len, reverse=True)
        self.forbidden = [(f, re.compile(re.escape(f) + r"(?![\w.-])")) for f in folders]

    def _keep(self, r: httpx.Response) -> None:
        r.read()
        self.responses.append(r)

    def scan(self) -> int:
        """Fail on any response whose body or headers name a forbidden folder; the count scanned."""
        for r in self.responses:
            if r.headers.get("content-type", "").startswith(STATIC_TYPES):
                continue  # files shipped in packages (Swagger UI, the inspector's script), not server state
            text = r.content.decode("utf-8", "replace") + "\n" + "\n".join(f"{k}: {v}" for k, v in r.headers.items())
            for folder, pattern in self.forbidden:
                assert not pattern.search(text), f"{r.request.method} {r.request.url.path} -> {r.status_code} names {folder}"
        return len(self.responses)


def forbidden_folders(*extra: Path) -> list[Path]:
    return [Path.home(), LIBTASN1.parent, Path.cwd(), *extra]


@pytest.fixture(scope="module")
def two_libraries(tmp_path_factory: pytest.TempPathFactory, libtasn1_library: tuple[Path, Path]) -> Iterator[tuple[str, Path, Path]]:
    """A folder of two libraries, a and b (copies of the session's libtasn1 library), served with
    scoped keys: (base URL, root folder, cache)."""
    lib, cache = libtasn1_library
    root = tmp_path_factory.mktemp("libraries")
    for name in ("a", "b"):
        shutil.copytree(lib, root / name, ignore=shutil.ignore_patterns(".server"))
    engines = {name: Engine(root / name, settings_for(cache)) for name in ("a", "b")}
    with thread_server(create_app(engines, scoped_keys(), home=root)) as base:
        yield base, root, cache


def concrete(path: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values[m.group(1)], path)


def library_routes(openapi: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (method, path) of the per-library routes the server documents; deletes last."""
    out = [(m.upper(), path) for path, ops in openapi["paths"].items() if path.startswith("/libraries/{library}/")
           for m in ops]
    return sorted(out, key=lambda mp: (mp[0] == "DELETE", mp[1], mp[0]))


def test_a_key_for_library_a_gets_404_on_every_route_of_library_b(two_libraries: tuple[str, Path, Path]) -> None:
    base, root, cache = two_libraries
    rec = Recorder(base, forbidden_folders(root, cache))
    c = rec.client
    a = {"Authorization": f"Bearer {KEY_A}"}
    docs = c.get("/libraries/a/documents", headers=a).json()
    doc_id = docs[0]["doc_id"]
    node = c.get(f"/libraries/a/documents/{doc_id}/tree", params={"depth": 1}, headers=a).json()["children"][0]["id"]
    values = {"library": "b", "doc": doc_id, "node_id": node, "job_id": "0" * 32, "page": "1", "name": "x"}
    bodies = {"/ask": {"question": "Which function decodes DER?"}, "/plan": {"question": "Which function decodes DER?"},
              "/search": {"query": "DER"}, "/run-plan": {"plan": {"question": "q", "steps": []}}}
    routes = library_routes(c.get("/openapi.json", headers=a).json())
    assert len(routes) >= 15, routes
    for method, path in routes:
        tail = path[len("/libraries/{library}"):]
        kwargs: dict[str, Any] = {"headers": a}
        if tail in bodies:
            kwargs["json"] = bodies[tail]
        if tail == "/documents" and method == "POST":
            kwargs["files"] = {"file": ("libtasn1.pdf", LIBTASN1.read_bytes(), "application/pdf")}
        for library in ("b", "no-such-library"):
            r = c.request(method, concrete(path, {**values, "library": library}), **kwargs)
            assert r.status_code == 404, (method, path, library, r.status_code, r.text[:300])
            assert r.json()["detail"] == f"no library {library!r}", r.text
        if method != "DELETE" and not tail.startswith("/jobs/{job_id}"):  # the same request on A passes
            r = c.request(method, concrete(path, {**values, "library": "a"}), **kwargs)
            assert r.status_code != 404, (method, path, r.text[:300])
    assert [x["name"] for x in c.get("/libraries", headers=a).json()] == ["a"]
    assert [x["name"] for x in c.get("/libraries", headers={"X-API-Key": ADMIN}).json()] == ["a", "b"]
    assert c.delete("/libraries/b", headers=a).status_code == 404
    assert c.post("/libraries", json={"name": "c"}, headers=a).status_code == 403  # not an admin
    # B's reader reads B and cannot write it; the one-library routes need a library name here
    b = {"Authorization": f"Bearer {KEY_B}"}
    assert c.get("/libraries/b/documents", headers=b).status_code == 200
    assert c.delete(f"/libraries/b/documents/{doc_id}", headers=b).status_code == 403
    assert c.get("/libraries/a/documents", headers=b).status_code == 404
    r = c.get("/documents", headers=b)
    assert r.status_code == 404 and "/libraries/{name}" in r.json()["detail"]
    assert rec.scan() > 2 * len(routes)


def test_admin_creates_and_deletes_a_library(two_libraries: tuple[str, Path, Path]) -> None:
    base, root, cache = two_libraries
    rec = Recorder(base, forbidden_folders(root, cache))
    c, h = rec.client, {"X-API-Key": ADMIN}
    r = c.post("/libraries", json={"name": "team-c"}, headers=h)
    assert r.status_code == 201 and r.headers["location"] == "/libraries/team-c", r.text
    assert (root / "team-c" / "library.json").is_file()
    assert c.post("/libraries", json={"name": "team-c"}, headers=h).status_code == 409
    assert c.post("/libraries", json={"name": "../evil"}, headers=h).status_code == 400
    assert c.get("/libraries/team-c/documents", headers=h).json() == []
    md = root.parent / "pumps.md"
    md.write_text("# Pumps\n\n## Priming\n\nThe pump is primed with the blue valve.\n")
    r = c.post("/libraries/team-c/documents", params={"graph": "false"}, headers=h,
               files={"file": ("pumps.md", md.read_bytes(), "text/markdown")})
    assert r.status_code == 202 and r.headers["location"].startswith("/libraries/team-c/jobs/"), r.text
    job = poll_job(base + "/libraries/team-c", r.json()["id"], headers=h)
    assert job["state"] == "done", job
    # its own queue: A's jobs do not list it
    assert all(j["id"] != job["id"] for j in c.get("/libraries/a/jobs", headers=h).json())
    answer = c.post("/libraries/team-c/ask", json={"question": "Which valve primes the pump?"}, headers=h).json()
    assert any("blue valve" in e["snippet"] for e in answer["evidence"])
    assert c.delete("/libraries/team-c", headers={"Authorization": f"Bearer {KEY_A}"}).status_code == 404
    assert c.delete("/libraries/team-c", headers=h).status_code == 200
    assert not (root / "team-c").exists()
    assert c.get("/libraries/team-c/documents", headers=h).status_code == 404
    rec.scan()


@pytest.fixture(scope="module")
def one_library(tmp_path_factory: pytest.TempPathFactory, libtasn1_library: tuple[Path, Path]) -> Iterator[tuple[str, Path, Path]]:
    """A copy of the libtasn1 library served alone with a read and an admin key (env style)."""
    lib, cache = libtasn1_library
    root = tmp_path_factory.mktemp("one")
    shutil.copytree(lib, root / "lib", ignore=shutil.ignore_patterns(".server"))
    engine = Engine(root / "lib", settings_for(cache))
    with thread_server(create_app(engine, Keys(frozenset({KEY_B}), frozenset({ADMIN})))) as base:
        yield base, root / "lib", cache


def test_no_response_names_a_server_path(one_library: tuple[str, Path, Path], tmp_path: Path) -> None:
    base, lib, cache = one_library
    rec = Recorder(base, forbidden_folders(lib, cache, tmp_path, lib.parent))
    c = rec.client
    read, admin = {"X-API-Key": KEY_B}, {"X-API-Key": ADMIN}
    docs = c.get("/documents", headers=read).json()
    assert docs[0]["source"] == "libtasn1.pdf" and docs[0]["manifest"]["source"] == "libtasn1.pdf"
    doc_id = docs[0]["doc_id"]
    r = c.get("/documents/nosuch.pdf", headers=read)
    assert r.status_code == 404 and r.json()["detail"].startswith("lib: no document 'nosuch.pdf'"), r.text
    tree = c.get(f"/documents/{doc_id}/tree", params={"depth": 2}, headers=read).json()
    node = tree["children"][1]["id"]
    for path in (f"/documents/{doc_id}", f"/documents/{doc_id}/nodes/{node}", f"/nodes/{node}", "/stats",
                 f"/stats?doc={doc_id}", "/jobs", "/health", "/openapi.json", "/docs", "/skills", "/libraries",
                 f"/documents/{doc_id}/pages/999.png", f"/documents/{doc_id}/pages/1.png?dpi=5", "/nodes/abcd-99999",
                 "/documents/%2e%2e", "/ui/", f"/ui/documents/{doc_id}", f"/ui/documents/{doc_id}/graph",
                 "/ui/documents/nosuch.pdf", f"/ui/api/nodes/{node}", f"/ui/api/documents/{doc_id}/children/{node}",
                 "/ui/ask?q=Which+function+decodes+DER%3F", "/ui/skills", "/ui/login", "/no/such/route"):
        c.get(path, headers=read)
    for body in ({"question": "Which function decodes DER?"}, {"question": ""}, {"question": "x" * 3000},
                 {"question": "q", "doc": "nosuch.pdf"}, {"question": "q", "doc": "../etc"}):
        c.post("/ask", json=body, headers=read)
    c.post("/ask", json={"question": "Which function decodes DER?"}, headers={**read, "Accept": "text/event-stream"})
    c.post("/search", json={"query": "DER", "k": 3}, headers=read)
    c.post("/plan", json={"question": "Which function decodes DER?"}, headers=read)
    c.post("/run-plan", json={"plan": {"question": "q", "steps": [{"op": "Nope"}]}}, headers=read)
    c.get("/documents", headers={"X-API-Key": "wrong"})
    c.get("/documents")
    # a damaged PDF: its job fails with the parser's message, by file name
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\nthis is not a PDF body\n")
    r = c.post("/documents", headers=admin, files={"file": ("broken.pdf", bad.read_bytes(), "application/pdf")})
    job = poll_job(base, r.json()["id"], headers=admin)
    assert job["state"] == "failed" and "broken.pdf" in job["error"]
    c.get(f"/jobs/{job['id']}", headers=read)
    # the rendered page image path and the missing-source message
    assert c.get(f"/documents/{doc_id}/pages/1.png", params={"dpi": 40}, headers=read).status_code == 200
    statuses = {r.status_code for r in rec.responses}
    assert {200, 400, 401, 404, 422}.issubset(statuses), statuses
    assert rec.scan() > 40


def test_rest_and_mcp_refuse_the_same_bad_input(one_library: tuple[str, Path, Path], tmp_path: Path) -> None:
    """Each hostile input gets the same status on REST (422) and an isError tool result naming
    the problem on MCP (over stdio: no traceback and no DEBUG line on the server's stderr)."""
    base, lib, cache = one_library
    rec = Recorder(base, forbidden_folders(lib, cache))
    h = {"X-API-Key": KEY_B}
    cases = [  # (REST method, path, body or params, MCP tool, arguments, words the reason holds)
        ("POST", "/ask", {"question": ""}, "ask", {"question": ""}, "question"),
        ("POST", "/ask", {"question": "   "}, "ask", {"question": "   "}, "question: must not be empty"),
        ("POST", "/plan", {"question": "x" * 2001}, "plan", {"question": "x" * 2001}, "the limit is 2000"),
        ("POST", "/search", {"query": "x" * 2001}, "search", {"query": "x" * 2001}, "the limit is 2000"),
        ("POST", "/search", {"query": "DER", "k": 100000}, "search", {"query": "DER", "k": 100000}, "k"),
        ("POST", "/search", {"query": "DER", "k": 0}, "search", {"query": "DER", "k": 0}, "k"),
        ("GET", "/documents/libtasn1.pdf/tree", {"depth": -5}, "get_structure", {"doc": "libtasn1.pdf", "depth": -5}, "depth"),
        ("GET", "/documents/libtasn1.pdf/tree", {"depth": 99}, "get_structure", {"doc": "libtasn1.pdf", "depth": 99}, "depth"),
        ("POST", "/search", {"query": "DER", "bogus": 1}, "search", {"query": "DER", "bogus": 1}, "unknown argument 'bogus'"),
        ("POST", "/ask", {"question": "What is DER?", "bogus": 1}, "ask", {"question": "What is DER?", "bogus": 1},
         "unknown argument 'bogus'"),
    ]
    for method, path, payload, *_ in cases:
        r = rec.client.request(method, path, headers=h, **({"json": payload} if method == "POST" else {"params": payload}))
        assert r.status_code == 422, (path, payload, r.text)
    rec.scan()

    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    errlog = tmp_path / "mcp.stderr"
    params = StdioServerParameters(command=sys.executable, args=["-m", "bookindex.cli.app", "mcp", str(lib)],
                                   env=cli_env(cache), cwd=str(tmp_path))
    texts: dict[str, str] = {}

    async def main() -> None:
        with anyio.fail_after(240), open(errlog, "w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                for _, _path, _, tool, args, words in cases:
                    r = await client.call_tool(tool, args)
                    text = "".join(getattr(x, "text", "") for x in r.content)
                    assert r.is_error and words in text, (tool, args, text)
                    texts[f"{tool} {json.dumps(args)[:60]}"] = text
                r = await client.call_tool("get_structure", {"doc": "nosuch.pdf"})
                text = "".join(getattr(x, "text", "") for x in r.content)
                assert r.is_error and "no document 'nosuch.pdf'" in text and str(lib) not in text, text
                r = await client.call_tool("list_documents", {})
                assert str(lib) not in json.dumps(r.structured_content)

    anyio.run(main)
    err = errlog.read_text()
    assert "Traceback" not in err and "DEBUG" not in err, err[-2000:]
    assert texts["ask " + json.dumps({"question": ""})[:60]].endswith("question: must not be empty")


def rss_kb(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    return {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in status.splitlines())
            if k in ("VmRSS", "VmHWM")}


def raw_post(port: int, path: str, headers: list[str], body_chunks: Any, key: str) -> tuple[int, int]:
    """POST over a raw socket; returns (status, bytes of body sent before the server answered
    or closed). The server may answer while the body is still coming: then sending stops."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"X-API-Key: {key}", "Content-Type: application/json",
                *headers, "", ""]
        s.sendall("\r\n".join(head).encode())
        s.settimeout(0.05)
        for chunk in body_chunks:
            try:
                s.sendall(chunk)
                sent += len(chunk)
            except OSError:
                break
            try:
                if s.recv(1, socket.MSG_PEEK):
                    break
            except (TimeoutError, BlockingIOError):
                pass
            except OSError:
                break
        s.settimeout(30)
        reply = b""
        try:
            while b"\r\n" not in reply:
                got = s.recv(4096)
                if not got:
                    break
                reply += got
        except OSError:
            pass
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0, sent


def test_a_30_mb_json_body_is_refused_before_parsing(libtasn1_library: tuple[Path, Path], tmp_path: Path) -> None:
    """30 MB to /ask, with Content-Length and chunked: 413, and the server's peak memory
    (VmHWM of the `bookindex serve` process) grows by far less than the body."""
    lib, cache = libtasn1_library
    port = free_port()
    env = cli_env(cache, BOOKINDEX_ADMIN_KEYS=ADMIN)
    with cli_server(["serve", str(lib), "--port", str(port)], env, tmp_path, tmp_path / "serve.log",
                    f"http://127.0.0.1:{port}/health") as proc:
        h = {"X-API-Key": ADMIN}
        assert httpx.post(f"http://127.0.0.1:{port}/ask", json={"question": "DER tag"}, headers=h, timeout=120).status_code == 200
        before = rss_kb(proc.pid)
        size = 30 * 2**20
        body = b'{"question": "' + b"x" * (size - 20) + b'"}'
        chunks = [body[i:i + 2**20] for i in range(0, len(body), 2**20)]
        status, sent = raw_post(port, "/ask", [f"Content-Length: {len(body)}"], chunks, ADMIN)
        assert status == 413, status
        hex_chunks = (f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks)
        status2, sent2 = raw_post(port, "/ask", ["Transfer-Encoding: chunked"], hex_chunks, ADMIN)
        assert status2 == 413, status2
        time.sleep(0.5)
        after = rss_kb(proc.pid)
        grew_mb = (after["VmHWM"] - before["VmHWM"]) / 1024
        print(f"30 MiB JSON: Content-Length refused after {sent / 2**20:.1f} MiB sent, chunked after "
              f"{sent2 / 2**20:.1f} MiB; server peak RSS {before['VmHWM'] / 1024:.0f} -> {after['VmHWM'] / 1024:.0f} MiB "
              f"(+{grew_mb:.1f}), RSS {before['VmRSS'] / 1024:.0f} -> {after['VmRSS'] / 1024:.0f} MiB")
        assert grew_mb < 10, (before, after)
        r = httpx.post(f"http://127.0.0.1:{port}/ask", json={"question": "x" * 1000, "pad": "y" * (2 * 2**20)}, headers=h)
        assert r.status_code == 413 and "1.0 MiB request body limit" in r.json()["detail"]
        log = (tmp_path / "serve.log").read_text()
    assert re.search(r"POST /ask 413 \d+ms key=admin-[0-9a-f]{8} library=", log), log[-2000:]
    assert ADMIN not in log


def test_access_log_and_failed_jobs(tmp_path: Path, libtasn1_library: tuple[Path, Path],
                                    caplog: pytest.LogCaptureFixture) -> None:
    _, cache = libtasn1_library
    engine = Engine(tmp_path / "lib", settings_for(cache))
    with caplog.at_level(logging.INFO, logger="bookindex.server"), \
            thread_server(create_app(engine, Keys(frozenset({KEY_B}), frozenset({ADMIN})))) as base:
        assert httpx.get(f"{base}/documents").status_code == 401
        assert httpx.get(f"{base}/documents", headers={"X-API-Key": "not-a-key"}).status_code == 401
        assert httpx.get(f"{base}/documents", headers={"X-API-Key": KEY_B}).status_code == 200
        bad = tmp_path / "broken.pdf"
        bad.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\nthis is not a PDF body\n")
        with open(bad, "rb") as fh:
            r = httpx.post(f"{base}/documents", files={"file": ("broken.pdf", fh, "application/pdf")},
                           headers={"X-API-Key": ADMIN})
        job = poll_job(base, r.json()["id"], headers={"X-API-Key": ADMIN})
        assert job["state"] == "failed"
    lines = [rec.getMessage() for rec in caplog.records
             if rec.name == "bookindex.server.access" and "/documents" in rec.getMessage()]
    assert "GET /documents 401" in lines[0] and lines[0].endswith("key=- library=-")
    assert "GET /documents 401" in lines[1] and "key=invalid" in lines[1]
    read_id = f"read-{digest(KEY_B)[:8]}"
    assert any(re.fullmatch(rf"GET /documents 200 \d+ms key={read_id} library=lib", x) for x in lines), lines
    failed = [rec for rec in caplog.records if rec.name == "bookindex.server.jobs" and rec.levelno == logging.WARNING]
    assert failed and "broken.pdf" in failed[0].getMessage() and "failed" in failed[0].getMessage()
    assert all(KEY_B not in rec.getMessage() and ADMIN not in rec.getMessage() for rec in caplog.records)


def test_reupload_with_other_options_needs_replace(tmp_path: Path, libtasn1_library: tuple[Path, Path]) -> None:
    """The same content uploaded with other options is refused (409, naming the option) rather
    than rebuilt silently without what the stored one has; `replace=true` rebuilds it."""
    _, cache = libtasn1_library
    engine = Engine(tmp_path / "lib", settings_for(cache))
    doc = tmp_path / "pumps.md"
    doc.write_text("# Pumps\n\n## Priming\n\nThe pump is primed with the blue valve by the operator.\n")
    with thread_server(create_app(engine, Keys())) as base:
        def up(**params: str) -> httpx.Response:
            with open(doc, "rb") as fh:
                return httpx.post(f"{base}/documents", files={"file": ("pumps.md", fh, "text/markdown")},
                                  params=params, timeout=60)

        first = poll_job(base, up(graph="true").json()["id"])
        assert first["state"] == "done" and first["report"]["graph_built"], first
        r = up(graph="false")
        assert r.status_code == 409, r.text
        problem = r.json()
        assert "graph=true -> false" in problem["detail"] and "replace=true" in problem["detail"]
        assert problem["changed"] == {"graph": {"stored": True, "requested": False}}
        assert httpx.get(f"{base}/documents/pumps.md").json()["graph"] is True  # untouched
        assert poll_job(base, up().json()["id"])["report"]["status"] == "unchanged"  # same options: a no-op
        rebuilt = poll_job(base, up(graph="false", replace="true").json()["id"])
        assert rebuilt["state"] == "done" and rebuilt["report"]["status"] == "replaced", rebuilt
        assert httpx.get(f"{base}/documents/pumps.md").json()["graph"] is False


def test_docs_offline_skills_empty_and_session_cookie(one_library: tuple[str, Path, Path]) -> None:
    base, lib, cache = one_library
    rec = Recorder(base, forbidden_folders(lib, cache))
    c, h = rec.client, {"X-API-Key": KEY_B}
    page = c.get("/docs", headers=h)
    assert page.status_code == 200 and "cdn" not in page.text.lower() and "/docs/static/swagger-ui-bundle.js" in page.text
    js = c.get("/docs/static/swagger-ui-bundle.js")  # open, like the inspector's files
    assert js.status_code == 200 and len(js.content) > 100_000
    assert c.get("/skills", headers=h).json() == []
    login = c.post("/ui/login", data={"key": KEY_B}, follow_redirects=False)
    assert login.status_code == 303 and KEY_B not in login.headers["set-cookie"]
    assert c.get("/ui/", headers={"Cookie": f"{COOKIE}={login.cookies[COOKIE]}"}).status_code == 200
    rec.scan()


def test_scoped_keys_from_file_and_environment(tmp_path: Path) -> None:
    """Scoped keys come hashed from a TOML file and a JSON environment variable; the plain
    environment keys keep working for every library; nothing holds a key in the clear."""
    f = tmp_path / "keys.toml"
    f.write_text(f'[[keys]]\nid = "team-a"\nsha256 = "{digest(KEY_A)}"\nread = ["a"]\nwrite = ["a"]\n')
    env = {"BOOKINDEX_SCOPED_KEYS": json.dumps([{"id": "team-b", "sha256": digest(KEY_B), "read": ["b"]}]),
           "BOOKINDEX_ADMIN_KEYS": ADMIN}
    settings = load_settings(overrides={"server.keys_file": str(f)}, env={})
    keys = Keys.from_env(settings, env)
    a, b, admin = keys.grant(KEY_A), keys.grant(KEY_B), keys.grant(ADMIN)
    assert a is not None and a.can_read("a") and a.can_write("a") and not a.can_read("b")
    assert b is not None and b.can_read("b") and not b.can_write("b") and not b.can_read("a")
    assert admin is not None and admin.admin and admin.can_write("anything")
    assert keys.grant("nope") is None and keys.grant(None) is None
    manager = Grant("ops", admin=True)  # manages libraries, reads none of them
    assert allows(manager, "read") and not manager.can_read("a") and not allows(manager, "admin", "a")
    assert all(k not in repr(keys) for k in (KEY_A, KEY_B, ADMIN))
    f.write_text('[[keys]]\nid = "x"\nsha256 = "not-hex"\n')
    with pytest.raises(ConfigError, match="sha256"):
        Keys.from_env(settings, {})


def test_mcp_over_http_serves_only_the_libraries_a_key_reads(two_libraries: tuple[str, Path, Path], tmp_path: Path) -> None:
    """`bookindex mcp ROOT --transport http`: every tool takes the library by name; a key for A
    gets "no library 'b'" for B, exactly as for a library that does not exist, and a call without
    a library lists only A."""
    _, root, cache = two_libraries
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    scoped = json.dumps([{"id": "team-a", "sha256": digest(KEY_A), "read": ["a"]}])
    env = cli_env(cache, BOOKINDEX_SCOPED_KEYS=scoped)
    with cli_server(["mcp", str(root), "--transport", "http", "--port", str(port)], env, tmp_path,
                    tmp_path / "mcp.log", url):
        assert httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
        big = httpx.post(url, content=b"x" * (2 * 2**20), headers={"Authorization": f"Bearer {KEY_A}"})
        assert big.status_code == 413

        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async def main() -> None:
            with anyio.fail_after(240):
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY_A}"}, timeout=120) as http:
                    async with Client(streamable_http_client(url, http_client=http)) as client:
                        tools = {t.name: t for t in (await client.list_tools()).tools}
                        props = tools["search"].input_schema["properties"]
                        assert "library" in props and "ctx" not in props
                        ok = await client.call_tool("list_documents", {"library": "a"})
                        assert not ok.is_error and ok.structured_content["result"][0]["name"] == "libtasn1.pdf"
                        texts = {}
                        for library in ("b", "no-such"):
                            r = await client.call_tool("list_documents", {"library": library})
                            texts[library] = "".join(getattr(x, "text", "") for x in r.content)
                            assert r.is_error and f"no library '{library}'" in texts[library], texts
                        r = await client.call_tool("search", {"query": "DER", "library": "b"})
                        assert r.is_error and "no library 'b'" in "".join(getattr(x, "text", "") for x in r.content)
                        r = await client.call_tool("list_documents", {})
                        text = "".join(getattr(x, "text", "") for x in r.content)
                        assert r.is_error and "library: name one of a" in text and "b" not in text.split("one of", 1)[1]
                        hits = await client.call_tool("search", {"query": "decode a DER tag", "k": 2, "library": "a"})
                        assert not hits.is_error and len(hits.structured_content["result"]) == 2
                        assert str(root) not in json.dumps(hits.structured_content)

        anyio.run(main)


def test_serve_a_folder_of_libraries(two_libraries: tuple[str, Path, Path], tmp_path: Path) -> None:
    """`bookindex serve ROOT` serves every library under ROOT, `--library NAME=PATH` one more."""
    _, root, cache = two_libraries
    extra = tmp_path / "elsewhere"
    shutil.copytree(root / "a", extra, ignore=shutil.ignore_patterns(".server"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = cli_env(cache, BOOKINDEX_ADMIN_KEYS=ADMIN)
    with cli_server(["serve", str(root), "--port", str(port), "--library", f"manuals={extra}"], env, tmp_path,
                    tmp_path / "serve.log", base + "/health"):
        h = {"X-API-Key": ADMIN}
        assert [x["name"] for x in httpx.get(f"{base}/libraries", headers=h).json()] == ["a", "b", "manuals"]
        r = httpx.post(f"{base}/libraries/manuals/search", json={"query": "DER", "k": 2}, headers=h, timeout=120)
        assert r.status_code == 200 and len(r.json()) == 2
        assert httpx.get(f"{base}/documents", headers=h).status_code == 404  # several: name one
        log = (tmp_path / "serve.log").read_text()
    assert "library manuals" in log and "library a" in log


def test_inspector_over_several_libraries(two_libraries: tuple[str, Path, Path]) -> None:
    """On a server of several libraries `/ui/` lists the libraries the session's key reads and
    each library's pages live at /libraries/NAME/ui/; another library's pages are 404."""
    base, root, cache = two_libraries
    rec = Recorder(base, forbidden_folders(root, cache))
    c = rec.client
    first = c.get("/libraries/a/ui/", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/ui/login?next=/libraries/a/ui/"
    login = c.post("/ui/login", data={"key": KEY_A, "next": "/libraries/a/ui/"}, follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == "/libraries/a/ui/"
    assert KEY_A not in login.headers["set-cookie"]
    listing = c.get("/ui/")
    assert listing.status_code == 200 and 'href="/libraries/a/ui/"' in listing.text and "/libraries/b/" not in listing.text
    page = c.get("/libraries/a/ui/")
    assert page.status_code == 200 and "libtasn1.pdf" in page.text
    doc_id = c.get("/libraries/a/documents").json()[0]["doc_id"]
    doc_page = c.get(f"/libraries/a/ui/documents/{doc_id}")
    assert doc_page.status_code == 200 and 'data-api="/libraries/a"' in doc_page.text
    assert 'data-prefix="/libraries/a/ui"' in doc_page.text and 'href="/ui/static/inspector.css"' in doc_page.text
    assert c.get(f"/libraries/a/documents/{doc_id}/pages/1.png", params={"dpi": 40}).status_code == 200
    for path in ("/libraries/b/ui/", f"/libraries/b/ui/documents/{doc_id}", f"/libraries/b/ui/api/nodes/{doc_id}-00001"):
        assert c.get(path).status_code == 404, path
    assert c.get("/ui/documents/x").status_code == 404  # several libraries: name one
    rec.scan()
