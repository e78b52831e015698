"""`bookindex index | list | remove | tree | show` through the real Typer app."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fakes import FakeEmbedder
from library_helpers import handbook_content_list, handbook_markdown
from typer.testing import CliRunner

from bookindex.cli.app import app, main
from bookindex.indexing.library import DocumentLibrary

runner = CliRunner()


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    emb = FakeEmbedder()
    monkeypatch.setattr(DocumentLibrary, "embedder", property(lambda self: emb))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return emb


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    d = tmp_path / "corpus"
    (d / "mineru-out").mkdir(parents=True)
    (d / "handbook.md").write_text(handbook_markdown())
    (d / "notes.txt").write_text("1 Notes\n\nSome notes about the tool.\n\n1.1 More\n\nDetails.\n")
    (d / "mineru-out" / "guide_content_list.json").write_text(json.dumps(handbook_content_list()))
    (d / "ignored.docx").write_bytes(b"PK")
    return d


def invoke(*args: str):
    result = runner.invoke(app, list(args), catch_exceptions=True)
    return result


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out = capsys.readouterr()
    return int(e.value.code or 0), out.out, out.err


def test_index_folder_list_tree_show_remove(tmp_path: Path, corpus: Path, monkeypatch):
    lib = tmp_path / "lib"
    r = invoke("index", str(corpus), "-i", str(lib), "--no-graph")
    assert r.exit_code == 0, r.output
    assert "3 added" in r.output and "blocks" in r.output and "pages/s" in r.output

    monkeypatch.setenv("COLUMNS", "60")  # a narrow terminal does not cut a listing sent to a pipe
    r = invoke("list", str(lib))
    assert r.exit_code == 0
    for name in ("handbook.md", "notes.txt", "guide_content_list.json"):
        assert name in r.output
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", r.output)
    listed = json.loads(invoke("list", str(lib), "--json").output)
    assert sorted(m["parser"] for m in listed) == ["markdown", "mineru", "text"]

    r = invoke("tree", str(lib), "--doc", "handbook.md")
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert lines[0].startswith("handbook.md (") and "[document, p. 1, 3 children: 3 section]" in lines[0]
    assert "    2.1 Data tables  [section L2, p. 1, 3 children: 2 text, 1 table]" in lines
    assert "      1.1.1 Earlier work  [section L3, p. 1, 2 children: 1 code, 1 text]" in lines

    r = invoke("tree", str(lib), "--doc", "guide_content_list.json", "--depth", "1")
    assert [ln.strip().split("  [")[0] for ln in r.output.splitlines()[1:]] == ["1 Introduction", "2 Methods", "3 Results"]
    assert "pp. 2-3" not in r.output and "3 Results  [section L1, p. 3," in r.output

    r = invoke("tree", str(lib), "--doc", "handbook", "--leaves")
    assert "- table, p. 1: | Run | Pages | Seconds |" in r.output

    nested = json.loads(invoke("tree", str(lib), "--doc", "guide_content_list.json", "--json").output)
    assert {"id", "type", "level", "title", "page_idx", "page_end_idx", "children"} <= set(nested)
    methods = nested["children"][1]
    assert (methods["title"], methods["type"], methods["level"], methods["page_idx"], methods["page_end_idx"]) == (
        "2 Methods", "section", 1, 1, 1)
    table = methods["children"][1]["children"][1]
    assert table["type"] == "table" and table["children"] == []

    r = invoke("show", str(lib), table["id"])
    assert r.exit_code == 0, r.output
    assert "page: p. 2 (page_idx 1..1)" in r.output
    assert "path: guide_content_list.json > 2 Methods > 2.1 Data tables" in r.output
    assert "caption: Table 1: Parsing speed of three runs" in r.output
    assert "bbox: none" in r.output  # no PDF beside the JSON: only a normalized box is known
    assert "| alpha | 311 | 2.5 |" in r.output

    r = invoke("index", str(corpus / "handbook.md"), "-i", str(lib), "--no-graph")
    assert r.exit_code == 0 and "unchanged" in r.output

    r = invoke("remove", str(lib), "notes.txt")
    assert r.exit_code == 0 and "removed notes.txt" in r.output
    assert "notes.txt" not in invoke("list", str(lib)).output


def test_tree_all_documents_and_empty_library(tmp_path: Path, corpus: Path):
    lib = tmp_path / "lib"
    assert invoke("index", str(corpus / "notes.txt"), "-i", str(lib), "--no-graph").exit_code == 0
    r = invoke("tree", str(lib))
    assert r.output.splitlines()[1] == "  1 Notes  [section L1, p. 1, 2 children: 1 section, 1 text]"
    invoke("remove", str(lib), "notes")
    assert "no documents" in invoke("tree", str(lib)).output


def test_errors_exit_2_with_one_red_line(tmp_path: Path, corpus: Path, capsys):
    lib = tmp_path / "lib"
    code, _, err = run_main(capsys, "index", str(tmp_path / "missing.pdf"), "-i", str(lib))
    assert code == 2 and "missing.pdf: no such file" in err and not lib.exists()

    code, _, err = run_main(capsys, "tree", str(tmp_path / "nolib"))
    assert code == 2 and "no bookindex library here" in err

    bad = corpus / "fake.pdf"
    bad.write_text("not really a pdf")
    code, out, err = run_main(capsys, "index", str(bad), str(corpus / "notes.txt"), "-i", str(lib), "--no-graph")
    assert code == 2 and "fake.pdf: not a PDF" in err + out
    assert [d.name for d in DocumentLibrary.open(lib).documents] == ["notes.txt"]  # the good file still went in

    code, _, err = run_main(capsys, "show", str(lib), "0000000000000000-00001")
    assert code == 2 and "belongs to no document" in err
    code, _, err = run_main(capsys, "remove", str(lib), "nothing-like-this")
    assert code == 2 and "no document 'nothing-like-this'" in err
    code, _, err = run_main(capsys, "index", str(corpus), "-i", str(lib), "--parser", "bogus")
    assert code == 2 and "--parser 'bogus'" in err


def test_folder_with_pdf_and_its_mineru_output(tmp_path: Path):
    from pdf_fixtures import build_handbook

    from bookindex.cli.library import expand_inputs

    d = tmp_path / "docs"
    d.mkdir()
    build_handbook(d / "handbook.pdf")
    (d / "handbook_content_list.json").write_text(json.dumps(handbook_content_list()))
    (d / "handbook_middle.json").write_text('{"pdf_info": []}')
    assert [p.name for p in expand_inputs([d])] == ["handbook.pdf"]
    assert [p.name for p in expand_inputs([d], prefer_mineru=True)] == ["handbook_middle.json"]


def test_show_prints_a_charts_kind_and_its_labels_in_rows(tmp_path: Path) -> None:
    from test_labelled_charts import _chart_pdf

    pdf = _chart_pdf(tmp_path / "survey.pdf")
    lib = tmp_path / "lib"
    r = invoke("index", str(pdf), "-i", str(lib), "--no-graph", "-q")
    assert r.exit_code == 0, r.output
    leaves = json.loads(invoke("tree", str(lib), "--doc", "survey.pdf", "--json").output)

    def images(node: dict) -> list[dict]:
        own = [node] if node["type"] == "image" else []
        return own + [m for c in node.get("children", []) for m in images(c)]

    [chart] = images(leaves)
    r = invoke("show", str(lib), chart["id"])
    assert r.exit_code == 0, r.output
    assert "figure_kind: bar chart" in r.output
    assert "chart, its labels in rows:" in r.output and "Trade agreements 44" in r.output.splitlines()
