"""A document's tables read into rows by year (`operators.statements`) are stored at index time as
`statements.json`, marked with the tree.json and the code they were read by: a first question
reads them instead of every table again; a copy of another tree or of other code is ignored and
the rows read from the tree, and `bookindex refresh` writes the file where it is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import FakeEmbedder
from test_computed_answers import _filing
from typer.testing import CliRunner

from bookindex.cli.app import app
from bookindex.core.config import load_settings
from bookindex.core.model import DocumentTree
from bookindex.engine import Engine
from bookindex.indexing.document_folder import read_tree, tree_digest, write_tree
from bookindex.indexing.library import DocumentLibrary
from bookindex.indexing.stored_statements import (
    STATEMENTS_FILE,
    offer_stored_statements,
    statements_current,
    write_statements,
)
from bookindex.operators import statements
from bookindex.operators.formula import Item


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A document folder holding the small filing's tree and its stored table rows."""
    write_tree(tmp_path, _filing())
    tree, digest = read_tree(tmp_path)
    write_statements(tmp_path, tree, digest)
    return tmp_path


def _opened(folder: Path) -> DocumentTree:
    tree, digest = read_tree(folder)
    offer_stored_statements(folder, tree, digest)
    return tree


def test_the_stored_rows_are_the_rows_read_from_the_tree(folder: Path) -> None:
    read_again = statements._tables(read_tree(folder)[0])
    assert read_again and statements.tables(_opened(folder)) == read_again
    assert statements_current(folder, tree_digest(folder))


def test_a_first_question_reads_the_stored_rows_instead_of_the_tables(folder: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _opened(folder)

    def no_reading(*args: object) -> None:
        raise AssertionError("the tables were read again")

    monkeypatch.setattr(statements, "_tables", no_reading)
    assert statements.find(tree, Item("total current assets", "2018")).amount == 520.0


@pytest.mark.parametrize("stale", ["tree", "reader"])
def test_rows_of_another_tree_or_of_other_code_are_read_again(folder: Path, stale: str) -> None:
    data = json.loads((folder / STATEMENTS_FILE).read_text())
    data[stale] = "0" * 64
    data["tables"] = []  # were it trusted, nothing would be found
    (folder / STATEMENTS_FILE).write_text(json.dumps(data))
    assert not statements_current(folder, tree_digest(folder))
    assert statements.find(_opened(folder), Item("total current assets", "2018")).amount == 520.0


def test_refresh_stores_the_rows_of_a_library_indexed_without_them(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "acme.md"
    src.write_text("# Consolidated Balance Sheets\n\n| (in millions) | December 31, 2019 | December 31, 2018 |\n"
                   "|---|---|---|\n| Total current assets | 600 | 520 |\n| Total current liabilities | 400 | 390 |\n",
                   encoding="utf-8")
    settings = load_settings(env={}, overrides={"llm.provider": "none", "cache.path": str(tmp_path / "cache")})
    engine = Engine(tmp_path / "lib", settings, embedder=FakeEmbedder.words())
    engine.index(src, graph=False)
    (doc,) = engine.library.documents
    assert statements_current(doc.dir, tree_digest(doc.dir))  # written by the build
    (doc.dir / STATEMENTS_FILE).unlink()  # as a library indexed before the file existed
    del doc, engine

    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BOOKINDEX_LLM__PROVIDER", "none")
    monkeypatch.setattr(DocumentLibrary, "embedder", property(lambda self: FakeEmbedder.words()))
    r = CliRunner().invoke(app, ["refresh", str(tmp_path / "lib")])
    assert r.exit_code == 0, r.output
    assert "table rows stored" in r.output
    (new,) = DocumentLibrary.open(tmp_path / "lib").documents
    assert statements_current(new.dir, tree_digest(new.dir))
    assert "0 of 1 documents refreshed" in CliRunner().invoke(app, ["refresh", str(tmp_path / "lib")]).output
