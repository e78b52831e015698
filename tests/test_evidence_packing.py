"""How a packed passage is cut from the document (operators.passages): which neighbours a ranked
block brings, what of a long block is shown, where the best-ranked item looks beyond its section,
and how the budget is shared between the head and the tail of the ranking."""

from __future__ import annotations

from bookindex.core.model import Block, DocumentTree, build_tree
from bookindex.operators.passages import (
    HEAD_ITEM_CHARS,
    PACK_ITEM_CHARS,
    TAIL_FROM,
    TAIL_ITEM_CHARS,
    build_passages,
    focused_text,
    pack_passages,
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


def test_the_head_of_the_ranking_gets_more_room_than_its_tail():
    blocks = [Block(type="title", content="Report", page_idx=0, level=1)]
    for i in range(12):
        blocks += [Block(type="title", content=f"Part {i}", page_idx=i, level=1),
                   Block(type="text", content=f"Part {i} says {'something rather long about it ' * 60}", page_idx=i)]
    tree = _tree(blocks)
    ids = [_id(tree, f"Part {i} says") for i in range(12)]
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
    assert "purchases" in question_terms(question) and question_terms("") == []
    [p] = pack_passages(tree, [nid], 1000, question=question)
    assert "(1,577)" in p.text  # the statement prints the line item, not "capital expenditure"
