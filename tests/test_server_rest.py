"""The REST server against real uvicorn servers on 127.0.0.1: upload → job → ask/stream →
delete, auth (401/403), limits (413/415/422/429), a malformed PDF, path traversal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_helpers import LIBTASN1, poll_job, sse_events, thread_server

from bookindex.core.config import Settings, load_settings
from bookindex.engine import Engine
from bookindex.server.app import create_app
from bookindex.server.auth import Keys

pytestmark = pytest.mark.slow

READ, ADMIN = "read-key-1", "admin-key-1"


def settings_for(cache: Path, **server: object) -> Settings:
    over: dict[str, object] = {"llm.provider": "none", "cache.path": str(cache)}
    over.update({f"server.{k}": v for k, v in server.items()})
    return load_settings(overrides=over, env={})


@pytest.fixture
def open_server(tmp_path: Path, libtasn1_library: tuple[Path, Path]) -> Iterator[tuple[str, Path]]:
    """A fresh, empty library served with no keys (loopback: open)."""
    _, cache = libtasn1_library
    lib = tmp_path / "lib"
    engine = Engine(lib, settings_for(cache))
    with thread_server(create_app(engine, Keys(frozenset(), frozenset()))) as base:
        yield base, lib


@pytest.fixture
def keyed_server(libtasn1_library: tuple[Path, Path]) -> Iterator[str]:
    """The session's libtasn1 library served with one read and one admin key (read-only use)."""
    lib, cache = libtasn1_library
    engine = Engine(lib, settings_for(cache, max_question_chars=200))
    with thread_server(create_app(engine, Keys(frozenset({READ}), frozenset({ADMIN})))) as base:
        yield base


def upload(base: str, path: Path, headers: dict[str, str] | None = None, name: str | None = None,
           **params: str) -> httpx.Response:
    with open(path, "rb") as fh:
        return httpx.post(f"{base}/documents", files={"file": (name or path.name, fh, "application/pdf")},
                          params=params, headers=headers, timeout=60)


def catalog(lib: Path) -> bytes | None:
    p = lib / "library.json"
    return p.read_bytes() if p.exists() else None


def test_upload_poll_ask_stream_delete(open_server: tuple[str, Path]) -> None:
    base, lib = open_server
    r = upload(base, LIBTASN1, graph="false")
    assert r.status_code == 202, r.text
    job = r.json()
    assert r.headers["location"] == f"/jobs/{job['id']}"
    job = poll_job(base, job["id"])
    assert job["state"] == "done", job
    assert job["progress"]["pages"] == 36 and job["progress"]["nodes_embedded"] == job["progress"]["nodes"] > 0
    assert job["progress"]["graph"] == "skipped" and job["report"]["status"] == "added"
    doc_id = job["report"]["doc_id"]

    docs = httpx.get(f"{base}/documents").json()
    assert [d["doc_id"] for d in docs] == [doc_id]
    assert httpx.get(f"{base}/documents/libtasn1.pdf").json()["pages"] == 36

    tree = httpx.get(f"{base}/documents/{doc_id}/tree", params={"depth": 1}).json()
    assert tree["type"] == "document" and tree["children"]
    assert all(c["children"] == [] for c in tree["children"])
    section = tree["children"][1]
    node = httpx.get(f"{base}/documents/{doc_id}/nodes/{section['id']}").json()
    assert node["title"] == section["title"] and node["doc_id"] == doc_id

    png = httpx.get(f"{base}/documents/{doc_id}/pages/3.png", params={"dpi": 40})
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert png.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert (lib / ".server" / "pages" / doc_id / "3@40.png").is_file()  # cached

    q = {"question": "Which function decodes a DER encoded tag?", "doc": doc_id}
    answer = httpx.post(f"{base}/ask", json=q, timeout=60).json()
    assert answer["answer"] and answer["evidence"] and answer["plan"]["steps"]

    r = httpx.post(f"{base}/ask", json=q, headers={"Accept": "text/event-stream"}, timeout=60)
    assert r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    names = [e for e, _ in events]
    assert names[:2] == ["plan", "evidence"] and names[-2:] == ["usage", "done"]
    assert set(names[2:-2]) == {"token"}
    done = json.loads(events[-1][1])
    assert "".join(json.loads(d) for e, d in events if e == "token") == done["answer"]
    assert json.loads(events[0][1])["steps"]

    plan = httpx.post(f"{base}/plan", json={"question": q["question"]}, timeout=60).json()
    ran = httpx.post(f"{base}/run-plan", json={"plan": plan, "doc": doc_id}, timeout=60).json()
    assert ran["plan"] == plan and ran["evidence"]
    hits = httpx.post(f"{base}/search", json={"query": "DER tag", "k": 3}, timeout=60).json()
    assert 0 < len(hits) <= 3
    assert httpx.get(f"{base}/stats", timeout=60).json()["documents"] == 1

    r = httpx.delete(f"{base}/documents/{doc_id}", timeout=60)  # a writer: slow on a loaded machine
    assert r.status_code == 200 and r.json()["doc_id"] == doc_id
    assert httpx.get(f"{base}/documents").json() == []
    assert httpx.get(f"{base}/documents/{doc_id}").status_code == 404
    assert not (lib / ".server" / "pages" / doc_id).exists()
    assert not any((lib / ".server" / "files").iterdir())  # its upload went with it


def test_keys_401_403(keyed_server: str) -> None:
    base = keyed_server
    assert httpx.get(f"{base}/health").status_code == 200  # open
    for path in ("/documents", "/jobs", "/stats", "/docs", "/openapi.json"):
        r = httpx.get(base + path)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", path
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["status"] == 401
    assert httpx.get(f"{base}/documents", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert httpx.get(f"{base}/documents", headers={"Authorization": f"Bearer {READ}"}).status_code == 200
    assert httpx.get(f"{base}/documents", headers={"X-API-Key": ADMIN}).status_code == 200
    read = {"X-API-Key": READ}
    assert httpx.post(f"{base}/ask", json={"question": "DER tag"}, headers=read, timeout=60).status_code == 200
    r = upload(base, LIBTASN1, headers=read)
    assert r.status_code == 403 and "admin" in r.json()["detail"]
    assert httpx.delete(f"{base}/documents/libtasn1.pdf", headers=read).status_code == 403
    assert httpx.post(f"{base}/jobs/{'0' * 32}/cancel", headers=read).status_code == 403
    # admin passes the role check; the id is unknown
    assert httpx.post(f"{base}/jobs/{'0' * 32}/cancel", headers={"X-API-Key": ADMIN}).status_code == 404
    assert httpx.get(f"{base}/documents/libtasn1.pdf", headers=read).json()["pages"] == 36


def test_errors_traversal_and_limits(keyed_server: str) -> None:
    base, h = keyed_server, {"X-API-Key": ADMIN}
    doc = httpx.get(f"{base}/documents", headers=h).json()[0]["doc_id"]
    for bad in ("%2e%2e", "..%5C..%5Cetc", "%2e%2e%5cwin.ini", ".hidden", "a%00b"):
        r = httpx.get(f"{base}/documents/{bad}", headers=h)
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["title"] == "Bad Request"
    for bad in ("%2e%2e", "..%5Cetc%5Cpasswd", f"{doc}-..", "x-00001"):
        assert httpx.get(f"{base}/nodes/{bad}", headers=h).status_code == 400, bad
        assert httpx.get(f"{base}/documents/{doc}/nodes/{bad}", headers=h).status_code == 400, bad
    # encoded slashes are path separators to the router: no route, never a file
    assert httpx.get(f"{base}/documents/..%2F..%2Fetc%2Fpasswd/tree", headers=h).status_code == 404
    assert httpx.get(f"{base}/nodes/{doc}-99999", headers=h).status_code == 404
    assert httpx.get(f"{base}/documents/nosuch.pdf", headers=h).status_code == 404
    assert httpx.get(f"{base}/documents/{doc}/pages/0.png", headers=h).status_code == 404
    assert httpx.get(f"{base}/documents/{doc}/pages/1.png", params={"dpi": 9999}, headers=h).status_code == 422
    assert httpx.get(f"{base}/jobs/..%5C..", headers=h).status_code == 400
    r = httpx.post(f"{base}/ask", json={"question": "x" * 201}, headers=h)
    assert r.status_code == 422 and "limit" in r.json()["detail"]
    r = httpx.post(f"{base}/ask", json={"question": "ok", "bogus": 1}, headers=h)
    assert r.status_code == 422 and r.json()["errors"]
    assert httpx.post(f"{base}/ask", json={"question": "ok", "doc": "../x"}, headers=h).status_code == 400
    assert httpx.post(f"{base}/run-plan", json={"plan": {"question": "q"}}, headers=h).status_code == 422


def test_upload_refusals_and_malformed_pdf(tmp_path: Path, libtasn1_library: tuple[Path, Path]) -> None:
    _, cache = libtasn1_library
    lib = tmp_path / "lib"
    engine = Engine(lib, settings_for(cache, max_upload_mb=0.1))
    with thread_server(create_app(engine, Keys(frozenset(), frozenset()))) as base:
        r = upload(base, LIBTASN1)  # 257 KiB > 0.1 MiB
        assert r.status_code == 413 and r.headers["content-type"] == "application/problem+json"
        notes = tmp_path / "notes.docx"
        notes.write_bytes(b"PK\x03\x04")
        assert upload(base, notes).status_code == 415
        fake = tmp_path / "fake.pdf"
        fake.write_text("just text, no PDF header")
        r = upload(base, fake)
        assert r.status_code == 415 and "not a PDF" in r.json()["detail"]
        assert upload(base, fake, name="../../evil.pdf").status_code == 400
        assert httpx.post(f"{base}/documents", data={"x": "1"}).status_code == 400  # no file field
        assert len(httpx.get(f"{base}/jobs").json()) == 0

        before = catalog(lib)
        bad = tmp_path / "broken.pdf"
        bad.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\nthis is not a PDF body\n")
        r = upload(base, bad)
        assert r.status_code == 202
        job = poll_job(base, r.json()["id"])
        assert job["state"] == "failed"
        assert "broken.pdf" in job["error"] and "PDF" in job["error"] and str(tmp_path) not in job["error"]
        assert catalog(lib) == before  # the library is unchanged
        assert httpx.get(f"{base}/documents").json() == []
        assert not (lib / ".server" / "files" / job["sha256"][:16]).exists()  # upload dropped
        assert httpx.post(f"{base}/jobs/{job['id']}/cancel").status_code == 409
        assert [j["id"] for j in httpx.get(f"{base}/jobs", params={"state": "failed"}).json()] == [job["id"]]


def test_reupload_of_a_changed_file_replaces_its_document(open_server: tuple[str, Path], tmp_path: Path) -> None:
    """The same file name uploaded again with new content replaces the document the first
    upload made (as `bookindex index` replaces a changed file at the same path); the first
    version's upload and page images go with it. The same content again is unchanged."""
    base, lib = open_server
    doc = tmp_path / "pumps.md"
    doc.write_text("# Pumps\n\n## Priming\n\nThe pump is primed with the blue valve.\n")
    first = poll_job(base, upload(base, doc, graph="false").json()["id"])
    assert first["state"] == "done" and first["report"]["status"] == "added", first
    old_id = first["report"]["doc_id"]
    doc.write_text("# Pumps\n\n## Priming\n\nThe pump is primed with the red valve.\n")
    second = poll_job(base, upload(base, doc, graph="false").json()["id"])
    assert second["state"] == "done" and second["report"]["status"] == "replaced", second
    new_id = second["report"]["doc_id"]
    assert new_id != old_id
    docs = httpx.get(f"{base}/documents").json()
    assert [(d["doc_id"], d["name"]) for d in docs] == [(new_id, "pumps.md")]
    assert httpx.get(f"{base}/documents/{old_id}").status_code == 404
    answer = httpx.post(f"{base}/ask", json={"question": "Which valve primes the pump?", "doc": "pumps.md"},
                        timeout=60).json()
    assert any("red valve" in e["snippet"] for e in answer["evidence"]), answer["evidence"]
    assert sorted(p.name for p in (lib / ".server" / "files").iterdir()) == [new_id]

    again = poll_job(base, upload(base, doc, graph="false").json()["id"])
    assert again["report"]["status"] == "unchanged" and again["report"]["doc_id"] == new_id
    other = tmp_path / "other.md"
    other.write_text("# Valves\n\nThe blue valve is on the left.\n")
    added = poll_job(base, upload(base, other, graph="false").json()["id"])
    assert added["report"]["status"] == "added"  # another name: a document of its own
    assert sorted(d["name"] for d in httpx.get(f"{base}/documents").json()) == ["other.md", "pumps.md"]
