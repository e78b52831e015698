"""Printed page numbers read from the pages' text (parsing.page_numbers) and the page filter that
follows them (operators.selector.labelled_pages / Filter_Range)."""

from __future__ import annotations

from bookindex.core.config import load_settings
from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import Block, build_tree
from bookindex.operators import State
from bookindex.operators.context import IndexContext, MemoryIndex
from bookindex.operators.selector import FilterRange, labelled_pages
from bookindex.parsing.page_numbers import page_number_candidates, printed_page_labels


def test_header_and_footer_numbers_are_candidates_body_numbers_are_not() -> None:
    lines = [((300, 124, 310, 133), "9"),  # the topmost line, far below the margin band
             ((72, 150, 500, 160), "The committee met on 12 occasions in 2003."),
             ((72, 400, 90, 410), "42"),  # a lone number mid-page: a table cell, not the page's
             ((72, 743, 128, 755), "Version 1.3   17")]  # a footer ending with the number
    assert page_number_candidates(lines, 792, 0.085) == {9, 17}
    assert page_number_candidates([((72, 20, 200, 30), "Page 4 of 40")], 792, 0.085) == {4}
    assert page_number_candidates([], 792, 0.085) == set()


def test_one_offset_on_many_pages_is_the_printed_numbering() -> None:
    # a cover and two front-matter pages, then pages printing 1..6; a footer year on every page
    cands = {0: {2019}, 1: {2019}, 2: {2019}}
    cands.update({p: {p - 2, 2019} for p in range(3, 9)})
    cands[6] = {2019}  # a full-page figure prints no number: still counted between the others
    labels = printed_page_labels(cands, 10)
    assert labels == ["", "", "", "1", "2", "3", "4", "5", "6", ""]
    # the physical numbering itself, or numbers that agree on no offset, give no labels
    assert printed_page_labels({p: {p + 1} for p in range(6)}, 6) is None
    assert printed_page_labels({0: {7}, 1: {3}, 2: {12}, 3: {40}}, 4) is None
    assert printed_page_labels({0: set(), 1: {1}, 2: {2}}, 3) is None  # two pages are not enough


def test_pdf_parser_reads_the_printed_numbers_when_the_pdf_has_no_labels(tmp_path) -> None:
    import pymupdf

    from bookindex.parsing.pdf import parse_pdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 300), "Cover of the report")
    for i in range(1, 6):
        page = doc.new_page()
        page.insert_text((72, 300), f"Body text of the report, part {i}.")
        page.insert_text((72, 780), f"Annual report   {i}")
    doc.save(tmp_path / "printed.pdf")
    assert parse_pdf(tmp_path / "printed.pdf", ocr=False).meta["page_labels"] == ["", "1", "2", "3", "4", "5"]


def test_a_page_filter_keeps_the_physical_page_and_the_page_printing_the_number() -> None:
    assert labelled_pages("9", ["", "", "", "7", "8", "9"]) == {5}
    assert labelled_pages("3-4", ["", "1", "2", "3", "4"]) == {3, 4}
    assert labelled_pages("first 2", ["", "1", "2"]) == set() and labelled_pages("2", None) == set()
    blocks = [Block("text", f"Paragraph on sheet {i + 1}.", i, (50, 50, 500, 90)) for i in range(6)]
    tree = build_tree("pgn0000000000000", "printed.pdf", blocks, {"pages": 6, "page_labels": ["", "", "1", "2", "3", "4"]})
    ctx = IndexContext(index=MemoryIndex(tree=tree, graph=KnowledgeGraph({}, [])),
                       settings=load_settings(overrides={"llm.provider": "none"}, env={}), embedder=None)
    st = FilterRange(ctx, {"range_type": "page", "value": "3"}).run(State("What is on page 3?"))
    assert sorted({tree.nodes[i].page_idx for i in st.candidates if tree.nodes[i].type != "section"}) == [2, 4]
