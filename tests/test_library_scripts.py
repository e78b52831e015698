"""The library-routing set-up scripts: pooling libraries (renamed or not), the unroutable lists of
both MMLongBench splits, and the identity check against FinanceBench's file names."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from script_loader import load_script

from bookindex.parsing.identity import DocumentIdentity

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"


def script(name: str) -> ModuleType:
    return load_script(name)


def write_library(root: Path, docs: dict[str, str]) -> Path:
    """A library folder as the scripts read it: the catalog, and per document its manifest and tree."""
    entries = {}
    for doc_id, name in docs.items():
        folder = root / "docs" / f"{doc_id}.x"
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps({"name": name, "source": f"/nowhere/{name}"}))
        (folder / "tree.json").write_text(json.dumps({"name": name, "nodes": [{"type": "document", "title": name}]}))
        entries[doc_id] = {"name": name, "dir": f"{doc_id}.x"}
    (root / "library.json").write_text(json.dumps({"format_version": 1, "created": "t", "documents": entries}))
    return root


def test_two_libraries_are_pooled_renamed_with_their_questions(tmp_path: Path) -> None:
    a = write_library(tmp_path / "a", {"d1": "ACME_2019_10K.pdf", "d2": "ACME_2020_10K.pdf"})
    b = write_library(tmp_path / "b", {"d3": "paper.pdf", "d1": "ACME_2019_10K.pdf"})   # d1 in both: kept once
    for split, name in (("qa", "ACME_2020_10K.pdf"), ("qb", "paper.pdf")):
        (tmp_path / split).mkdir()
        (tmp_path / split / "questions.json").write_text(json.dumps([{"qid": split, "doc_id": name}]))
    out = tmp_path / "pooled"
    code = script("rename_library").main([str(a), str(b), str(out), "--rename", "--data", str(tmp_path / "qa"),
                                          "--data", str(tmp_path / "qb"), "--data-out", str(tmp_path / "q")])
    assert code == 0
    catalog = json.loads((out / "library.json").read_text())["documents"]
    assert sorted(catalog) == ["d1", "d2", "d3"]
    names = {e["name"] for e in catalog.values()}
    assert names == {"document-000.pdf", "document-001.pdf", "document-002.pdf"}
    mapping = json.loads((out / "renamed.json").read_text())
    questions = json.loads((tmp_path / "q" / "questions.json").read_text())
    assert [q["doc_id"] for q in questions] == [mapping["ACME_2020_10K.pdf"], mapping["paper.pdf"]]
    tree = json.loads((out / "docs" / catalog["d3"]["dir"] / "tree.json").read_text())
    assert tree["name"] == tree["nodes"][0]["title"] == mapping["paper.pdf"]
    assert json.loads((a / "library.json").read_text())["documents"]["d1"]["name"] == "ACME_2019_10K.pdf"  # read only


def test_pooling_refuses_a_folder_that_is_no_library(tmp_path: Path) -> None:
    assert script("rename_library").main([str(tmp_path), str(tmp_path / "out")]) == 2


def test_the_unroutable_lists_of_both_splits_are_read_by_default() -> None:
    ev = script("eval_library_routing")
    dev, dev2 = (ev.load_unroutable([p]) for p in ev.UNROUTABLE)
    assert len(dev) == 29 and len(dev2) == 49 and not dev & dev2
    assert ev.load_unroutable(ev.UNROUTABLE) == dev | dev2


@pytest.mark.skipif(not (SHARED / "mmlongbench-dev2").is_dir(), reason="../shared/data/mmlongbench-dev2 absent")
def test_the_dev2_list_names_dev2_questions() -> None:
    ev = script("eval_library_routing")
    qids = {q["qid"] for q in json.loads((SHARED / "mmlongbench-dev2" / "questions.json").read_text())}
    assert ev.load_unroutable([ev.UNROUTABLE[1]]) <= qids


@pytest.mark.parametrize("name, ident, wrong", [
    ("BESTBUY_2024Q2_10Q.pdf", DocumentIdentity(organisation="BEST BUY CO., INC.", form="10-Q", fiscal_year=2024), set()),
    ("BESTBUY_2024Q2_10Q.pdf", DocumentIdentity(organisation="BEST BUY CO., INC.", form="10-Q", fiscal_year=2023),
     {"year"}),
    ("AMD_2015_10K.pdf", DocumentIdentity(organisation="ADVANCED MICRO DEVICES, INC.", form="10-K",
                                          fiscal_year_end="2015-12-26"), set()),
    ("ULTABEAUTY_2023Q4_EARNINGS.pdf", DocumentIdentity(title="Ulta Beauty Announces Results", fiscal_year=2022,
                                                        fiscal_year_end="2023-01-28"), set()),
    ("MGMRESORTS_2023_8K_dated-2023-03-01.pdf", DocumentIdentity(organisation="MGM Resorts International",
                                                                 form="8-K", date="2023-03-01"), set()),
    ("BLOCK_2020_10K.pdf", DocumentIdentity(organisation="SQUARE, INC.", form="10-K", fiscal_year=2020), {"company"}),
    ("WALMART_2020_10K.pdf", DocumentIdentity(organisation="WALMART INC."), {"form", "year"}),
])
def test_the_identity_check_against_financebench_names(name: str, ident: DocumentIdentity, wrong: set[str]) -> None:
    assert set(script("eval_identity").check(name, ident)) == wrong
