"""How a packed passage is cut from the document (operators.passages): which neighbours a ranked
block brings, what of a long block is shown, where the best-ranked item looks beyond its section,
how the budget is shared between the head and the tail of the ranking, and what an item that
does not fit whole shows."""

from __future__ import annotations

from bookindex.core.model import Block, DocumentTree, build_tree
from bookindex.operators.passages import (
    HEAD_ITEM_CHARS,
    PACK_ITEM_CHARS,
    TAIL_FROM,
    TAIL_ITEM_CHARS,
    build_passages,
    estimate_tokens,
    focused_rows,
    focused_table,
    focused_text,
    format_passages,
    pack_passages,
    page_break_tail,
    question_terms,
)
from bookindex.providers.lexical import tokenize


def _tree(blocks: list[Block]) -> DocumentTree:
    return build_tree("doc", "Doc", blocks)


def _id(tree: DocumentTree, start: str) -> str:
    return next(n.id for n in tree.nodes.values() if n.type != "section" and n.content.startswith(start))


def test_short_neighbours_come_before_a_long_one_and_the_passage_is_never_cut_at_its_end():
    long_note = "Footnote. " + "The original cost of fully amortized intangibles is excluded here. " * 6
    tree = _tree([Block(type="title", content="Intangible Assets", page_idx=0, level=1),
                  Block(type="text", content="Earlier discussion of the assets. " * 12, page_idx=0),
                  Block(type="text", content=long_note, page_idx=0),
                  Block(type="text", content="Expected future amortization expense is as follows (in millions):",
                        page_idx=0),
                  Block(type="text", content="2018 $ 377", page_idx=0),
                  Block(type="table", content="| 2019 | 337 |\n|---|---|\n| Thereafter | 1,998 |", page_idx=0),
                  Block(type="text", content="$ 3,362", page_idx=0)])
    nid = _id(tree, "Expected future")
    ranked = len(tree.nodes[nid].content)
    # room for the ranked block, the long one and a little more: taken side by side, the long block
    # before it would leave no room for the total three short blocks further on
    room = ranked + len(long_note.strip()) + 30
    [p] = build_passages(tree, [nid], budget_chars=room, item_chars=room)
    assert p.text.endswith("$ 3,362") and "Footnote." not in p.text and "…" not in p.text
    assert len(p.text) <= room
    # with room for everything, the preceding block is shown too, in document order
    [wide] = build_passages(tree, [nid], budget_chars=5000, item_chars=5000)
    assert wide.text.index("Footnote.") < wide.text.index("Expected future") < wide.text.index("$ 3,362")


def test_a_ranked_term_brings_what_follows_it_before_what_precedes_it():
    before = "The return status is zero unless a sigspec does not specify a valid signal. " * 2
    tree = _tree([Block(type="title", content="Bourne Shell Builtins", page_idx=0, level=1),
                  Block(type="text", content=before, page_idx=0),
                  Block(type="code", content="umask", page_idx=0),
                  Block(type="code", content="umask [-p] [-S] [mode]", page_idx=0),
                  Block(type="text", content="Set the shell process's file creation mask to mode. " * 6, page_idx=0)])
    nid = _id(tree, "umask")
    # room for the term, its synopsis and one of its neighbours: the shorter one before it would
    # crowd out the description after it
    [p] = build_passages(tree, [nid], budget_chars=400, item_chars=400)
    assert "Set the shell process's file creation mask" in p.text and "sigspec" not in p.text


def test_a_long_block_shows_the_stretch_that_holds_the_question_words():
    filler = "The committee met in the spring and reviewed its procedures at length. "
    text = filler * 10 + "Each user in the music dataset wrote on average 466.43 review words. " + filler * 10
    shown = focused_text(text, 300, tokenize("What is the average number of review words per user?"))
    assert "466.43" in shown and len(shown) <= 300
    assert shown.startswith("… ") and shown.endswith(" …")
    # no question word in it, or a block that fits: its start, as before
    assert focused_text(text, 300, tokenize("Which colour is the logo?")).startswith("The committee met")
    assert focused_text(text, 300, []).startswith("The committee met")
    assert focused_text("short", 300, tokenize("short")) == "short"


def test_a_packed_long_block_is_centred_on_the_question_but_not_without_one():
    filler = "The committee met in the spring and reviewed its procedures at length. "
    text = filler * 12 + "Each user in the music dataset wrote on average 466.43 review words. " + filler * 12
    tree = _tree([Block(type="title", content="Statistics", page_idx=0, level=1),
                  Block(type="text", content=text, page_idx=0)])
    nid = _id(tree, "The committee")
    asked = pack_passages(tree, [nid], 1000, question="average number of review words per user")[0].text
    plain = pack_passages(tree, [nid], 1000)[0].text
    assert "466.43" in asked and "466.43" not in plain


def _manual() -> DocumentTree:
    """Page 1: a subsection whose table the question's words rank, then the next subsection (a
    heading and its bullet list) holding the answer; page 2: other text."""
    return _tree([
        Block(type="title", content="3.5 Warnings", page_idx=0, level=1),
        Block(type="title", content="3.5.1 For customers in the U.S.A.", page_idx=0, level=2),
        Block(type="text", content="Please use the following power supply cord.", page_idx=0),
        Block(type="table", content="| Plug Type | HOSPITAL GRADE |\n|---|---|\n| Safety Approval | UL Listed and CSA |",
              page_idx=0),
        Block(type="title", content="3.5.2 Safety", page_idx=0, level=2),
        Block(type="list", content="• Use the supplied AC adaptor. • Operate the unit on 100-240V AC only. "
                                   "• Unplug the unit before cleaning it.", page_idx=0),
        Block(type="title", content="3.6 Care", page_idx=1, level=1),
        Block(type="text", content="Clean the panel with a soft dry cloth. " * 4, page_idx=1),
        Block(type="text", content="Keep the vents clear of dust. " * 4, page_idx=1),
    ])


def test_the_best_ranked_item_shows_the_next_subsection_on_its_page():
    tree = _manual()
    table = next(n.id for n in tree.nodes.values() if n.type == "table")
    q = "For the safety approval UL Listed and CSA, what is the second bullet point for safety?"
    first = pack_passages(tree, [table], 1000, question=q)[0]
    assert "3.5.2 Safety" in first.text and "Operate the unit on 100-240V AC only." in first.text
    assert first.first_page == first.last_page == 1 and len(first.text) <= HEAD_ITEM_CHARS
    # headings are not listed as shown nodes: node_ids are the blocks whose text is shown
    assert all(tree.nodes[i].type != "section" for i in first.node_ids)
    # ranked second, the same table keeps to its own subsection
    care = _id(tree, "Clean the panel")
    second = pack_passages(tree, [care, table], 1000, question=q)[1]
    assert second.node_id == table and "Operate the unit" not in second.text
    # the headings above the ranked block are its title path, not repeated in its text
    assert "3.5 Warnings" not in first.text and first.title_path == ("3.5 Warnings", "3.5.1 For customers in the U.S.A.")



def _parts(n: int, verb: str, body: str, lead: list[Block] | None = None) -> tuple[DocumentTree, list[str]]:
    """A tree of `n` one-page parts, part i saying "Part i <verb> <body>"; the ids of those blocks."""
    blocks = list(lead or [])
    for i in range(n):
        blocks += [Block(type="title", content=f"Part {i}", page_idx=i, level=1),
                   Block(type="text", content=f"Part {i} {verb} {body}", page_idx=i)]
    tree = _tree(blocks)
    return tree, [_id(tree, f"Part {i} {verb}") for i in range(n)]

def test_the_head_of_the_ranking_gets_more_room_than_its_tail():
    tree, ids = _parts(12, "says", "something rather long about it " * 60,
                       [Block(type="title", content="Report", page_idx=0, level=1)])
    packed = pack_passages(tree, ids, 10_000)
    sizes = [len(p.text) for p in packed]
    assert len(packed) == 12 and sizes[0] <= HEAD_ITEM_CHARS and sizes[0] > PACK_ITEM_CHARS
    assert all(TAIL_ITEM_CHARS < s <= PACK_ITEM_CHARS for s in sizes[1:TAIL_FROM - 1])
    assert all(s <= TAIL_ITEM_CHARS for s in sizes[TAIL_FROM - 1:])


def test_leaders_cost_no_room_in_a_packed_passage_but_stay_for_the_extractive_reader():
    toc = "\n".join(f"3.{i} Section number {i} " + "." * 60 + f" {20 + i}" for i in range(12))
    tree = _tree([Block(type="title", content="Contents", page_idx=0, level=1),
                  *[Block(type="text", content=line, page_idx=0) for line in toc.splitlines()]])
    first = _id(tree, "3.0 Section")
    packed = pack_passages(tree, [first], 1000)[0].text
    assert ".." not in packed and "3.0 Section number 0 … 20" in packed
    assert "3.11 Section number 11 … 31" in packed  # the room leaders took now shows more lines
    assert "." * 60 in build_passages(tree, [first])[0].text


def test_a_statement_shows_the_line_item_of_the_financial_term_the_question_names():
    from bookindex.operators.passages import question_terms

    rows = "\n".join(f"| Adjustment item number {i} | {100 + i} | {90 + i} |" for i in range(40))
    table = ("| Cash Flows from Investing Activities | 2018 | 2017 |\n|---|---|---|\n" + rows
             + "\n| Purchases of property, plant and equipment (PP&E) | (1,577) | (1,373) |\n" + rows)
    tree = _tree([Block(type="title", content="Consolidated Statement of Cash Flows", page_idx=0, level=1),
                  Block(type="table", content=table, page_idx=0)])
    nid = _id(tree, "| Cash Flows")
    question = "What is the FY2018 capital expenditure amount for 3M?"
    assert "purchases" in question_terms(question) and not question_terms("")
    [p] = pack_passages(tree, [nid], 1000, question=question)
    assert "(1,577)" in p.text  # the statement prints the line item, not "capital expenditure"


def _opinion() -> DocumentTree:
    """Page 1 of a court opinion: the caption's short lines, a long paragraph, then the ranked
    filing stamp and another long paragraph; page 2: the opinion goes on."""
    long_para = "This is the decision on the appeal of the commission's finding about the ordinance. " * 12
    return _tree([
        Block(type="text", content="Superior Court of Delaware.", page_idx=0),
        Block(type="text", content="Re: Diane HANSON", page_idx=0),
        Block(type="text", content="v. DELAWARE STATE PUBLIC INTEGRITY COMMISSION.", page_idx=0),
        Block(type="text", content="E. SCOTT BRADLEY, Judge.", page_idx=0),
        Block(type="text", content=long_para, page_idx=0),
        Block(type="text", content="Filing ID 48897809 Case Number 515,2012", page_idx=0),
        Block(type="text", content="Other things happened then, and a lawsuit was filed. " * 20, page_idx=0),
        Block(type="title", content="I. Background", page_idx=1, level=1),
        Block(type="text", content="The plan was released to the public in June. " * 6, page_idx=1),
    ])


def test_the_page_walk_passes_over_a_long_block_to_the_short_lines_beyond_it():
    tree = _opinion()
    stamp = _id(tree, "Filing ID")
    first = pack_passages(tree, [stamp], 1000)[0]
    text = first.text
    # the caption is past a paragraph too long for the room: passed over, its gap marked "…"
    assert "v. DELAWARE STATE PUBLIC INTEGRITY COMMISSION." in text and "This is the decision" not in text
    assert text.index("Superior Court") < text.index("E. SCOTT BRADLEY") < text.index("\n…\n") < text.index("Filing ID")
    # what room is left shows the start of the following paragraph, cut at a word
    assert "Other things happened then" in text and text.endswith(" …") and len(text) <= HEAD_ITEM_CHARS
    assert first.first_page == first.last_page == 1
    # ranked second, the stamp keeps to its neighbours: only the best item walks its page
    second = pack_passages(tree, [_id(tree, "The plan was released"), stamp], 1000)[1]
    assert second.node_id == stamp and "DELAWARE" not in second.text and "…" not in second.text.splitlines()


def test_the_start_of_a_table_passed_over_is_its_header_and_the_rows_asked_for():
    rows = "\n".join(f"| Statistic number {i} | {100 + i} | {200 + i} |" for i in range(30))
    table = "| Dataset | Beauty | Music |\n|---|---|---|\n" + rows + "\n| Avg. words/user | 990.48 | 466.43 |"
    tree = _tree([Block(type="title", content="3.2 Dataset Construction", page_idx=0, level=1),
                  Block(type="text", content="We select users who wrote at least ten product reviews.", page_idx=0),
                  Block(type="title", content="3.3 Dataset Statistics", page_idx=0, level=1),
                  Block(type="table", content=table, page_idx=0)])
    ranked = _id(tree, "We select users")
    text = pack_passages(tree, [ranked], 1000, question="What is the average number of words per user?")[0].text
    assert "3.3 Dataset Statistics" in text and "| Dataset | Beauty | Music |" in text
    assert "| Avg. words/user | 990.48 | 466.43 |" in text and len(text) <= HEAD_ITEM_CHARS


def test_an_item_too_long_for_the_rest_of_the_budget_is_cut_to_fit_it():
    # figures cost about a token per two characters: an item's room in characters (its share of
    # the tokens left times CHARS_PER_TOKEN) holds more tokens than are left
    tree, ids = _parts(4, "counts", "1 2 3 4 5 6 7 8 9 " * 40)
    whole = pack_passages(tree, ids, 5000)
    budget = estimate_tokens(format_passages(whole[:1])) + 200
    packed = pack_passages(tree, ids, budget)
    assert estimate_tokens(format_passages(packed)) <= budget
    assert len(packed) == 2 and packed[1].node_id == ids[1]
    assert packed[1].text.startswith("Part 1 counts") and len(packed[1].text) < len(whole[1].text)


def test_outer_titles_an_earlier_item_showed_are_not_repeated():
    tree = _tree([Block(type="title", content="ANNUAL REPORT ON FORM 10-K FOR THE FISCAL YEAR", page_idx=0, level=1),
                  Block(type="title", content="Item 7. Management's Discussion", page_idx=0, level=2),
                  Block(type="text", content="Revenue grew by twelve percent.", page_idx=0),
                  Block(type="title", content="Item 8. Financial Statements", page_idx=1, level=2),
                  Block(type="text", content="Total assets were 41,190.", page_idx=1),
                  Block(type="title", content="Exhibits", page_idx=2, level=1),
                  Block(type="text", content="The list of exhibits.", page_idx=2)])
    ids = [_id(tree, "Revenue"), _id(tree, "Total assets"), _id(tree, "The list")]
    first, second, third = pack_passages(tree, ids, 1000)
    assert first.where == "p. 1 · ANNUAL REPORT ON FORM 10-K FOR THE FISCAL YEAR > Item 7. Management's Discussion"
    assert second.where == "p. 2 · … > Item 8. Financial Statements"
    assert third.where == "p. 3 · Exhibits"
    # the passage itself keeps its whole path (readers and citations use it)
    assert second.title_path == ("ANNUAL REPORT ON FORM 10-K FOR THE FISCAL YEAR", "Item 8. Financial Statements")


def test_a_ranked_line_of_a_scanned_page_brings_the_next_lines():
    # OCR's text layer on a scanned map: one code block per line, in a section too long to show whole
    lines = ["The Centres of", "Indian Space Programme", *[f"* Station number {i} of the network" for i in range(60)]]
    tree = _tree([Block(type="title", content="Organisation", page_idx=0, level=1),
                  *[Block(type="code", content=ln, page_idx=0) for ln in lines]])
    ranked = _id(tree, "The Centres of")
    for p in (build_passages(tree, [ranked])[0], pack_passages(tree, [_id(tree, "* Station number 59"), ranked], 1000)[1]):
        assert p.text.startswith("The Centres of\nIndian Space Programme\n* Station number 0")


def test_a_ranked_line_over_a_table_brings_the_table_rows_asked_for():
    rows = "\n".join(f"| Other asset number {i} | {100 + i} | {90 + i} |" for i in range(40))
    table = "| | 2019 | 2018 |\n|---|---|---|\n" + rows + "\n| Merchandise inventories | 5,409 | 5,209 |\n" + rows
    tree = _tree([Block(type="title", content="Results", page_idx=0, level=1),
                  Block(type="text", content="Revenue grew in every quarter of the year. " * 8, page_idx=0),
                  Block(type="title", content="Consolidated Balance Sheets", page_idx=1, level=1),
                  Block(type="text", content="$ in millions, except per share amounts", page_idx=1),
                  Block(type="table", content=table, page_idx=1),
                  Block(type="text", content="See Notes to Consolidated Financial Statements.", page_idx=1)])
    question = "What is the total amount of inventories in FY2019?"
    line = _id(tree, "$ in millions")
    # ranked second (no page walk), the line brings its table's header and the row asked for
    second = pack_passages(tree, [_id(tree, "Revenue grew"), line], 1000, question=question)[1]
    assert second.node_id == line and "| Merchandise inventories | 5,409 | 5,209 |" in second.text
    assert "| | 2019 | 2018 |" in second.text and "Other asset number 20 " not in second.text
    # a table already shown is not shown again
    again = pack_passages(tree, [_id(tree, "| |"), line], 1000, question=question)
    assert again[1].text.count("Merchandise inventories") == 0


def test_a_focused_table_keeps_the_years_set_below_its_separator():
    rows = "\n".join(f"| Line item {i} | {i},000 |  | {i},500 |  |" for i in range(40))
    table = ("|  | December 31, |  |  |  |\n|---|---|---|---|---|\n|  | 2018 |  | 2017 |  |\n"
             f"{rows}\n| Accounts payable | $ | 302,578 | $ | 255,028 |")
    shown = focused_table(table, 300, tokenize("What are the accounts payable?"))
    assert shown.splitlines()[:3] == table.splitlines()[:3]
    assert "302,578" in shown and "Line item 39" not in shown
    # a first body row with other numbers than years is a row like any other
    plain = table.replace("|  | 2018 |  | 2017 |  |", "| Cash | 2018 |  | 12 |  |")
    assert "| Cash |" not in focused_table(plain, 300, tokenize("accounts payable"))


def test_a_focused_table_keeps_the_row_of_the_key_the_question_names_in_parts():
    rows = "\n".join(f"| key{i}color | color | shade {i} | Color for thing {i}. |" for i in range(30))
    table = f"| Key | Type | Default | Meaning |\n|---|---|---|---|\n{rows}\n| urlcolor | color | magenta | Color for URLs. |"
    shown = focused_table(table, 300, tokenize("What color are URL links by default?"))
    assert "| urlcolor | color | magenta |" in shown and "key29color" not in shown


def test_a_section_titled_with_the_question_opens_with_its_first_block():
    tree = _tree([Block(type="title", content="2.10 What is CRAN?", page_idx=0, level=1),
                  Block(type="text", content="The Comprehensive R Archive Network (CRAN) is a collection of sites "
                        "which carry identical material.", page_idx=0),
                  Block(type="text", content="Mirrors are listed on the main site. " * 6, page_idx=0),
                  Block(type="code", content="https://CRAN.R-project.org/", page_idx=0),
                  Block(type="text", content="Please use the CRAN site closest to you. " * 4, page_idx=0)])
    nid = _id(tree, "https://CRAN")
    room = 400  # the opening blocks up to the ranked one fit, the whole section does not
    [p] = build_passages(tree, [nid], budget_chars=room, item_chars=room, question="What is CRAN?")
    assert p.text.startswith("The Comprehensive R Archive Network (CRAN) is") and "https://CRAN" in p.text, p.text
    # a question the title does not hold keeps the nearest neighbours first
    [q] = build_passages(tree, [nid], budget_chars=room, item_chars=room, question="Where are the CRAN mirrors?")
    assert "Comprehensive" not in q.text and "https://CRAN" in q.text, q.text


def test_a_block_ending_in_a_colon_brings_the_list_it_announces():
    tree = _tree([Block(type="title", content="1.1 Configuration", page_idx=0, level=1),
                  Block(type="text", content="This booklet documents the parallel interface. " * 4, page_idx=0),
                  Block(type="text", content="Two multithread interfaces are supported:", page_idx=0),
                  Block(type="list", content="• POSIX threads\n• Message passing interface (MPI)", page_idx=0),
                  Block(type="text", content="POSIX threads are well-suited for single systems. " * 6, page_idx=0)])
    nid = _id(tree, "Two multithread")
    [p] = build_passages(tree, [nid], budget_chars=400, item_chars=400)
    assert "Two multithread interfaces are supported:\n• POSIX threads" in p.text, p.text


def _chart_page(rows: int = 3) -> DocumentTree:
    """A report's page: a paragraph, a chart's title line, the chart read in rows from its text
    layer (parsing.pdf_labelled_charts), its note; then the next section."""
    chart = "\n".join(["% who are confident that the president can …", "Not at all Not too Somewhat Very",
                       *(f"Handle issue number {i} {20 + i} {30 + i} {25 + i} {40 - i}" for i in range(rows)),
                       "Make wise decisions about immigration policy 55 39 26 43"])
    return _tree([Block(type="title", content="Confidence in the president", page_idx=0, level=1),
                  Block(type="text", content="Public confidence remains mixed on most key issues. " * 4, page_idx=0),
                  Block(type="text", content="% who are confident that the president can …", page_idx=0),
                  Block(type="image", content="", page_idx=0,
                        extra={"figure_kind": "bar chart", "chart_text": chart}),
                  Block(type="text", content="Note: Don't know responses not shown.", page_idx=0),
                  Block(type="title", content="Views of the parties", page_idx=0, level=1),
                  Block(type="text", content="Views of both parties are divided along partisan lines. " * 3, page_idx=0)])


def test_a_chart_read_in_rows_is_shown_beside_its_ranked_note():
    tree = _chart_page()
    note = _id(tree, "Note: Don't know")
    text = pack_passages(tree, [note], 1000, question="How confident are people about immigration policy?")[0].text
    assert "Make wise decisions about immigration policy 55 39 26 43" in text.splitlines()  # a row, a line
    assert "Not at all Not too Somewhat Very" in text.splitlines()


def test_a_long_chart_shows_its_legend_and_the_rows_asked_for():
    tree = _chart_page(rows=40)
    chart = next(n.id for n in tree.nodes.values() if n.type == "image" and n.meta.get("chart_text"))
    text = pack_passages(tree, [chart], 1000, question="How confident are people about immigration policy?")[0].text
    lines = text.splitlines()
    assert "Not at all Not too Somewhat Very" in lines and "Make wise decisions about immigration policy 55 39 26 43" in lines
    assert "Handle issue number 20 40 50 45 20" not in lines and "…" in lines
    assert len(text) <= HEAD_ITEM_CHARS


def test_focused_rows_return_the_chart_whole_when_it_fits_or_no_row_is_asked_for():
    chart = "Legend A B\nRow one 1 2\nRow two 3 4"
    assert focused_rows(chart, 1000, ["row"]) == chart
    long_chart = chart + "\n" + "\n".join(f"Other {i} {i}" for i in range(50))
    assert focused_rows(long_chart, 100, ["nothing"]) == long_chart
    assert focused_rows(long_chart, 100, []) == long_chart


def test_a_ranked_paragraph_brings_the_chart_row_its_question_asks_for_from_its_page():
    rows = "\n".join(f"Manage item number {i} {20 + i} {30 + i}" for i in range(30))
    chart = f"% who are confident in the president's ability to …\nNot confident Confident\n{rows}\n" \
            "Handle an international crisis 54 44\n" + rows
    tree = _tree([Block(type="title", content="Views of the president", page_idx=0, level=1),
                  Block(type="image", content="", page_idx=0, extra={"figure_kind": "bar chart", "chart_text": chart}),
                  Block(type="text", content="Other findings of the survey are reported below. " * 6, page_idx=0),
                  Block(type="title", content="Confidence on issues", page_idx=0, level=1),
                  Block(type="text", content="Narrow majorities have little confidence in him to handle an "
                        "international crisis. " + "More details follow in the next chapter. " * 8, page_idx=0),
                  Block(type="title", content="Next chapter", page_idx=1, level=1),
                  Block(type="text", content="Elsewhere. " * 40, page_idx=1)])
    question = "How many are confident in the president's ability to handle an international crisis?"
    ranked = _id(tree, "Narrow majorities")
    for k in (0, 1):  # the best-ranked item (its page walk) and any later one
        ids = [ranked] if k == 0 else [_id(tree, "Elsewhere"), ranked]
        p = pack_passages(tree, ids, 1000, question=question)[k]
        lines = p.text.splitlines()
        assert p.node_id == ranked and "Handle an international crisis 54 44" in lines
        assert "Not confident Confident" in lines and "Manage item number 7 27 37" not in lines
        assert lines.index("Handle an international crisis 54 44") < next(
            i for i, ln in enumerate(lines) if ln.startswith("Narrow majorities"))  # in page order
    # no row holds the question's words: the chart is not brought
    other = pack_passages(tree, [_id(tree, "Elsewhere"), ranked], 1000, question="Who was surveyed about crises?")[1]
    assert "Not confident Confident" not in other.text


def test_a_focused_table_passes_over_a_row_too_long_for_its_room():
    # the parser ran the paragraph below the table into its last row: that line holds most of the
    # question's words but does not fit; the shorter rows that hold them are still shown
    rows = "\n".join(f"| # of things {i} | {i} | {i + 1} |" for i in range(12))
    table = (f"| Dataset | Music | Beauty |\n|---|---|---|\n{rows}\n| Avg. words/user | 990.48 | 466.43 |\n"
             + "The average number of words per user and the number of users of each dataset are shown. " * 5)
    shown = focused_table(table, 300, tokenize("What is the average number of words per user?"))
    assert "| Avg. words/user | 990.48 | 466.43 |" in shown and len(shown) <= 300
    assert "are shown." not in shown


def test_a_superlative_question_keeps_the_rows_holding_a_columns_extremes():
    # "which subgroup gained most": the answer's row shares no word with the question; its number
    # is the largest of its column
    rows = [f"Region {chr(65 + i)} {60 + i % 7} {70 + i % 5} +{5 + i % 4}" for i in range(24)]
    rows[17] = "Some college or more 65 85 +20"
    chart = "% who expect their finances to improve\n2015 2008 Change '08-'15\nAll Hispanics 67 81 +14\n" \
        + "\n".join(rows)
    question = "Which subgroup among Hispanics has gained most confidence from 2008 to 2015?"
    terms = question_terms(question)
    assert terms.extreme and not question_terms("Which subgroups gained confidence since 2008?").extreme
    shown = focused_rows(chart, 300, terms)
    assert "Some college or more 65 85 +20" in shown.splitlines() and "All Hispanics 67 81 +14" in shown
    assert "Some college or more" not in focused_rows(chart, 300, tokenize(question))  # words alone
    # a table's columns are its cells: the smallest value of a column is kept too
    body = "\n".join(f"| Method {i} | {50 + i} | {0.5 + i / 100:.2f} |" for i in range(30))
    table = f"| Method | Score | Rate |\n|---|---|---|\n{body}\n| Ours | 12 | 0.93 |"
    shown = focused_table(table, 200, question_terms("Which method has the lowest score?"))
    assert "| Ours | 12 | 0.93 |" in shown and len(shown) <= 200


def test_a_ranked_paragraph_brings_the_table_it_cites_on_its_page():
    rows = "\n".join(f"| # of things {i} | {i} | {i + 1} |" for i in range(30))
    table = f"| Dataset | Music | Beauty |\n|---|---|---|\n{rows}\n| Avg. words/user | 990.48 | 466.43 |"

    def tree_citing(citation: str) -> DocumentTree:
        paragraph = (f"We keep the users who wrote at least ten reviews. {citation} the statistics after the "
                     "filtration. " + "Each of them is described in the next section. " * 6)
        return _tree([Block(type="title", content="Dataset construction", page_idx=0, level=1),
                      Block(type="text", content=paragraph, page_idx=0),
                      Block(type="text", content="Other remarks on the collection. " * 10, page_idx=0),
                      Block(type="table", content=table, page_idx=0),
                      Block(type="text", content="Table 3: Statistics of the datasets.", page_idx=0),
                      Block(type="title", content="Methods", page_idx=1, level=1),
                      Block(type="text", content="Elsewhere. " * 40, page_idx=1)])

    question = "What is the average number of words per user in the music dataset?"
    for citation, brought in (("Table 3 shows", True), ("We show", False), ("Table 4 shows", False)):
        tree = tree_citing(citation)
        ranked = _id(tree, "We keep the users")
        p = pack_passages(tree, [_id(tree, "Elsewhere"), ranked], 1000, question=question)[1]
        assert p.node_id == ranked
        assert ("| Avg. words/user | 990.48 | 466.43 |" in p.text.splitlines()) is brought, citation


def _body(text: str, page: int, size: float = 10.0) -> Block:
    return Block(type="text", content=text, page_idx=page, features={"font_size": size})


def test_a_sentence_a_page_break_cuts_is_shown_whole():
    """A block that stops mid-sentence at its page's foot (a footnote and the page number after
    it) goes on in the next page's first block, in the same font and in lower case: the passage
    shows the sentence whole, cut at its full stop. A block ending its sentence, or followed by
    more of its page's text, does not."""
    tree = _tree([Block(type="title", content="1 Package options", page_idx=0, level=1),
                  _body("The obeyspaces option allows spaces. So if you need to obey spaces", 0),
                  _body("*Thanks to Robin for the conversion!", 0, size=8.0),
                  _body("1", 0),
                  _body("you can say \\usepackage[obeyspaces]{url}." + " Package option hyphens allows breaks "
                        "after hyphens, which is rarely needed." * 8, 1),
                  _body("A paragraph that ends its sentence.", 1),
                  _body("Another one that stops mid-sentence but has more after it", 1),
                  _body("on the same page.", 1)])
    cut = tree.nodes[_id(tree, "The obeyspaces")]
    nid, tail = page_break_tail(tree, cut)
    assert tail == "you can say \\usepackage[obeyspaces]{url}." and nid == _id(tree, "you can say")
    assert page_break_tail(tree, tree.nodes[_id(tree, "A paragraph")]) == ("", "")
    assert page_break_tail(tree, tree.nodes[_id(tree, "Another one")]) == ("", "")
    text = build_passages(tree, [cut.id], budget_chars=200)[0].text
    assert "So if you need to obey spaces you can say \\usepackage[obeyspaces]{url}." in text, text
    whole = build_passages(tree, [cut.id], budget_chars=5000)[0].text  # the next block shown: said once
    assert whole.count("you can say") == 1, whole
