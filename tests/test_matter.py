"""The tree a program reads is the tree a person sees (issue 63, item 7): a printed table of
contents, a list of figures and an index are one section each, of their `role`, holding their
lines (parsing.matter); a heading's number stays in its title and is its `number` field
(parsing.heading_numbers, parsing.pdf_lines); every reader (CLI `tree`, MCP `get_structure`,
the stored tree) shows them so; `bookindex refresh` groups a library built before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from library_helpers import index_one
from pdf_fixtures import MATTER_CONTENTS, MATTER_FIGURES, build_matter_book
from typer.testing import CliRunner

from bookindex.cli.app import app
from bookindex.cli.library import render_toc
from bookindex.core.config import load_settings
from bookindex.core.model import Block, DocumentTree, build_tree, tree_blocks
from bookindex.indexing.document_folder import NODE_VECTORS_FILE, load_tree
from bookindex.parsing.base import OutlineEntry
from bookindex.parsing.dispatch import parse_file, regroup_tree, to_tree
from bookindex.parsing.heading_numbers import number_headings
from bookindex.parsing.matter import is_entry_line, mark_matter
from bookindex.parsing.numbering import section_number
from bookindex.parsing.sections import apply_outline
from bookindex.server.views import outline, outline_text

runner = CliRunner()


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> DocumentTree:
    pdf = build_matter_book(tmp_path_factory.mktemp("matter") / "pump.pdf")
    settings = load_settings(overrides={"llm.provider": "none", "parsing.ocr": False}, env={})
    return to_tree(parse_file(pdf, settings), "d", pdf.name, settings)


def _role(tree: DocumentTree, role: str) -> list:
    return [n for n in tree.sections() if n.role == role]


def test_contents_list_of_figures_and_index_are_one_section_each(book: DocumentTree) -> None:
    contents, = _role(book, "contents")
    figures, = _role(book, "figures")
    index, = _role(book, "index")
    top = [book.nodes[c] for c in book.root.children]
    assert [n.title for n in top if n.type == "section"][-6:] == [
        "Contents", "List of Figures", "1 Priming", "2 Valves", "3 Care", "Index"]
    assert all(n.parent == book.root_id for n in (contents, figures, index))
    assert [book.nodes[c].text.split(" .")[0] for c in contents.children] == [t for t, _ in MATTER_CONTENTS]
    assert [book.nodes[c].text.split(" .")[0] for c in figures.children] == [t for t, _ in MATTER_FIGURES]
    said = " ".join(book.nodes[c].text for c in index.children)
    assert "priming, 3, 4" in said and "relief valve, 4" in said and index.page_idx == 5
    # no contents, list or index line is loose under the root, nor in any other section
    for n in book.leaves():
        if any(n.text.startswith(t) for t, _ in MATTER_CONTENTS + MATTER_FIGURES) and ". ." in n.text:
            assert n.parent in (contents.id, figures.id)
    assert all(n.role is None for n in book.sections() if n not in (contents, figures, index))


def test_a_heading_number_stays_in_its_title_and_its_field(book: DocumentTree) -> None:
    """"2.10" set a quad left of its words, in another font (DocBook's layout), was a text
    node "2.10" and a code node; the section was lost. Every numbered section's title starts
    with its number and the field says the same number."""
    sec = {n.title: n for n in book.sections()}
    assert sec["2.10 Relief and check valves"].number == "2.10"
    assert sec["2.10 Relief and check valves"].parent == sec["2 Valves"].id
    assert {t: n.number for t, n in sec.items() if n.number} == {
        "1 Priming": "1", "1.1 Filling the housing": "1.1", "2 Valves": "2", "2.9 Seats": "2.9",
        "2.10 Relief and check valves": "2.10", "3 Care": "3"}
    for n in book.sections():
        assert n.number == section_number(n.title) or n.role is not None or n.number is None
        assert n.number is None or n.title.startswith(n.number + " ")
    assert not any(n.text.strip() == "2.10" for n in book.leaves())


def test_every_reader_shows_the_parts(book: DocumentTree) -> None:
    toc = "\n".join(render_toc(book))
    assert "Contents  [contents, section L1, p. 2" in toc and "Index  [index, section L1, p. 6" in toc
    assert "2.10 Relief and check valves  [section L2" in toc
    mcp = outline_text(outline(book, 1))
    assert "Contents [contents, p2] (d-" in mcp and "List of Figures [figures, p2] (d-" in mcp
    assert "Index [index, p6] (d-" in mcp
    nested = book.to_nested(depth=1)
    assert [(c["title"], c["role"]) for c in nested["children"] if c["role"]] == [
        ("Contents", "contents"), ("List of Figures", "figures"), ("Index", "index")]


def test_a_rebuild_from_the_stored_blocks_gives_the_same_tree(book: DocumentTree) -> None:
    """`bookindex refresh` rebuilds a tree from its blocks: a tree built today comes back unchanged."""
    again = build_tree(book.doc_id, book.name, tree_blocks(book), book.meta)
    assert [(n.id, n.parent, n.role, n.number, n.title) for n in again.walk()] == [
        (n.id, n.parent, n.role, n.number, n.title) for n in book.walk()]
    assert regroup_tree(book) == (book, 0)


def _page(p: int, lines: list[str], *, head: str | None = None) -> list[Block]:
    out = [Block(type="title", content=head, page_idx=p, features={"font_size": 18.0})] if head else []
    return out + [Block(type="text", content=t, page_idx=p, features={"font_size": 10.0}) for t in lines]


def _body(p: int, title: str) -> list[Block]:
    return [Block(type="title", content=title, page_idx=p, level=1, features={"font_size": 18.0}),
            Block(type="text", content="Running text of the chapter, long enough to be a paragraph of it. " * 4,
                  page_idx=p, features={"font_size": 10.0})]


LEADERS = [f"{k} Chapter {k} . . . . . . . . . . . . {k + 2}" for k in range(1, 7)]


def test_a_contents_page_without_a_head_gets_one_made() -> None:
    blocks = _page(0, ["Pump Handbook"]) + _page(1, LEADERS) + _body(2, "1 Chapter 1") + _body(3, "2 Chapter 2")
    marked = mark_matter(blocks)
    assert len(marked) == len(blocks) + 1 and marked[1].content == "Contents" and marked[1].level == 1
    tree = build_tree("t", "t", marked)
    contents, = _role(tree, "contents")
    assert [tree.nodes[c].text for c in contents.children] == LEADERS
    assert [tree.nodes[c].title for c in tree.root.children[1:]] == ["Contents", "1 Chapter 1", "2 Chapter 2"]
    # without a made head (a refresh keeps node ids) the page stays as it was
    assert all("matter" not in b.extra for b in mark_matter(blocks, insert=False))
    assert all("matter" not in b.extra for b in blocks)  # the caller's blocks are not changed


def test_what_is_no_contents_or_index() -> None:
    # an "Index" heading in the front half heads a chapter about indexes, not the book's index
    blocks = (_page(0, ["fast lookups, 3", "b-trees, 4, 5", "hashing, 6"], head="Index")
              + [b for p in range(1, 6) for b in _body(p, f"{p} Chapter {p}")])
    assert all("matter" not in b.extra for b in mark_matter(blocks))
    # a contents head followed by running text, no entries
    blocks = _page(0, ["The contents of the box are listed on the lid, all 12 of them, and more."] * 3,
                   head="Contents") + _body(1, "1 Chapter 1")
    assert all("matter" not in b.extra for b in mark_matter(blocks))
    assert is_entry_line("4.1 control . . . . . . 17") and is_entry_line("Getting started The Right Way 1")
    assert is_entry_line("abs, 37 acos, 37 acosh, 37")
    assert not is_entry_line("The first version of the tool was released to the public in the year 2019")
    assert not is_entry_line("2019")


def test_a_heading_printed_without_its_number_gets_the_one_the_contents_gives() -> None:
    """A bookmark inserted without a number ("Pumps and seals"), next to headings that print
    theirs: the contents line "3.2 Pumps and seals" gives it, in the title and the field. A title
    the contents lists twice ("Overview") gets none; a lone capital letter counts as a number only
    when another heading is numbered under it ("A.1")."""
    contents = _page(1, ["3 Machines . . . . . . . 5", "3.1 Overview . . . . . . . 5",
                         "3.2 Pumps and seals . . . . . . . 7", "4 Care . . . . . . . 9",
                         "4.1 Overview . . . . . . . 9", "A Tables . . . . . . . 11"], head="Contents")
    heads = [("3 Machines", 1, 4), ("Overview", 2, 4), ("Pumps and seals", 2, 6), ("4 Care", 1, 8),
             ("Overview", 2, 8), ("A Tables", 1, 10), ("A.1 Sizes", 2, 10)]
    tree = to_tree_of(_page(0, ["Pump Handbook"]) + contents + _sections(heads))
    got = [(n.title, n.number) for n in tree.sections() if n.role is None]
    assert got == [("3 Machines", "3"), ("Overview", None), ("3.2 Pumps and seals", "3.2"), ("4 Care", "4"),
                   ("Overview", None), ("A Tables", "A"), ("A.1 Sizes", "A.1")]
    alone = to_tree_of(_sections([("A Tale of Two Pumps", 1, 0), ("1 Priming", 1, 1), ("1.1 Filling", 2, 1)]))
    assert [(n.title, n.number) for n in alone.sections()] == [
        ("A Tale of Two Pumps", None), ("1 Priming", "1"), ("1.1 Filling", "1.1")]


def _sections(heads: list[tuple[str, int, int]]) -> list[Block]:
    return [b for t, lv, p in heads for b in (
        Block(type="title", content=t, page_idx=p, level=lv, features={"font_size": 14.0}),
        Block(type="text", content="Running text of the section, long enough to be read as a paragraph. " * 3,
              page_idx=p, features={"font_size": 10.0}))]


def to_tree_of(blocks: list[Block]) -> DocumentTree:
    return build_tree("t", "t", number_headings(mark_matter(blocks)))


def test_a_bookmark_never_claims_a_line_of_the_contents() -> None:
    """A bookmark "Essentials" to page 3, whose heading the page does not print, claimed the
    contents line "Essentials" on page 2 (pages ±1 are searched): the contents lost a line to a
    section holding the rest of the contents. Only a bookmark to the contents page may claim there."""
    blocks = (_page(1, ["Essentials"] + LEADERS, head="Contents")
              + [Block(type="title", content="Basic Gestures", page_idx=2, features={"font_size": 14.0}),
                 Block(type="text", content="Swipe up from the bottom of the screen.", page_idx=2)])
    out = apply_outline(blocks, [OutlineEntry(1, "Contents", 1), OutlineEntry(1, "Essentials", 2),
                                 OutlineEntry(2, "Basic Gestures", 2)])
    leveled = [(b.content, b.page_idx, b.level) for b in out if b.type == "title" and b.level is not None]
    assert leveled == [("Contents", 1, 1), ("Essentials", 2, 1), ("Basic Gestures", 2, 2)]


def test_a_library_built_before_opens_and_refresh_groups_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "lib"
    folder = index_one(build_matter_book(tmp_path / "pump.pdf"), lib, monkeypatch, tmp_path / "cache")

    built = load_tree(folder())
    # what the code before this change stored: no matter marks, no number or role fields
    blocks = tree_blocks(built)
    for b in blocks:
        for key in ("matter", "matter_head", "after_matter", "number"):
            b.extra.pop(key, None)
        if b.content in ("Contents", "List of Figures", "Index"):
            b.level = None
    old = build_tree(built.doc_id, built.name, blocks, built.meta).to_dict()
    for n in old["nodes"]:
        n.pop("number"), n.pop("role")
    (folder() / "tree.json").write_text(json.dumps(old))
    stale = load_tree(folder())
    assert all(n.role is None and n.number is None for n in stale.nodes.values())
    assert not _role(stale, "contents")
    vectors = (folder() / NODE_VECTORS_FILE).stat().st_ino

    r = runner.invoke(app, ["refresh", str(lib), "--dry-run"])
    assert r.exit_code == 0 and "tree to regroup" in r.output and "1 of 1 documents would change" in r.output
    r = runner.invoke(app, ["refresh", str(lib)])
    assert r.exit_code == 0 and "tree regrouped" in r.output, r.output
    fresh = load_tree(folder())
    assert set(fresh.nodes) == set(built.nodes)
    assert [(n.id, n.parent, n.role, n.number) for n in fresh.walk()] == [
        (n.id, n.parent, n.role, n.number) for n in built.walk()]
    assert (folder() / NODE_VECTORS_FILE).stat().st_ino == vectors  # same ids, same texts: not re-embedded
    assert json.loads((folder() / "manifest.json").read_text())["sections"] == len(fresh.sections())
    r = runner.invoke(app, ["refresh", str(lib)])
    assert r.exit_code == 0 and "0 of 1 documents refreshed" in r.output
