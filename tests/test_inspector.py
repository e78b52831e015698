"""The web inspector: fast HTML-route tests with FastAPI's TestClient over a small
Markdown library, then headless Chromium (Debian's `chromium`, driven by Playwright) against a
real server on 127.0.0.1 serving libtasn1: expand a section, click citation 1 and compare the
highlight with the node's bbox, edit and re-run the plan, a `<script>` question shown as text.
Then the inspector as a workplace: front matter folded on the document page, an entity's
neighbourhood drawn (cytoscape.js from the package), upload, re-index and delete for write keys
only. The browser run takes a screenshot of each page: into docs/img/ when BOOKINDEX_SCREENSHOTS=docs
is set (how the committed ones were made), else into the test's temporary folder, so a plain
test run leaves the checkout unchanged."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fakes import ExtractionScript, FakeEmbedder, FakeLLM
from fastapi.testclient import TestClient
from server_helpers import thread_server

from bookindex.core.config import load_settings
from bookindex.engine import Engine
from bookindex.server.app import create_app
from bookindex.server.auth import Keys
from bookindex.server.sessions import COOKIE

REPO = Path(__file__).resolve().parents[1]
IMG = REPO / "docs" / "img"
SCRATCH = Path(tempfile.gettempdir()) / f"bookindex-inspector-shots-{os.getpid()}"
READ = "inspector-read-key"
XSS = '<script>window.__xss = 1</script> what does asn1_create_element do?'


# -- fast: the HTML routes through TestClient -----------------------------------------------------
@pytest.fixture(scope="module")
def md_engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    from library_helpers import handbook_markdown

    root = tmp_path_factory.mktemp("inspector-md")
    src = root / "handbook.md"
    src.write_text(handbook_markdown())
    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(root / "cache")}, env={})
    engine = Engine(root / "lib", settings, embedder=FakeEmbedder())
    engine.index(src, graph=False)
    return engine


def client(engine: Engine, keys: Keys | None = None) -> TestClient:
    return TestClient(create_app(engine, keys or Keys(frozenset(), frozenset()), isolate_builds=False))


def test_pages_render_and_escape(md_engine: Engine) -> None:
    with client(md_engine) as c:
        lib = c.get("/ui/")
        assert lib.status_code == 200 and "handbook.md" in lib.text
        doc_id = md_engine.documents()[0].doc_id
        page = c.get(f"/ui/documents/{doc_id}")
        assert page.status_code == 200 and 'id="doc-data"' in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        rows = c.get(f"/ui/api/documents/{doc_id}/children/{doc_id}-root").json()
        assert rows and {"id", "type", "label", "page", "page_end", "children"} <= set(rows[0])
        node = c.get(f"/ui/api/nodes/{rows[0]['id']}").json()
        assert node["doc_id"] == doc_id and "boxes" in node and "image_file" not in node

        ask = c.get("/ui/ask", params={"q": XSS, "doc": doc_id, "compare": ["bm25", "evil"]})
        assert ask.status_code == 200
        assert "<script>window.__xss" not in ask.text and "&lt;script&gt;window.__xss" in ask.text
        assert "<h3>bm25</h3>" in ask.text and "<h3>evil</h3>" not in ask.text
        assert c.get("/ui/static/inspector.js").status_code == 200


def test_errors_are_pages_with_status(md_engine: Engine) -> None:
    with client(md_engine) as c:
        missing = c.get("/ui/documents/no-such.pdf")
        assert missing.status_code == 404 and "no document" in missing.text
        assert c.get("/ui/documents/..%2Fetc").status_code in (400, 404)
        bad = c.get("/ui/documents/x<b>y")
        assert bad.status_code == 400 and "<b>" not in bad.text and "&lt;b&gt;" in bad.text
        doc_id = md_engine.documents()[0].doc_id
        assert c.get(f"/ui/api/nodes/{doc_id}-99999").status_code == 404
        assert c.get("/ui/api/nodes/../../x").status_code == 404  # no such route
        assert c.get(f"/ui/api/nodes/{quote('a/../b', safe='')}").status_code in (400, 404)
        assert c.get(f"/ui/documents/{doc_id}/graph", params={"entity": "../x"}).status_code == 400
        broken = c.post("/ui/ask", data={"plan": '{"question": "q", "steps": [{"op": "Nope"}]}', "doc": doc_id})
        assert broken.status_code == 422 and "plan:" in broken.text
        assert c.get("/ui/skills", params={"folder": "../../etc"}).status_code == 404


def test_login_session_cookie(md_engine: Engine) -> None:
    """The login form opens a server-side session: the cookie holds a random id, never the key;
    logging out ends the session on the server, so a copy of the cookie opens nothing."""
    with client(md_engine, Keys(frozenset({READ}), frozenset())) as c:
        page = c.get("/ui/", follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"] == "/ui/login?next=/ui/"
        assert c.get("/documents").status_code == 401  # the API still answers 401, not a redirect
        assert c.get("/ui/login").status_code == 200
        bad = c.post("/ui/login", data={"key": "wrong", "next": "/ui/"}, follow_redirects=False)
        assert bad.status_code == 401 and COOKIE not in bad.headers.get("set-cookie", "")
        ok = c.post("/ui/login", data={"key": READ, "next": "https://evil.example/"}, follow_redirects=False)
        assert ok.status_code == 303 and ok.headers["location"] == "/ui/"  # never another site
        cookie = ok.headers["set-cookie"]
        session = c.cookies[COOKIE]
        assert READ not in cookie and len(session) >= 40 and session != READ
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict") and "Max-Age=" in cookie
        again = c.post("/ui/login", data={"key": READ}, follow_redirects=False)
        assert again.cookies[COOKIE] != session  # a random id per login
        c.cookies.clear()
        c.cookies.set(COOKIE, session)
        assert c.get("/ui/").status_code == 200  # the client keeps the cookie
        assert c.get("/documents").status_code == 200  # the page script's API calls pass too
        c.post("/ui/logout")
        assert c.get("/ui/", follow_redirects=False).status_code == 303
        c.cookies.clear()
        c.cookies.set(COOKIE, session)  # the ended session's id, replayed
        assert c.get("/documents").status_code == 401
        c.cookies.clear()
        c.cookies.set(COOKIE, READ)  # the key itself is no cookie
        assert c.get("/documents").status_code == 401


def test_sign_in_page_offers_a_signed_out_user_only_signing_in(md_engine: Engine) -> None:
    """Signed out, the form is all there is: no Sign out (there is no session to end) and no
    links to pages that would send the browser back to the form; signed in, both are there."""
    signed_in_only = ('action="/ui/logout"', "Sign out", 'href="/ui/ask"', 'href="/ui/skills"', 'href="/docs"')

    def offered(html: str) -> list[str]:
        return [s for s in signed_in_only if s in html]

    with client(md_engine, Keys(frozenset({READ}), frozenset())) as c:
        form = c.get("/ui/login")
        assert form.status_code == 200 and 'name="key"' in form.text
        assert offered(form.text) == []
        refused = c.post("/ui/login", data={"key": "wrong", "next": "/ui/"})
        assert refused.status_code == 401 and offered(refused.text) == []
        c.post("/ui/login", data={"key": READ})
        assert offered(c.get("/ui/").text) == list(signed_in_only)
        assert "Sign out" in c.get("/ui/login").text  # signed in, the form page can still end the session
        c.post("/ui/logout")
        assert offered(c.get("/ui/login").text) == []
    with client(md_engine) as c:  # an open server: every page is there to go to, no session to end
        shown = offered(c.get("/ui/").text)
        assert shown == ['href="/ui/ask"', 'href="/ui/skills"', 'href="/docs"']


def test_upload_and_delete_from_the_library_page(tmp_path: Path) -> None:
    """A write key's library page uploads (an index job, listed with its state) and deletes; a
    read key sees neither form and its posts are refused (403)."""
    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(tmp_path / "cache")}, env={})
    engine = Engine(tmp_path / "lib", settings, embedder=FakeEmbedder())
    admin = "inspector-admin-key"
    app = create_app(engine, Keys(frozenset({READ}), frozenset({admin})), isolate_builds=False)
    md = b"# Pumps\n\n## Priming\n\nThe pump is primed with the blue valve.\n"
    with TestClient(app) as c:
        c.post("/ui/login", data={"key": READ})
        page = c.get("/ui/")
        assert page.status_code == 200 and 'action="/ui/upload"' not in page.text
        refused = c.post("/ui/upload", files={"file": ("pumps.md", md, "text/markdown")})
        assert refused.status_code == 403 and "writes library" in refused.text
        c.post("/ui/logout")
        c.post("/ui/login", data={"key": admin})
        page = c.get("/ui/")
        assert 'action="/ui/upload"' in page.text and 'enctype="multipart/form-data"' in page.text
        r = c.post("/ui/upload", files={"file": ("pumps.md", md, "text/markdown")}, data={"graph": ""},
                   follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].startswith("/ui/?job="), r.text
        assert app.state.server.libraries["lib"].jobs.wait_idle(60)
        page = c.get(r.headers["location"])
        assert "pumps.md" in page.text and ">done<" in page.text and "added" in page.text
        doc_id = engine.documents()[0].doc_id
        bad = c.post("/ui/upload", files={"file": ("evil.exe", b"MZ", "application/octet-stream")})
        assert bad.status_code == 415 and "unsupported file type" in bad.text
        gone = c.post(f"/ui/documents/{doc_id}/delete", follow_redirects=False)
        assert gone.status_code == 303 and engine.documents() == []
        assert c.post(f"/ui/documents/{doc_id}/delete").status_code == 404


MANUAL = ("Pump Manual\n\nVersion 2\n\nContents\n\n- Priming 1\n- Valves 2\n\n"
          "# Priming\n\nThe Pump is primed with the Blue Valve and the Red Lever.\n\n"
          "# Valves\n\nThe Blue Valve opens the Inlet; the Red Lever closes the Inlet.\n\n"
          "# Levers\n\nThe Red Lever locks the Pump.\n")


def graph_engine(root: Path, text: str = MANUAL, graph: dict[str, Any] | None = None) -> Engine:
    """A library holding `text` (by default MANUAL: a cover, a contents list, three sections) with
    a knowledge graph from the scripted extractor (each capitalised word an entity, the first two
    of a node related); `graph`: more graph.* settings."""
    root.mkdir(parents=True, exist_ok=True)
    src = root / "manual.md"
    src.write_text(text)
    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(root / "cache"),
                                        "graph.extractor": "llm", **(graph or {})}, env={})
    engine = Engine(root / "lib", settings, embedder=FakeEmbedder(),
                    llm=FakeLLM(ExtractionScript.for_library(), model="scripted"))
    engine.index(src, graph=True)
    return engine


@pytest.fixture(scope="module")
def manual_engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return graph_engine(tmp_path_factory.mktemp("inspector-manual"))


def doc_rows(html: str) -> list[dict[str, Any]]:
    """The first-level rows a document page hands its script."""
    start = html.index('id="doc-data">') + len('id="doc-data">')
    return list(json.loads(html[start:html.index("</script>", start)])["rows"])


def test_front_matter_is_one_folded_row(manual_engine: Engine, md_engine: Engine) -> None:
    """The leaves before the first section (the cover's lines) are one collapsed "Front matter"
    row; the printed contents is a row of its own, the section of role "contents" the stored tree
    holds (what `tree` and MCP show), its list inside it; the sections follow; the group opens
    through its own route. A document whose first child is a section has no group."""
    doc = manual_engine.documents()[0]
    tree = manual_engine.tree(doc.doc_id)
    with client(manual_engine) as c:
        rows = doc_rows(c.get(f"/ui/documents/{doc.doc_id}").text)
        assert rows[0]["type"] == "group" and rows[0]["label"] == "Front matter" and rows[0]["children"] == 2
        assert [(r["label"], r["role"]) for r in rows[1:]] == [
            ("Contents", "contents"), ("Priming", ""), ("Valves", ""), ("Levers", "")]
        contents = tree.nodes[rows[1]["id"]]
        assert contents.role == "contents" and [tree.nodes[k].type for k in contents.children] == ["list"]
        inside = c.get(f"/ui/api/documents/{doc.doc_id}/matter/front").json()
        assert [r["id"] for r in inside] == tree.root.children[:2]
        assert all(r["children"] == 0 for r in inside)
        assert c.get(f"/ui/api/documents/{doc.doc_id}/matter/back").status_code == 404  # none here
        assert c.get(f"/ui/api/documents/{doc.doc_id}/matter/evil").status_code == 404
    with client(md_engine) as c:
        doc_id = md_engine.documents()[0].doc_id
        assert all(r["type"] != "group" for r in doc_rows(c.get(f"/ui/documents/{doc_id}").text))


def test_graph_page_carries_the_drawing(manual_engine: Engine) -> None:
    """An entity's page ships its neighbourhood as cytoscape elements (the entity, its neighbours,
    the relations among them) and loads cytoscape.js from the package, never a CDN."""
    doc = manual_engine.documents()[0]
    ent = manual_engine.graph.entities(doc.doc_id, "Blue")[0]
    view = manual_engine.graph.entity(doc.doc_id, ent.id)
    with client(manual_engine) as c:
        page = c.get(f"/ui/documents/{doc.doc_id}/graph", params={"entity": ent.id})
        assert page.status_code == 200
        assert '/ui/static/vendor/cytoscape.min.js' in page.text and "https://" not in page.text
        start = page.text.index('id="graph-data">') + len('id="graph-data">')
        data = json.loads(page.text[start:page.text.index("</script>", start)])
        assert data["center"] == ent.id and [n["id"] for n in data["nodes"]] == [ent.id, *(n.id for n in view.neighbours)]
        assert {e["source"] for e in data["edges"] if e["spoke"]} | {e["target"] for e in data["edges"] if e["spoke"]} \
            >= {n.id for n in view.neighbours}
        js = c.get("/ui/static/vendor/cytoscape.min.js")
        assert js.status_code == 200 and "cytoscape" in js.text[:2000].lower()
        assert "MIT" in c.get("/ui/static/vendor/cytoscape.LICENSE").text or \
            "Permission is hereby granted" in c.get("/ui/static/vendor/cytoscape.LICENSE").text
        assert "graph-data" not in c.get(f"/ui/documents/{doc.doc_id}/graph").text  # no entity chosen: no drawing


def test_write_routes_refuse_read_keys_and_reindex_rebuilds(tmp_path: Path) -> None:
    """Upload, re-index and delete, from the inspector and through REST, refuse a key that only
    reads the library (403) and leave it unchanged; a write key's re-index queues a forced
    rebuild of the stored document from its source, with the graph switched as asked."""
    engine = graph_engine(tmp_path)
    doc = engine.documents()[0]
    admin = "inspector-admin-key"
    app = create_app(engine, Keys(frozenset({READ}), frozenset({admin})), isolate_builds=False)
    read, write = {"X-API-Key": READ}, {"X-API-Key": admin}
    md = b"# Pumps\n\nThe pump is primed with the blue valve.\n"
    with TestClient(app) as c:
        for method, url in (("post", "/documents"), ("post", f"/documents/{doc.doc_id}/reindex"),
                            ("delete", f"/documents/{doc.doc_id}")):
            files = {"file": ("pumps.md", md, "text/markdown")} if url == "/documents" else None
            r = c.request(method, url, headers=read, files=files)
            assert r.status_code == 403 and "writes library" in r.json()["detail"], (url, r.text)
        c.post("/ui/login", data={"key": READ})
        page = c.get("/ui/")
        assert "/reindex" not in page.text and "/delete" not in page.text
        for url in ("/ui/upload", f"/ui/documents/{doc.doc_id}/reindex", f"/ui/documents/{doc.doc_id}/delete"):
            files = {"file": ("pumps.md", md, "text/markdown")} if url == "/ui/upload" else None
            r = c.post(url, files=files, data={"graph": "on"})
            assert r.status_code == 403 and "writes library" in r.text, url
        assert [d.doc_id for d in engine.documents()] == [doc.doc_id] and c.get("/jobs", headers=read).json() == []
        c.post("/ui/logout")

        c.post("/ui/login", data={"key": admin})
        page = c.get("/ui/")
        assert f'action="/ui/documents/{doc.doc_id}/reindex"' in page.text
        r = c.post(f"/ui/documents/{doc.doc_id}/reindex", data={}, follow_redirects=False)  # graph unticked
        assert r.status_code == 303 and r.headers["location"].startswith("/ui/?job="), r.text
        assert app.state.server.libraries["lib"].jobs.wait_idle(60)
        job = c.get(f"/jobs/{r.headers['location'].split('=')[1]}", headers=write).json()
        assert job["state"] == "done" and job["reindex"] == doc.doc_id and job["file"] == "", job
        assert job["report"]["status"] == "replaced" and not job["report"]["graph_built"]
        assert not engine.document(doc.doc_id).graph
        assert ">done<" in c.get(r.headers["location"]).text

        again = c.post(f"/documents/{doc.doc_id}/reindex?graph=true", headers=write)
        assert again.status_code == 202 and again.headers["location"] == f"/jobs/{again.json()['id']}"
        assert app.state.server.libraries["lib"].jobs.wait_idle(60)
        job = c.get(again.headers["location"], headers=write).json()
        assert job["state"] == "done" and job["report"]["graph_built"], job
        assert engine.document(doc.doc_id).graph and (tmp_path / "manual.md").is_file()  # the source stays

        assert c.post("/documents/nosuch.pdf/reindex", headers=write).status_code == 404
        (tmp_path / "manual.md").unlink()
        gone = c.post(f"/documents/{doc.doc_id}/reindex", headers=write)
        assert gone.status_code == 409 and "source file is gone" in gone.json()["detail"]
        assert "manual.md" in gone.json()["detail"] and str(tmp_path) not in gone.text


# -- headless Chromium against a real server --------------------------------------------------------
def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("no chromium executable (Debian: apt-get install chromium; scripts/install.sh --dev)")
    return exe


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def ui_server(libtasn1_library: tuple[Path, Path]) -> Iterator[tuple[str, Engine]]:
    lib, cache = libtasn1_library
    engine = Engine(lib, load_settings(overrides={"llm.provider": "none", "cache.path": str(cache)}, env={}))
    with thread_server(create_app(engine, Keys(frozenset(), frozenset()))) as base:
        yield base, engine


def shot(page: Any, name: str, docs: bool = True) -> None:
    """A screenshot of the viewport: into docs/img/ under BOOKINDEX_SCREENSHOTS=docs when `docs`,
    else into a scratch folder."""
    folder = IMG if docs and os.environ.get("BOOKINDEX_SCREENSHOTS") == "docs" else SCRATCH
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=False)
    assert (folder / name).stat().st_size > 1000



@pytest.mark.slow
def test_tree_expand_and_node(browser: Any, ui_server: tuple[str, Engine]) -> None:
    base, engine = ui_server
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{base}/ui/")
    assert page.locator("table.docs").get_by_text("libtasn1.pdf").count() == 1
    shot(page, "inspector-library.png")
    page.goto(f"{base}/ui/documents/libtasn1.pdf")
    page.wait_for_selector("#tree[data-ready]")
    # the first screen: front matter folded into one row, then the document's sections
    first = page.locator("#tree > li").first
    assert first.get_attribute("data-group") == "front" and "Front matter" in first.inner_text()
    assert page.locator("#tree > li .badge.t-section").count() == page.locator("#tree > li").count() - 1
    folded = int(first.locator(".count").inner_text().strip("()").split()[0])
    first.locator(".node-link").click()  # the row's label opens the fold too
    page.wait_for_selector("#tree > li[data-group=front][aria-expanded=true] > ul > li")
    assert first.locator("ul > li").count() == folded
    first.locator(".twisty").first.click()
    assert first.get_attribute("aria-expanded") == "false"
    section = page.locator("#tree > li[aria-expanded]:not([data-group])", has_text="Function reference").first
    before = page.locator("#tree li").count()
    section.locator(".twisty").first.click()
    page.wait_for_selector("#tree > li[aria-expanded=true] > ul > li")
    assert page.locator("#tree li").count() > before
    assert section.get_attribute("aria-expanded") == "true"
    child = section.locator("ul > li .node-link").first
    child.focus()
    page.keyboard.press("Enter")  # keyboard: a focused row opens with Enter
    page.wait_for_selector("#viewer img[data-loaded]")
    page.wait_for_selector("#viewer .box")  # the node's boxes follow its JSON
    assert page.locator("#node pre.node-text, #node h3").count() >= 1
    assert page.locator("#viewer .box").count() >= 1
    shot(page, "inspector-document.png")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # no sideways scrolling
    shot(page, "inspector-document-390.png")
    page.close()


@pytest.mark.slow
def test_upload_form_in_the_browser(browser: Any, tmp_path: Path) -> None:
    """The library page's upload form, in Chromium: choose a file, submit, the job is listed
    and ends done, the document appears; its delete button removes it."""
    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(tmp_path / "cache")}, env={})
    engine = Engine(tmp_path / "lib", settings, embedder=FakeEmbedder())
    md = tmp_path / "pumps.md"
    md.write_text("# Pumps\n\n## Priming\n\nThe pump is primed with the blue valve.\n")
    with thread_server(create_app(engine, Keys(frozenset(), frozenset()), isolate_builds=False)) as base:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{base}/ui/")
        page.set_input_files("form.upload input[type=file]", str(md))
        page.uncheck("form.upload input[name=graph]")
        page.click("form.upload button[type=submit]")
        page.wait_for_url("**/ui/?job=*")
        state = page.locator("table.jobs tbody tr", has_text="pumps.md").locator("td").nth(1)
        for _ in range(100):
            if state.inner_text() in ("done", "failed"):
                break
            page.wait_for_timeout(200)
            page.reload()
        assert state.inner_text() == "done"
        assert page.locator("table.docs").get_by_text("pumps.md").count() == 1
        # re-index it (graph left unticked): a second job, a forced rebuild
        page.click("table.docs form.reindex button[type=submit]")
        page.wait_for_url("**/ui/?job=*")
        job_id = page.url.split("job=")[1]
        row = page.locator("table.jobs tbody tr[aria-current=true]")
        for _ in range(100):
            if row.locator("td").nth(1).inner_text() in ("done", "failed"):
                break
            page.wait_for_timeout(200)
            page.reload()
        assert row.locator("td").nth(1).inner_text() == "done" and job_id[:12] in row.inner_text()
        assert row.locator("td").nth(4).inner_text() == "replaced" and "re-index" in row.locator("td").first.inner_text()
        assert page.locator("table.jobs tbody tr").count() == 2
        shot(page, "inspector-upload.png")
        page.click("table.docs button:has-text('Delete')")
        page.wait_for_url(f"{base}/ui/")
        assert page.locator("table.docs").count() == 0 and engine.documents() == []
        page.close()


@pytest.mark.slow
def test_read_key_gets_no_write_forms_in_the_browser(browser: Any, tmp_path: Path) -> None:
    """Signed in with a read key, the library page shows no upload, re-index or delete form, and
    the same posts sent with the session's cookie are refused (403); a write key sees all three."""
    engine = graph_engine(tmp_path)
    doc = engine.documents()[0]
    admin = "inspector-admin-key"
    app = create_app(engine, Keys(frozenset({READ}), frozenset({admin})), isolate_builds=False)
    with thread_server(app) as base:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto(f"{base}/ui/")
        page.fill("#key", READ)
        page.click("main form button[type=submit]")
        page.wait_for_url(f"{base}/ui/")
        assert page.locator("table.docs").get_by_text("manual.md").count() == 1
        assert page.locator("form.upload, form.reindex, form[action$='/delete']").count() == 0
        for url in (f"/ui/documents/{doc.doc_id}/reindex", f"/ui/documents/{doc.doc_id}/delete", "/ui/upload"):
            r = page.request.post(base + url, form={"graph": "on"})
            assert r.status == 403 and "writes library" in r.text(), url
        assert [d.doc_id for d in engine.documents()] == [doc.doc_id] and app.state.server.libraries["lib"].jobs.list() == []
        page.click("header form button")  # sign out
        page.wait_for_url("**/ui/login")
        page.fill("#key", admin)
        page.click("main form button[type=submit]")
        page.wait_for_url(f"{base}/ui/")
        assert page.locator("form.upload").count() == 1 and page.locator("form.reindex").count() == 1
        assert page.locator("table.docs button:has-text('Delete')").count() == 1
        context.close()


@pytest.mark.slow
def test_graph_neighbourhood_drawn(browser: Any, tmp_path: Path) -> None:
    """The graph page draws the chosen entity with its neighbours (cytoscape.js from the package,
    under the page's CSP: no violation); clicking a neighbour opens its own neighbourhood."""
    engine = graph_engine(tmp_path)
    doc = engine.documents()[0]
    with thread_server(create_app(engine, Keys(frozenset(), frozenset()), isolate_builds=False)) as base:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("requestfailed", lambda r: problems.append(f"failed {r.url}"))
        page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.goto(f"{base}/ui/documents/{doc.doc_id}/graph")
        page.locator("ul.plain a").first.click()  # the best-connected entity
        page.wait_for_selector("#graph-canvas[data-ready]")
        center = page.evaluate("new URLSearchParams(location.search).get('entity')")
        view = engine.graph.entity(doc.doc_id, center)
        assert int(page.get_attribute("#graph-canvas", "data-nodes") or 0) == 1 + len(view.neighbours) >= 3
        assert int(page.get_attribute("#graph-canvas", "data-edges") or 0) >= len(view.neighbours)
        assert page.locator("#graph-canvas canvas").count() >= 1
        box = page.locator("#graph-canvas").bounding_box()
        assert box and box["width"] > 300 and box["height"] > 300
        names = page.evaluate("window.inspectorGraph.nodes().map(n => n.data('name'))")
        assert sorted(names) == sorted([view.entity.name, *(n.name for n in view.neighbours)])
        shot(page, "inspector-graph-scripted.png", docs=False)  # docs/img's graph is gnuplot's
        other = view.neighbours[0]
        with page.expect_navigation(timeout=90_000):  # a loaded machine redraws slowly
            page.evaluate(f"window.inspectorGraph.getElementById({json.dumps(other.id)}).emit('tap')")
        page.wait_for_selector("#graph-canvas[data-ready]")
        assert page.evaluate("new URLSearchParams(location.search).get('entity')") == other.id
        assert page.locator("#ent-h").inner_text().startswith(other.name)
        assert problems == [], problems
        page.close()


# A hub related to 24 parts with long names: a drawing of its neighbourhood is crowded
HUB = "# Parts\n\n" + "".join(f"Gearbox Lubricationcontrollerassembly{i:02d} is fitted.\n\n" for i in range(24))
OVERLAPS_JS = """() => {
  const boxes = window.inspectorGraph.nodes().map((n) => n.boundingBox({ includeLabels: true, includeOverlays: false }));
  let n = 0;
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2) n++;
  }
  return n;
}"""


def test_graph_labels_do_not_overlap(browser: Any, tmp_path: Path) -> None:
    """A crowded neighbourhood (24 neighbours with long names) is drawn with no two labels
    overlapping and a readable font; a label is cut short until hovered, when the node shows its
    whole name and its edges their relation."""
    # one prompt fragment per paragraph (each relates the hub to its part); exact names: the fake
    # embedder's few buckets would merge the parts
    engine = graph_engine(tmp_path, HUB, {"graph.er": "exact", "graph.merge_tokens": 1})
    doc = engine.documents()[0]
    hub = engine.graph.entities(doc.doc_id, "Gearbox")[0]
    assert len(engine.graph.entity(doc.doc_id, hub.id).neighbours) >= 24
    with thread_server(create_app(engine, Keys(frozenset(), frozenset()), isolate_builds=False)) as base:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{base}/ui/documents/{doc.doc_id}/graph?entity={hub.id}")
        page.wait_for_selector("#graph-canvas[data-ready]")
        assert int(page.get_attribute("#graph-canvas", "data-nodes") or 0) == 25
        assert page.evaluate(OVERLAPS_JS) == 0
        assert page.evaluate("window.inspectorGraph.zoom()") * 12 >= 7  # label pixels on screen
        other = engine.graph.entity(doc.doc_id, hub.id).neighbours[0].id
        cut = page.evaluate(f"window.inspectorGraph.getElementById({json.dumps(other)}).renderedBoundingBox({{includeLabels: true}}).w")
        page.evaluate(f"window.inspectorGraph.getElementById({json.dumps(other)}).emit('mouseover')")
        whole = page.evaluate(f"window.inspectorGraph.getElementById({json.dumps(other)}).renderedBoundingBox({{includeLabels: true}}).w")
        assert whole > cut * 1.5
        assert page.evaluate(f"window.inspectorGraph.getElementById({json.dumps(other)}).connectedEdges('.hover').length") >= 1
        shot(page, "inspector-graph-crowded.png", docs=False)
        page.close()


@pytest.mark.slow
def test_ask_citation_plan_edit_and_escape(browser: Any, ui_server: tuple[str, Engine]) -> None:
    base, engine = ui_server
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    q = "What does asn1_der_coding do?"
    page.goto(f"{base}/ui/ask?q={quote(q)}&doc=libtasn1.pdf&compare=bm25&compare=dense")
    assert page.locator(".cite").count() >= 1, page.content()[:2000]
    page.locator(".cite[data-n='1']").first.click()
    page.wait_for_selector("#cite-viewer img[data-loaded]")

    # the highlight of citation 1 is its node's bbox scaled to the displayed image (+-2 px)
    answer = httpx.post(f"{base}/ask", json={"question": q, "doc": "libtasn1.pdf"}, timeout=60).json()
    ev = answer["evidence"][0]
    x0, y0, x1, y1 = engine.node(ev["node_id"]).bbox or ev["bbox"]
    pw, ph = engine.page_info("libtasn1.pdf").sizes[ev["page_idx"]]
    fig = page.locator(f"#cite-viewer figure[data-page='{ev['page']}']")
    img = fig.locator("img").bounding_box()
    box = fig.locator(".box.current[data-role=primary]").bounding_box()
    assert img and box
    sx, sy = img["width"] / pw, img["height"] / ph
    for got, want in ((box["x"] - img["x"], x0 * sx), (box["y"] - img["y"], y0 * sy),
                      (box["width"], (x1 - x0) * sx), (box["height"], (y1 - y0) * sy)):
        assert abs(got - want) <= 2, (box, img, (x0, y0, x1, y1))
    assert page.locator("#cite-viewer .box").count() >= 1
    assert page.locator(".baselines .column").count() == 2
    assert page.locator("ol.steps .op", has_text="Skyline_Ranker").count() >= 1
    shot(page, "inspector-ask.png")

    # edit the plan: fewer results, re-run; the evidence count changes
    count = int(page.locator("#evidence-count").get_attribute("data-count") or 0)
    plan = json.loads(page.locator("#plan").input_value())
    assert set_param(plan, "max_results", 3) and set_param(plan, "max_evidence", 3)
    page.locator("#plan").fill(json.dumps(plan, indent=2))
    with page.expect_navigation():
        page.get_by_role("button", name="Re-run plan").click()
    page.wait_for_selector("#evidence-count")
    assert page.locator(".badge", has_text="edited plan").count() == 1
    new_count = int(page.locator("#evidence-count").get_attribute("data-count") or 0)
    assert new_count != count and new_count == page.locator("#evidence > li").count()
    shot(page, "inspector-plan-rerun.png")

    # a question holding <script> is text, never markup
    page.goto(f"{base}/ui/ask?q={quote(XSS)}&doc=libtasn1.pdf")
    assert page.locator("#question-text").text_content() == XSS
    assert page.evaluate("window.__xss === undefined")
    assert page.locator("textarea#q").input_value() == XSS
    page.close()


def set_param(plan: dict[str, Any], name: str, value: Any) -> bool:
    """Set `name` in every step's params that has it (ForEach and Parallel steps included)."""
    hit = False

    def walk(steps: list[dict[str, Any]] | None) -> None:
        nonlocal hit
        for s in steps or []:
            if name in (s.get("params") or {}):
                s["params"][name] = value
                hit = True
            walk(s.get("steps"))
            if s.get("fallback"):
                walk([s["fallback"]])

    walk(plan.get("steps"))
    return hit
