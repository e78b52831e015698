"""A stored document's identity read again from its stored tree (`bookindex refresh`): the same
blocks the build read, so the same identity, without parsing or embedding the file again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakes import FakeEmbedder
from filing_fixtures import Filing, build_filing
from library_helpers import index_one
from pdf_fixtures import build_cover_report
from typer.testing import CliRunner

from bookindex.cli.app import app, main
from bookindex.core.model import Block, build_tree, tree_blocks
from bookindex.indexing.document_folder import LEXICAL_DIR, lexical_index_current, load_tree
from bookindex.indexing.library import DocumentLibrary
from bookindex.parsing.identity import identify

runner = CliRunner()


def test_a_tree_gives_back_the_blocks_it_was_built_from() -> None:
    blocks = [
        Block(type="title", content="FORM 10-K", page_idx=0, features={"font_size": 14.0}, level=1),
        Block(type="text", content="For the fiscal year ended January 28, 2023", page_idx=0, features={"font_size": 9.0}),
        Block(type="title", content="NORTHWIND TRADERS, INC.", page_idx=0, features={"font_size": 11.0}),  # demoted
        Block(type="text", content="(Exact name of registrant as specified in its charter)", page_idx=0),
        Block(type="title", content="Part I", page_idx=2, level=1),
        Block(type="table", content="| a | b |", page_idx=3, extra={"caption": "Table 1"}),
    ]
    tree = build_tree("d", "d.pdf", blocks)
    back = tree_blocks(tree)
    assert [(b.type, b.content, b.page_idx, b.features, b.level if b.type == "title" else None, b.extra)
            for b in back] == [(b.type, b.content, b.page_idx, b.features, b.level, b.extra) for b in blocks]
    assert identify(back, nlp=None) == identify(blocks, nlp=None)
    assert identify(back, nlp=None).organisation == "NORTHWIND TRADERS, INC."


def test_refresh_rewrites_a_stale_identity_in_a_new_generation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    emb = FakeEmbedder()
    monkeypatch.setattr(DocumentLibrary, "embedder", property(lambda self: emb))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    lib = tmp_path / "lib"
    pdf = build_cover_report(tmp_path / "report (3).pdf")
    assert runner.invoke(app, ["index", str(pdf), "-i", str(lib), "--no-graph"]).exit_code == 0
    catalog = json.loads((lib / "library.json").read_text())
    (doc_id, entry), = catalog["documents"].items()
    old_dir = lib / "docs" / entry["dir"]
    built = json.loads((old_dir / "manifest.json").read_text())
    tree_inode = (old_dir / "tree.json").stat().st_ino
    # a library built by older identity code: its manifest says less than its cover does
    (old_dir / "manifest.json").write_text(json.dumps({**built, "identity": {"title": "Annual Report"}}))

    r = runner.invoke(app, ["refresh", str(lib), "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "Annual Report -> Annual Report of the Harbour Board" in r.output and "1 of 1 documents would change" in r.output
    assert json.loads((old_dir / "manifest.json").read_text())["identity"] == {"title": "Annual Report"}

    r = runner.invoke(app, ["refresh", str(lib)])
    assert r.exit_code == 0, r.output
    assert "1 of 1 documents refreshed" in r.output and "(date, fiscal_year, period_end, title)" in r.output
    new_entry = json.loads((lib / "library.json").read_text())["documents"][doc_id]
    new_dir = lib / "docs" / new_entry["dir"]
    assert new_dir != old_dir and not old_dir.exists()          # swapped, the old generation swept
    assert json.loads((new_dir / "manifest.json").read_text())["identity"] == built["identity"]
    assert (new_dir / "tree.json").stat().st_ino == tree_inode   # hard-linked: nothing parsed or rewritten
    (manifest,) = json.loads(runner.invoke(app, ["list", str(lib), "--json"]).output)
    assert manifest["identity"] == built["identity"]

    r = runner.invoke(app, ["refresh", str(lib), "report (3).pdf"])
    assert r.exit_code == 0 and "unchanged" in r.output and "0 of 1 documents refreshed" in r.output
    assert json.loads((lib / "library.json").read_text())["documents"][doc_id]["dir"] == new_entry["dir"]

    for args in (["refresh", str(lib), "no-such.pdf"], ["refresh", str(tmp_path / "empty")]):
        with pytest.raises(SystemExit) as exited:
            main(args)
        assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "no document 'no-such.pdf'" in err and "no bookindex library here" in err


def test_refresh_stores_a_missing_or_stale_lexical_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "lib"
    folder = index_one(build_cover_report(tmp_path / "board.pdf"), lib, monkeypatch, tmp_path / "cache")

    first = folder()
    assert (first / LEXICAL_DIR / "lexical.json").is_file()  # stored at indexing
    shutil.rmtree(first / LEXICAL_DIR)  # a library built before documents stored their index
    r = runner.invoke(app, ["refresh", str(lib), "--dry-run"])
    assert r.exit_code == 0 and "lexical index to store" in r.output and "1 of 1 documents would change" in r.output
    assert not (first / LEXICAL_DIR).exists()

    r = runner.invoke(app, ["refresh", str(lib)])
    assert r.exit_code == 0, r.output
    assert "lexical index stored" in r.output and "1 of 1 documents refreshed" in r.output
    second = folder()
    assert second != first and lexical_index_current(second, load_tree(second))

    # a stored index of other passages is replaced, never written through: the files are hard links
    meta = second / LEXICAL_DIR / "lexical.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "fingerprint": "of another tree"}))
    held = DocumentLibrary.open(lib).get(second.name.split(".")[0])  # a reader lease keeps `second`
    linked = {p.name: p.stat().st_ino for p in (second / LEXICAL_DIR).iterdir()}
    r = runner.invoke(app, ["refresh", str(lib)])
    assert r.exit_code == 0 and "1 of 1 documents refreshed" in r.output
    third = folder()
    assert lexical_index_current(third, load_tree(third))
    assert all((third / LEXICAL_DIR / n).stat().st_ino != ino for n, ino in linked.items())
    assert json.loads(meta.read_text())["fingerprint"] == "of another tree"  # the held generation untouched
    del held
    r = runner.invoke(app, ["refresh", str(lib)])
    assert r.exit_code == 0 and "0 of 1 documents refreshed" in r.output


def test_refresh_gives_an_older_library_the_former_names_and_employer_id(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    emb = FakeEmbedder()
    monkeypatch.setattr(DocumentLibrary, "embedder", property(lambda self: emb))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    lib = tmp_path / "lib"
    newest = Filing("AURELLE BRANDS, INC.", 2022, employer_id="61-2048813", formerly="Brightwater Foods Corporation")
    oldest = Filing("BRIGHTWATER FOODS CORPORATION", 2019, employer_id="61-2048813")
    for name, filing in (("scan_1.pdf", newest), ("scan_2.pdf", oldest)):
        assert runner.invoke(app, ["index", str(build_filing(tmp_path / name, filing)), "-i", str(lib),
                                   "--no-graph"]).exit_code == 0
    catalog = json.loads((lib / "library.json").read_text())
    for entry in catalog["documents"].values():   # what the identity code before former names stored
        path = lib / "docs" / entry["dir"] / "manifest.json"
        manifest = json.loads(path.read_text())
        assert manifest["identity"]["employer_id"] == "61-2048813"
        older = {k: v for k, v in manifest["identity"].items() if k not in ("aliases", "employer_id")}
        path.write_text(json.dumps({**manifest, "identity": older}))

    r = runner.invoke(app, ["refresh", str(lib)])
    assert r.exit_code == 0, r.output
    assert "scan_1.pdf: " in r.output and "(aliases, employer_id)" in r.output and "(employer_id)" in r.output
    assert "2 of 2 documents refreshed" in r.output
    (first,) = [m for m in json.loads(runner.invoke(app, ["list", str(lib), "--json"]).output) if m["name"] == "scan_1.pdf"]
    assert first["identity"]["aliases"] == ["Brightwater Foods Corporation"]
