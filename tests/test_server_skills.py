"""The /skills routes of the REST server over a small hand-built skill folder (FakeEmbedder):
listing, tree, the navigator's view / get_document tools, the embedding navigator, and the
refusals (unknown folder, a view path leaving the root, an unknown document id). The MCP skill
tools are exercised against a real server in test_mcp_server.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeEmbedder
from fastapi.testclient import TestClient
from skills_helpers import build_skill_folder

from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.engine import Engine
from bookindex.server.app import create_app
from bookindex.server.auth import Keys
from bookindex.server.skill_folders import skill_folders

EMB = FakeEmbedder(dim=64, word=r"\w+")


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    folder = build_skill_folder(tmp_path / "recipes", EMB)
    engine = Engine(tmp_path / "lib", Settings(), embedder=EMB)
    app = create_app(engine, Keys(frozenset(), frozenset()), isolate_builds=False, skills=skill_folders([folder]))
    return TestClient(app)


def test_list_tree_view_document_and_search(client: TestClient) -> None:
    listed = client.get("/skills").json()
    assert listed == [{"name": "recipes", "documents": 8, "clusters": 6, "roots": 2}]
    tree = client.get("/skills/recipes/tree").json()
    assert [r["label"] for r in tree["roots"]] == ["cooking", "space"]
    assert [c["label"] for c in tree["roots"][1]["children"]] == ["rockets", "planets"]
    root = client.get("/skills/recipes/view", params={"path": ""}).json()
    assert "skill-01-cooking/" in root["text"] and "skill-02-space/" in root["text"]
    leaf = client.get("/skills/recipes/view", params={"path": "skill-02-space/group-00-rockets"}).json()
    assert "`d5`" in leaf["text"] and "INDEX.md" in leaf["text"]
    doc = client.get("/skills/recipes/documents/d5").json()
    assert doc["target"] == "d5" and doc["text"].startswith("[d5] Saturn V rocket")
    ans = client.post("/skills/recipes/ask", json={"question": "rocket engine launch to orbit", "k": 2}).json()
    assert ans["navigator"] == "embedding" and {d["doc_id"] for d in ans["documents"]} == {"d5", "d6"}


def test_refusals(client: TestClient) -> None:
    r = client.get("/skills/other/tree")
    assert r.status_code == 404 and "recipes" in r.json()["detail"]
    r = client.get("/skills/recipes/view", params={"path": "../../etc"})
    assert r.status_code == 400 and "may not leave" in r.json()["detail"]
    r = client.get("/skills/recipes/documents/nope")
    assert r.status_code == 400 and "no such document id" in r.json()["detail"]
    r = client.post("/skills/recipes/ask", json={"question": ""})
    assert r.status_code == 422


def test_skill_folders_are_checked_at_start_up(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a skill folder"):
        skill_folders([tmp_path])
    a = build_skill_folder(tmp_path / "a" / "same", EMB)
    b = build_skill_folder(tmp_path / "b" / "same", EMB)
    with pytest.raises(InputError, match="already served"):
        skill_folders([a, b])


def test_inspector_skills_page_replays_a_navigation(client: TestClient) -> None:
    page = client.get("/ui/skills")  # the one served folder opens by itself
    assert page.status_code == 200 and "<option selected>recipes</option>" in page.text and "rockets" in page.text
    hostile = client.get("/ui/skills", params={"folder": "recipes", "question": "rocket <script>x</script>"})
    assert hostile.status_code == 200
    assert "<script>x</script>" not in hostile.text and "&lt;script&gt;x&lt;/script&gt;" in hostile.text
    nav = client.get("/ui/skills", params={"folder": "recipes", "question": "rocket engine launch to orbit", "k": 2})
    assert nav.text.count('class="step"') >= 3 and "skill-02-space" in nav.text
    assert "<code>d5</code>" in nav.text and "<code>d6</code>" in nav.text
    assert client.get("/ui/skills", params={"folder": "other"}).status_code == 404
