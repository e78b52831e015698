"""Structure-exact answers with no LLM: counts and lists of the document's parts (pages, labelled
tables and figures, the sections of its outline), and where a labelled part is (its page, its
section, its title), each computed from the tree and cited by the nodes counted or found."""

from __future__ import annotations

import pytest
from retrieval_fixture import make_context, make_tree, node

from bookindex.core.config import load_settings
from bookindex.core.model import Block, DocumentTree, build_tree
from bookindex.evaluation.short_answers import question_kind, short_answer
from bookindex.operators.context import IndexContext, MemoryIndex
from bookindex.operators.labels import labelled_parts, outline_parts, qualifiers
from bookindex.operators.lookup import asks_where, lookup, named_evidence
from bookindex.operators.passages import Passage, build_passages
from bookindex.operators.reader import read
from bookindex.operators.table_shape import shape
from bookindex.retrieval import ask
from bookindex.retrieval.planner import global_plan


def _ctx(tree: DocumentTree) -> IndexContext:
    """A context over `tree`, with the fixture's graph."""
    return IndexContext(index=MemoryIndex(tree=tree, graph=make_context().graph), settings=load_settings())


def _ask(question: str, ctx: IndexContext | None = None):
    return ask(ctx or make_context(), question)


# -- counting and listing ------------------------------------------------------------------

def test_pages_are_counted_from_the_page_count_not_the_nodes():
    a = _ask("How many pages does the handbook have?")
    assert a.answer.startswith("12 (pp. 1-12)")
    assert a.structural["counted"] == "pages" and a.structural["count"] == 12
    assert [x["page"] for x in a.structural["items"]] == list(range(1, 13))


def test_pages_of_a_range_are_the_range():
    a = _ask("How many pages are in pages 3-5?")
    assert a.structural["count"] == 3 and a.answer.startswith("3 (pp. 3-5)")


def test_chapters_are_the_top_level_of_the_outline_each_cited():
    a = _ask("How many chapters does the handbook have?")
    assert a.structural["counted"] == "document outline"
    assert [x["label"] for x in a.structural["items"]] == ["1 Introduction", "2 Plotting", "3 Output terminals"]
    assert a.answer.startswith("3 (1 Introduction, p. 1; 2 Plotting, p. 4; 3 Output terminals, p. 9)")


def test_sections_of_a_named_chapter_are_its_children():
    a = _ask("How many sections are in chapter 2?")
    assert [x["label"] for x in a.structural["items"]] == ["2.1 The plot command", "2.2 Line styles", "2.3 Colors"]


def test_subsections_are_the_level_below_the_top():
    labels = [p.label for p in outline_parts(make_tree(), "subsections")]
    assert labels == ["1.1 Installation", "2.1 The plot command", "2.2 Line styles", "2.3 Colors",
                      "3.1 The png terminal", "3.2 The pdf terminal"]


def test_a_single_enclosing_title_section_is_not_counted():
    blocks = [Block("title", "A Handbook", 0, (50, 20, 300, 40), level=1),
              Block("title", "1 Start", 0, (50, 50, 300, 70), level=2),
              Block("text", "Begin here.", 0, (50, 80, 300, 100)),
              Block("title", "2 Stop", 1, (50, 50, 300, 70), level=2),
              Block("text", "End here.", 1, (50, 80, 300, 100))]
    tree = build_tree("t", "t.pdf", blocks, {"pages": 2})
    assert [p.label for p in outline_parts(tree, "sections")] == ["1 Start", "2 Stop"]


def test_labelled_tables_holding_a_term_are_counted_by_label():
    a = _ask('How many tables include "png"?')
    assert a.structural["counted"] == "document labels" and a.structural["must_contain"] == ["png"]
    assert [x["label"] for x in a.structural["items"]] == ["Table 3"]
    assert a.answer.startswith("1 (Table 3, p. 12)")


def test_the_qualifier_of_the_unit_comes_from_the_parse():
    assert qualifiers("How many pie charts are in the paper?", "charts") == ["pie"]
    assert qualifiers("How many line plots are in this report?", "plots") == ["line"]
    assert qualifiers("How many figures are in the entire document?", "figures") == []


def test_a_qualified_unit_counts_the_parts_whose_caption_names_it():
    p = make_context()
    steps = global_plan("How many sine figures are in the handbook?", p, {})
    assert steps is not None and steps[-1].params["qualifiers"] == ["sine"]
    a = _ask("How many sine figures are in the handbook?", p)
    assert [x["label"] for x in a.structural["items"]] == ["Figure 1"]


def test_a_qualifier_no_caption_names_counts_every_part_and_says_so():
    a = _ask("How many pie charts are in the handbook?")
    assert a.structural["count"] == 3 and "note" in a.structural
    assert "every one is counted" in a.answer


# -- where a labelled part is ---------------------------------------------------------------

def test_which_page_is_the_page_of_the_labelled_part_cited_by_it():
    ctx = make_context()
    a = _ask("On which page is Table 2?", ctx)
    assert a.answer.startswith("Page 7 [1]") and a.citations == [1]
    assert a.evidence[0].node_id == node(ctx.tree, "| Style | Width |")
    assert a.structural["operation"] == "LOOKUP"


def test_which_page_gives_the_printed_page_where_the_pdf_labels_pages():
    tree = make_tree()
    tree.meta["page_labels"] = [str(i) for i in range(101, 113)]
    ctx = _ctx(tree)
    found = lookup(tree, "What page is Figure 3 on?", ctx.page_labels)
    assert found is not None and found.answer.startswith("Page 11 (printed page 111) [1]")


def test_the_title_of_a_labelled_part_is_its_caption_without_the_label():
    a = _ask("What is the title of Figure 3?")
    assert a.answer.startswith("Output of the png terminal [1] (Figure 3, p. 11)")


def test_which_section_holds_a_labelled_part():
    a = _ask("Which section is Table 2 in?")
    assert a.answer.startswith("2.2 Line styles [1]")


@pytest.mark.parametrize("question,kind", [
    ("On which page is Table 2?", "page"),
    ("Where is Figure 1?", "page"),
    ("What is the caption of Fig. 2?", "title"),
    ("In which chapter is Table 3?", "section"),
    ("Which page mentions Table 3 first?", None),  # a mention, not the part
    ("What is the title of the paper cited in Table 2?", None),  # about the table's content
    ("What is the default linewidth?", None),
])
def test_a_lookup_is_the_whole_question(question, kind):
    assert asks_where(question) == kind


def test_a_part_the_document_does_not_label_is_not_looked_up():
    assert lookup(make_tree(), "On which page is Table 9?") is None


# -- scoring: which questions are structure questions, and their short answers ---------------

@pytest.mark.parametrize("question,structure", [
    ("Among all charts in this report, how many compare the public with experts?", True),
    ("What is the title of the diagram on page 9?", True),
    ("How many pages does the report have?", True),
    ("For the papers listed in Table 2, how many were proposed in 2021?", False),
    ("How many people attended the meeting?", False),
])
def test_structure_questions_are_selected_by_the_parts_they_count(question, structure):
    assert (question_kind(question, "3", "Int") == "structure") is structure


def test_a_page_question_is_scored_by_its_page_number():
    assert short_answer("What page has the logo? Give me an integer.", "Page 2 [1] (from p. 2: Logo)") == "2"


def _chapters_ctx() -> IndexContext:
    """A manual whose chapters are labelled "Chapter N." and whose sections are numbered."""
    B = Block
    blocks = [B("title", "Chapter 1. Basics", 0, (50, 50, 300, 70), level=1),
              B("title", "1.1. Setup", 0, (50, 80, 300, 100), level=2),
              B("text", "Install the tool.", 0, (50, 110, 300, 130)),
              B("title", "Chapter 2. Usage", 1, (50, 50, 300, 70), level=1),
              B("title", "2.1. Running", 1, (50, 80, 300, 100), level=2),
              B("text", "Run the tool on a file.", 1, (50, 110, 300, 130)),
              B("table", "| Option | Meaning |\n| -v | verbose |", 2, (50, 50, 300, 120)),
              B("title", "2.2. Options", 2, (50, 130, 300, 150), level=2),
              B("text", "Options change what the tool does.", 2, (50, 160, 300, 180))]
    tree = build_tree("c", "manual.pdf", blocks, {"pages": 3})
    return _ctx(tree)


def test_a_chapter_named_by_its_label_scopes_the_count():
    a = _ask("How many subsections are in chapter 2?", _chapters_ctx())
    assert [x["label"] for x in a.structural["items"]] == ["2.1. Running", "2.2. Options"]


def test_the_title_of_a_labelled_chapter_is_its_title_without_the_label():
    a = _ask("What is the title of chapter 2?", _chapters_ctx())
    assert a.answer.startswith("Usage [1] (Chapter 2, p. 2)")


def test_counted_nodes_without_labels_are_each_cited_by_page():
    a = _ask("How many tables are in chapter 2?", _chapters_ctx())
    assert a.answer == "1 (table nodes matching the filters: p. 3)"


# -- the shape of a table ---------------------------------------------------------------------

def _tables_ctx() -> IndexContext:
    B = Block
    blocks = [B("title", "1 Specifications", 0, (50, 20, 300, 40), level=1),
              B("table", "| Model | A |  | B |\n|---|---|---|---|\n| Size | 27 |  | 32 |\n| Weight | 5 |  | 7 |",
                0, (50, 50, 550, 400), extra={"caption": "Table 1: Models"}),
              B("table", "| Pin | Signal |\n|---|---|\n| 1 | GND |", 1, (50, 50, 200, 100),
                extra={"caption": "Table 2: Pins"})]
    tree = build_tree("s", "spec.pdf", blocks, {"pages": 2})
    return _ctx(tree)


def test_columns_of_a_named_table_count_only_columns_holding_text():
    a = _ask("How many columns does Table 1 have?", _tables_ctx())
    assert a.answer.startswith("3 (columns holding text in Table 1, p. 1)")
    assert a.structural["counted"] == "table columns"


def test_a_gutter_holding_a_few_spilled_cells_is_not_a_column():
    # a specification table of 27 rows whose last two rows' words were drawn a little right of
    # their column: the parser put them in the gutter column beside it, leaving the column empty
    rows = [f"| Item {k} | value {k} |  |" for k in range(24)] + ["| Inputs |  | VGA |", "|  |  | HDMI |"]
    node = build_tree("g", "g.pdf", [Block("table", "| Name | Value |  |\n|---|---|---|\n" + "\n".join(rows), 0,
                                           (50, 50, 500, 400))], {"pages": 1})
    table = next(n for n in node.walk() if n.type == "table")
    assert shape(table).columns == 2
    # the same cells in a column of their own (its neighbour holds text on those rows) count
    rows[-2:] = ["| Inputs | two | VGA |", "| Outputs | one | HDMI |"]
    node = build_tree("g", "g.pdf", [Block("table", "| Name | Value |  |\n|---|---|---|\n" + "\n".join(rows), 0,
                                           (50, 50, 500, 400))], {"pages": 1})
    assert shape(next(n for n in node.walk() if n.type == "table")).columns == 3


def test_rows_are_counted_below_the_header():
    a = _ask("How many rows does Table 2 have?", _tables_ctx())
    assert a.structural["count"] == 1


def test_a_size_superlative_picks_the_table_by_its_area():
    a = _ask("How many columns does the largest table have?", _tables_ctx())
    assert a.structural["items"][0]["page"] == 1 and a.structural["count"] == 3
    a = _ask("How many columns does the smallest table have?", _tables_ctx())
    assert a.structural["items"][0]["page"] == 2 and a.structural["count"] == 2


def test_several_tables_and_no_way_to_choose_is_not_a_table_shape_answer():
    a = _ask("How many columns do the tables have?", _tables_ctx())
    assert a.structural is None or a.structural.get("counted") != "table columns"


def test_which_page_is_the_page_of_the_sentence_in_a_passage_spanning_pages():
    B = Block
    blocks = [B("title", "1 Colours", 3, (50, 20, 300, 40), level=1),
              B("text", "The installer copies the files to the system folder.", 3, (50, 50, 500, 80)),
              B("text", "Colours are chosen with the palette command.", 4, (50, 50, 500, 80))]
    tree = build_tree("p", "p.pdf", blocks, {"pages": 5})
    passages = build_passages(tree, [tree.find_section("1 Colours").id])
    assert passages[0].first_page == 4 and passages[0].last_page == 5
    text, _ = read("Which page explains how the palette command chooses colours?", passages)
    assert text.startswith("Page 5 [1]")


def test_a_which_page_answer_names_the_printed_page_where_it_differs():
    p = Passage("a", ("Colours",), "Colours are chosen with the palette command.", ("a",), 9, 9)
    text, _ = read("Which page explains how the palette command chooses colours?", [p],
                   page_labels=[str(i) for i in range(-7, 20)])
    assert text.startswith("Page 9 (printed page 1) [1]")
    text, _ = read("Which page explains how the palette command chooses colours?", [p],
                   page_labels=[str(i) for i in range(1, 20)])
    assert text.startswith("Page 9 [1]")


def test_equations_are_counted_by_the_numbers_they_carry():
    B = Block
    blocks = [B("title", "1 Model", 0, (50, 20, 300, 40), level=1),
              B("equation", "y = ax + b (1)", 0, (50, 50, 500, 70)),
              B("equation", "+ c", 0, (50, 72, 500, 90)),  # the same equation's second line
              B("text", "As in (1), the slope is a.", 0, (50, 100, 500, 120)),
              B("equation", "z = y^2 , (2)", 1, (50, 50, 500, 70))]
    tree = build_tree("e", "e.pdf", blocks, {"pages": 2})
    ctx = _ctx(tree)
    a = _ask("How many equations are in the paper?", ctx)
    assert a.answer.startswith("2 (Equation (1), p. 1; Equation (2), p. 2)")


def test_a_section_named_anywhere_in_a_count_scopes_it():
    a = _ask("How many pages does chapter 2 span?", _chapters_ctx())
    assert a.answer.startswith("2 (pp. 2-3)")


# -- contents entries and the evidence of a count ------------------------------------------------

def _appendices_ctx() -> IndexContext:
    """A plan whose contents page lists its appendices before the body labels them."""
    B = Block
    blocks = [B("text", "Table of Contents", 0, (50, 20, 300, 40)),
              B("text", "Appendix A: Participants ........ 4 Appendix B: Monitoring ........ 6", 0, (50, 50, 500, 70)),
              B("title", "Appendices: the documents and appendix reports", 1, (50, 20, 300, 40), level=1),
              B("text", "Executive summary: the appendices appear in the document and name the documents "
                        "the plan drew on.", 1, (50, 50, 300, 70)),
              B("title", "Appendix A Participants", 3, (50, 20, 300, 40), level=1),
              B("text", "Everyone who took part in the meetings.", 3, (50, 50, 300, 70)),
              B("title", "Appendix B Monitoring", 5, (50, 20, 300, 40), level=1),
              B("text", "How the plan is monitored each quarter.", 5, (50, 50, 300, 70)),
              B("title", "Appendix C Resources", 6, (50, 20, 300, 40), level=1),
              B("text", "State health assessment; agency status report.", 6, (50, 50, 300, 70))]
    tree = build_tree("ap", "plan.pdf", blocks, {"pages": 7})
    return _ctx(tree)


def test_a_contents_entry_is_not_the_part_it_lists():
    parts = labelled_parts(_appendices_ctx().tree, "appendices")
    assert [(p.label, p.page) for p in parts] == [("Appendix A", 4), ("Appendix B", 6), ("Appendix C", 7)]


def test_a_part_only_the_contents_lists_is_found_where_listed():
    B = Block
    blocks = [B("text", "Appendix A: Participants ........ 4", 0, (50, 50, 500, 70)),
              B("title", "Appendix B Monitoring", 3, (50, 20, 300, 40), level=1),
              B("text", "How the plan is monitored.", 3, (50, 50, 300, 70))]
    tree = build_tree("ap2", "plan.pdf", blocks, {"pages": 4})
    assert [(p.label, p.page) for p in labelled_parts(tree, "appendices")] == [("Appendix A", 1), ("Appendix B", 4)]


def test_the_counted_parts_lead_the_evidence_in_document_order():
    a = _ask("How many appendices appear in the document?", _appendices_ctx())
    assert a.structural["count"] == 3
    assert a.pages[:3] == [4, 6, 7]


def test_a_part_the_question_names_leads_the_ranking():
    ctx = _appendices_ctx()
    a = _ask("Which documents are named in Appendix C?", ctx)
    assert a.evidence[0].page == 7 and a.evidence[0].snippet.startswith("State health assessment")
    assert named_evidence(ctx.tree, "What is in Appendix Z?", {}, set()) == []
