"""Citations name the printed page beside the PDF's page (`core.pages`): a manual whose pages
print numbers four behind the physical ones (tests/pdf_fixtures.py `build_printed_numbers`),
asked through the Engine, the CLI (`ask`, `ask --json`, `show`), REST (and its OpenAPI
models), MCP and the inspector; a folder that keeps no labels still answers, with `p. N`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest
from fakes import FakeEmbedder
from fastapi.testclient import TestClient
from pdf_fixtures import PRINTED_OFFSET, build_printed_numbers
from typer.testing import CliRunner

from bookindex.core.config import load_settings
from bookindex.core.model import Block, Evidence, build_tree
from bookindex.core.pages import cite_page, cite_pages, printed_label
from bookindex.engine import Engine
from bookindex.services.providers import ProviderSet

QUESTION = "How many tonnes can the gantry crane lift?"
PHYSICAL, PRINTED = 2 + PRINTED_OFFSET, "2"  # the crane's page: the PDF's 6th, printing 2
CITED = f"p. {PHYSICAL} (printed {PRINTED})"
DOC = "manual.pdf"


def _settings(root: Path):
    return load_settings(overrides={"llm.provider": "none", "cache.path": str(root / "cache")}, env={})


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("printed")
    Engine(root / "lib", _settings(root), embedder=FakeEmbedder()).index(build_printed_numbers(root / DOC), graph=False)
    return root / "lib"


@pytest.fixture(scope="module")
def engine(library: Path) -> Engine:
    return Engine(library, _settings(library.parent), embedder=FakeEmbedder())


def test_a_page_is_cited_with_the_number_it_prints_where_that_differs() -> None:
    assert cite_page(36, "30") == "p. 36 (printed 30)" and cite_page(3, "iv") == "p. 3 (printed iv)"
    assert cite_page(5, "5") == "p. 5" and cite_page(5, None) == "p. 5"
    assert cite_pages(6, 7, "2", "3") == "pp. 6-7 (printed 2-3)" and cite_pages(6, 6, "2", "2") == "p. 6 (printed 2)"
    assert cite_pages(4, 5, None, "1") == "pp. 4-5 (p. 5 printed 1)" and cite_pages(4, 5, "4", "5") == "pp. 4-5"
    labels = ["", "", "1", "2"]
    assert [printed_label(labels, p) for p in (0, 1, 3, 4, 5)] == [None, None, "1", "2", None]
    assert printed_label(None, 3) is None


def test_evidence_of_a_tree_without_labels_names_the_physical_page() -> None:
    """A folder built before labels were kept (its tree meta has none) cites `p. N`, label None."""
    tree = build_tree("old0000000000000", "old.pdf", [Block("text", "Paragraph on sheet two.", 1, (50, 50, 500, 90))],
                      {"pages": 2})
    ev = Evidence.from_node(tree, tree.leaves()[0])
    assert ev.page_label is None and ev.page_ref == "p. 2"
    assert ev.to_dict()["page_label"] is None and ev.to_dict()["page_ref"] == "p. 2"


def test_the_engine_carries_the_printed_label_into_evidence_and_answer(engine: Engine) -> None:
    a = engine.ask(QUESTION, doc=DOC)
    top = a.evidence[0]
    assert top.page == PHYSICAL and "gantry crane" in top.snippet
    assert top.page_label == PRINTED and top.page_ref == CITED
    assert CITED in a.answer  # the extractive answer quotes where it read it the same way
    d = a.to_dict()["evidence"][0]
    assert d["page"] == PHYSICAL and d["page_label"] == PRINTED and d["page_ref"] == CITED
    cover = [e for e in a.evidence if e.page <= PRINTED_OFFSET]  # the front matter prints no number
    assert all(e.page_label is None and e.page_ref == f"p. {e.page}" for e in cover)
    hit = engine.search("gantry crane tonnes", doc=DOC, k=3)[0]
    assert hit.page_ref == CITED
    view = engine.node(top.node_id)
    assert view.page_label == PRINTED and view.page_ref == CITED


def test_a_folder_that_keeps_no_labels_still_answers_with_the_physical_page(library: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(library, old)
    for tree_file in old.glob("docs/*/tree.json"):
        data = json.loads(tree_file.read_text())
        data["meta"].pop("page_labels")
        tree_file.write_text(json.dumps(data))
    a = Engine(old, _settings(tmp_path), embedder=FakeEmbedder()).ask(QUESTION, doc=DOC)
    assert a.evidence[0].page == PHYSICAL and a.evidence[0].page_label is None
    assert a.evidence[0].page_ref == f"p. {PHYSICAL}" and "printed" not in a.answer


def test_cli_ask_json_and_show_name_the_printed_page(library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bookindex.cli.app import app

    monkeypatch.setenv("BOOKINDEX_LLM__PROVIDER", "none")
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(ProviderSet, "embedder", property(lambda self: FakeEmbedder()))
    r = CliRunner()
    res = r.invoke(app, ["ask", str(library), QUESTION, "--doc", DOC, "--no-stream"])
    assert res.exit_code == 0, res.output
    assert f"*[1] {CITED} text" in res.output
    res = r.invoke(app, ["ask", str(library), QUESTION, "--doc", DOC, "--json"])
    assert res.exit_code == 0, res.output
    top = json.loads(res.output)["evidence"][0]
    assert top["page_label"] == PRINTED and top["page_ref"] == CITED
    res = r.invoke(app, ["ask", str(library), QUESTION, "--doc", DOC, "--explain", "--no-stream"])
    assert res.exit_code == 0 and f"1. {CITED} text" in res.output
    res = r.invoke(app, ["show", str(library), top["node_id"]])
    assert res.exit_code == 0 and f"page: {CITED} (page_idx {PHYSICAL - 1}..{PHYSICAL - 1})" in res.output
    res = r.invoke(app, ["show", str(library), top["node_id"], "--json"])
    assert json.loads(res.output)["page_label"] == PRINTED


def test_rest_and_inspector_show_the_printed_page(engine: Engine) -> None:
    from bookindex.server.app import create_app
    from bookindex.server.auth import Keys

    with TestClient(create_app(engine, Keys(frozenset(), frozenset()), isolate_builds=False)) as c:
        ask = c.post("/ask", json={"question": QUESTION, "doc": DOC})
        assert ask.status_code == 200, ask.text
        top = ask.json()["evidence"][0]
        assert top["page"] == PHYSICAL and top["page_label"] == PRINTED and top["page_ref"] == CITED
        hits = c.post("/search", json={"query": "gantry crane tonnes", "doc": DOC, "k": 3}).json()
        assert hits[0]["page_label"] == PRINTED and hits[0]["page_ref"] == CITED
        node = c.get(f"/nodes/{top['node_id']}").json()
        assert node["page_label"] == node["page_end_label"] == PRINTED and node["page_ref"] == CITED
        schemas = c.get("/openapi.json").json()["components"]["schemas"]
        evidence = next(v for k, v in schemas.items() if k.startswith("Evidence"))
        assert {"page_label", "page_ref"} <= set(evidence["properties"])
        node_view = next(v for k, v in schemas.items() if k.startswith("NodeView"))
        assert {"page_label", "page_end_label", "page_ref"} <= set(node_view["properties"])

        page = c.get("/ui/ask", params={"q": QUESTION, "doc": engine.documents()[0].doc_id, "compare": ["bm25"]})
        assert page.status_code == 200
        assert f"[1] {CITED} · text" in page.text  # the evidence list
        assert f">{CITED} · text</a>" in page.text  # the baseline's column
        doc_id = engine.documents()[0].doc_id
        rows = c.get(f"/ui/api/documents/{doc_id}/children/{doc_id}-root").json()
        crane = next(r for r in rows if r["label"].startswith("2 Crane"))
        assert crane["page_ref"] == CITED


def test_mcp_results_name_the_printed_page(engine: Engine) -> None:
    pytest.importorskip("mcp", reason="the mcp SDK (>=2,<3) is not installed")
    from mcp import Client

    from bookindex.mcp_server import build_server

    node_id = engine.search("gantry crane tonnes", doc=DOC, k=1)[0].node_id

    async def main() -> dict[str, object]:
        out: dict[str, object] = {}
        with anyio.fail_after(120):
            async with Client(build_server(engine)) as client:
                for name, args in (("ask", {"question": QUESTION, "doc": DOC}),
                                   ("search", {"query": "gantry crane tonnes", "doc": DOC, "k": 3}),
                                   ("get_node", {"node_id": node_id})):
                    r = await client.call_tool(name, args)
                    assert not r.is_error, r.content
                    sc = r.structured_content
                    out[name] = sc["result"] if isinstance(sc, dict) and set(sc) == {"result"} else sc
        return out

    out = anyio.run(main)
    ask, hits = out["ask"], out["search"]
    assert isinstance(ask, dict) and isinstance(hits, list)
    assert ask["evidence"][0]["page_label"] == PRINTED and ask["evidence"][0]["page_ref"] == CITED
    assert hits[0]["page"] == PHYSICAL and hits[0]["page_ref"] == CITED
    node = out["get_node"]
    assert isinstance(node, dict) and node["page_label"] == PRINTED and node["page_ref"] == CITED


def test_the_short_answer_rule_reads_past_a_source_that_names_the_printed_page() -> None:
    from bookindex.evaluation.short_answers import short_answer

    assert short_answer("What does X do?", 'From "X", p. 20 (printed 14): Creates the encoding. [1]') == "Creates the encoding"
    assert short_answer("How many cranes?", "From p. 9 (printed iv): The quay has 3 cranes. [1]") == "3"
