"""Glossary expansion, global-plan evidence over a whole document, and multi-hop merges led by the
whole question — each on the fixture index with exact expectations."""

from __future__ import annotations

from retrieval_fixture import make_context, node

from bookindex.core.config import RetrievalSettings, default_settings, load_settings
from bookindex.core.model import MAX_LEXICAL_CHARS, Block, build_tree
from bookindex.operators import FilterModal, Map, State
from bookindex.operators.context import IndexContext, MemoryIndex
from bookindex.operators.glossary import expansion, line_items, named_statements, statement_titles
from bookindex.operators.reasoner import SkylineRankerParams
from bookindex.operators.textscore import get_text_index, hybrid_scores, title_forms
from bookindex.providers.lexical import table_row_passages
from bookindex.retrieval.executor import execute
from bookindex.retrieval.plans import Plan, Step


def test_glossary_maps_ratios_to_their_line_items() -> None:
    assert line_items("what is roa for ADBE in FY2015?") == ["net income", "total assets"]
    assert line_items("What is Amazon's FY2017 days payable outstanding (DPO)?") == \
        ["accounts payable", "cost of sales"]
    assert "interest expense" in line_items("what is the interest coverage ratio in FY2019?")
    assert expansion("How do I plot a sine curve?") == ""
    assert "consolidated balance sheets" in expansion("return on equity for FY2020")


def _statements_ctx(glossary: bool) -> IndexContext:
    """Three pages: prose that repeats the question's words, and the two statements it needs.
    Lexical scores only (no embedder): the glossary acts on the lexical half."""
    blocks = [
        Block("text", "Management discusses the return on assets that investors follow in the "
                      "letter to shareholders.", 0, (50, 50, 500, 90)),
        Block("table", "| Consolidated balance sheets | 2019 |\n| Total assets | 19,845 |\n"
                       "| Total liabilities | 5,401 |", 1, (50, 50, 500, 150)),
        Block("table", "| Consolidated statements of operations | 2019 |\n| Net revenues | 6,489 |\n"
                       "| Net income | 1,503 |", 2, (50, 50, 500, 150)),
    ]
    tree = build_tree("fin0000000000000", "report.pdf", blocks, {"pages": 3})
    return _lexical_ctx(tree, {"retrieval.glossary": glossary})


def _lexical_ctx(tree, overrides: dict | None = None) -> IndexContext:
    """A context without graph or embedder: scores are BM25 alone, so expectations are exact."""
    from bookindex.core.graph import KnowledgeGraph

    settings = load_settings(overrides={"llm.provider": "none", **(overrides or {})}, env={})
    return IndexContext(index=MemoryIndex(tree=tree, graph=KnowledgeGraph({}, [])), settings=settings, embedder=None)


def test_glossary_lifts_the_statements_that_compute_a_ratio() -> None:
    q = "What is the FY2019 return on assets?"
    for glossary in (False, True):
        ctx = _statements_ctx(glossary)
        scores = hybrid_scores(ctx, q)
        pages = [ctx.tree.nodes[i].page_idx for i in sorted(scores, key=lambda i: -scores[i])]
        # without the glossary the prose wins; with it both statements outrank the prose
        assert pages[0] == 0 if not glossary else set(pages[:2]) == {1, 2}


def test_statements_are_found_by_the_names_questions_give_them() -> None:
    assert named_statements("Using only the income statement, what is net income?") == \
        [named_statements("statement of operations")[0]]
    assert named_statements("based on the cash flow statement and the balance sheet") != []
    assert named_statements("What drove the operating margin change?") == []
    assert "balance sheets" in statement_titles("what is Amazon's FY2017 return on asset?")
    assert "statements of cash flows" in statement_titles("How much was spent on repurchases of common stock?")
    assert statement_titles("How do I plot a sine curve?") == []


def _report_tree():
    """An auditor's report that names every statement, a note on non-operating income under the
    notes to the financial statements, and the two statements under their own headings, whose
    tables hold few of the question's words."""
    blocks = [
        Block("title", "Report of Independent Registered Public Accounting Firm", 0, level=1),
        Block("text", "We have audited the consolidated balance sheets and the consolidated statements of "
                      "operations of the Company, and its internal control over financial reporting.", 0),
        Block("title", "Notes to Consolidated Financial Statements", 1, level=1),
        Block("title", "Note 9. Non-operating income", 1, level=2),
        Block("text", "Non-operating income includes interest income on cash balances.", 1),
        Block("title", "CONSOLIDATED BALANCE SHEETS", 2, level=1),
        Block("table", "| ASSETS | 2017 |\n| Cash and cash equivalents | 20,522 |\n| Inventories | 16,047 |\n"
                       "| Accounts receivable, net | 13,164 |\n| Goodwill | 13,350 |", 2),
        Block("title", "Consolidated Statements of Earnings", 3, level=1),
        Block("table", "| Revenue | 2017 |\n| Net product sales | 118,573 |\n| Cost of sales | 111,934 |\n"
                       "| Net income | 3,033 |", 3),
    ]
    return build_tree("fin1000000000000", "report.pdf", blocks, {"pages": 4})


def test_statement_headings_outrank_prose_that_names_them() -> None:
    """A ratio's statements are the leaves under the statements' own headings, found by their
    usual names in any wording; the prose that only names them, and a note whose heading path
    holds "statements" and "income" in two different titles, rank below them."""
    ctx = _lexical_ctx(_report_tree())
    scores = hybrid_scores(ctx, "What is the FY2017 return on assets?")
    pages = [ctx.tree.nodes[i].page_idx for i in sorted(scores, key=lambda i: -scores[i])]
    assert set(pages[:2]) == {2, 3}
    index = get_text_index(ctx)
    under = index.under_heading(ctx.tree, statement_titles("return on assets"))
    assert {ctx.tree.nodes[i].page_idx for i, u in zip(index.ids, under) if u} == {2, 3}


def test_global_map_ranks_all_filtered_nodes_not_the_first_pages() -> None:
    ctx = make_context()
    st = State("Which terminal writes vector output?")
    FilterModal(ctx, {"modal_types": ["text", "table", "image"]}).run(st)
    Map(ctx, {"group_size": 2, "max_groups": 2}).run(st)  # room for 4 of the filtered nodes
    assert st.ranked[0][0] == node(ctx.tree, "The pdf terminal writes")  # the last page ranks first
    assert len(st.ranked) == len(st.candidates)  # every filtered node is ranked
    grouped = [i for p in st.partials for i in p["evidence"]]
    assert node(ctx.tree, "The pdf terminal writes") in grouped and len(grouped) == 4
    assert "most relevant" in st.trace[-1]["grouped"]


def test_multi_hop_merge_is_led_by_the_whole_question() -> None:
    ctx = make_context()
    single = [Step(op="Text_Reasoning"), Step(op="Skyline_Ranker", params={"criteria": ["text"]})]
    q = "Which library do the png terminal and the build both need?"
    plan = Plan(question=q, query_type="multi-hop", steps=[
        Step(op="Decompose", params={"sub_questions": ["What does the png terminal write?",
                                                       "How is Plotter installed?"], "synthesis": q}),
        Step(op="ForEach", params={"with_question": True}, steps=single)])
    st = execute(plan, ctx)
    whole = next(r for r in st.trace if r["op"] == "ForEach")["whole_question"]
    assert whole["question"] == q
    whole_top = whole["trace"][-1]["outputs"][0][0]
    assert st.ranked[0][0] == whole_top
    # without the flag the first sub-question leads
    plan.steps[1].params = {}
    st2 = execute(plan, ctx)
    assert "whole_question" not in next(r for r in st2.trace if r["op"] == "ForEach")
    assert st2.ranked[0][0] == st2.sub_results[0]["ranked"][0][0]


def test_multi_hop_merge_shows_a_page_once_before_any_page_twice() -> None:
    from bookindex.retrieval.executor import merge_round_robin
    page = {"a1": 1, "b1": 1, "a2": 2, "b2": 3, "a3": 4}
    whole = [("a1", 0.9), ("a2", 0.8), ("a3", 0.7)]
    sub = [("b1", 0.9), ("b2", 0.8)]
    # plain round robin: the two sub-rankings' page-1 nodes take the first two slots
    assert [i for i, _ in merge_round_robin([whole, sub], 3)] == ["a1", "b1", "a2"]
    # by unit: page 1's second node waits behind every page shown once
    merged = merge_round_robin([whole, sub], 4, unit=page.get)
    assert [i for i, _ in merged] == ["a1", "a2", "b2", "a3"]


def test_count_with_a_quoted_condition_counts_only_matching_items() -> None:
    from bookindex.retrieval.planner import content_terms, make_plan

    assert content_terms('How many tables include "F1" as a metric?') == ["F1"]
    assert content_terms('How many tables are in "Appendix A"?') == []  # no containment verb
    ctx = make_context()
    plan = make_plan('How many tables include "vector"?', ctx)
    assert plan.query_type == "global"
    assert plan.steps[-1].params == {"operation": "COUNT", "must_contain": ["vector"], "unit": "tables"}
    st = execute(plan, ctx)
    assert st.structural["count"] == 1 and st.structural["must_contain"] == ["vector"]
    assert st.structural["items"][0]["node_id"] == node(ctx.tree, "| Terminal | Format |")
    plain = execute(make_plan("How many tables are there?", ctx), ctx)
    assert plain.structural["count"] == 3 and "must_contain" not in plain.structural


def test_page_references_follow_printed_page_labels() -> None:
    from bookindex.operators.textscore import page_references

    labels = ["i", "ii", "iii"] + [str(n) for n in range(1, 26)]  # front matter, then 1..25
    # "page 17" is physical page 17 or the page that prints 17 (physical 20): both are boosted
    assert page_references("What is in the figure at page 17?", 28, labels) == {16, 19}
    assert page_references("What is in the figure at page 17?", 28) == {16}
    # sheet ordinals and the cover count paper, not printed numbers
    assert page_references("What does the second page say?", 28, labels) == {1}
    assert page_references("What is on the cover?", 28, labels) == {0}
    # a repeated label names every page that prints it
    assert page_references("see page 1", 5, ["1", "i", "1", "2", "3"]) == {0, 2}


def test_text_reasoning_boosts_the_page_that_prints_the_number() -> None:
    from bookindex.operators import TextReasoning

    blocks = [Block("text", f"Filler paragraph number {i} about cloud storage services.", i, (50, 50, 500, 90))
              for i in range(6)]
    labels = ["i", "ii", "1", "2", "3", "4"]
    tree = build_tree("lab0000000000000", "labelled.pdf", blocks, {"pages": 6, "page_labels": labels})
    ctx = _lexical_ctx(tree)
    st = State("What does the figure at page 3 show about storage?")
    TextReasoning(ctx).run(st)
    top = sorted(st.scores["text"], key=lambda i: -st.scores["text"][i])[:2]
    assert {tree.nodes[i].page_idx for i in top} == {2, 4}  # physical page 3 and the page printed "3"
    assert st.trace[-1]["page_references"] == [3, 5]


def test_pdf_parser_records_page_labels(tmp_path) -> None:
    import pymupdf

    from bookindex.parsing.pdf import parse_pdf

    doc = pymupdf.open()
    for i in range(4):
        doc.new_page().insert_text((72, 100), f"Body text of sheet {i + 1}.")
    doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
                         {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1}])
    path = tmp_path / "labelled.pdf"
    doc.save(path)
    parsed = parse_pdf(path, ocr=False)
    assert parsed.meta["page_labels"] == ["i", "ii", "1", "2"]
    from bookindex.parsing.dispatch import to_tree

    tree = to_tree(parsed, "lab0000000000001", "labelled.pdf", load_settings(env={}))
    assert tree.meta["page_labels"] == ["i", "ii", "1", "2"]  # kept in the index for queries
    plain = pymupdf.open()
    plain.new_page().insert_text((72, 100), "No labels here.")
    plain.save(tmp_path / "plain.pdf")
    assert "page_labels" not in parse_pdf(tmp_path / "plain.pdf", ocr=False).meta


def test_a_context_without_settings_reads_every_default_and_no_environment(monkeypatch) -> None:

    assert default_settings().model_dump() == load_settings(env={}).model_dump()
    monkeypatch.setenv("BOOKINDEX_RETRIEVAL__MAX_EVIDENCE", "3")
    ctx = make_context(settings=None)
    assert ctx.settings.retrieval == RetrievalSettings() and ctx.settings.retrieval.max_evidence == 10
    # the planner's skyline mode comes from the settings: the same default as the ranker's own
    assert RetrievalSettings().skyline == SkylineRankerParams.model_fields["mode"].default


def test_a_row_of_a_long_table_is_found_by_its_own_words() -> None:
    """A question naming one row of a statement longer than a leaf's indexed text: the table is
    found through that row (with its header and section titles), not lost past the cut."""
    filler = "\n".join(f"| Other operating item number {k} | {k},000 | {k},100 |" for k in range(120))
    table = f"| (In millions) | 2020 | 2019 |\n|---|---|---|\n{filler}\n| Purchases of property and equipment | (1,577) | (1,234) |"
    assert len(table) > MAX_LEXICAL_CHARS
    tree = build_tree("t", "filing", [
        Block("title", "Consolidated Statements of Cash Flows", 0, level=1),
        Block("table", table, 0),
        Block("title", "Liquidity", 1, level=1),
        Block("text", "We fund purchases from operating cash and review equipment needs each year.", 1),
    ])
    ctx = IndexContext(index=MemoryIndex(tree=tree))
    table_id = next(n.id for n in tree.walk() if n.type == "table")
    idx = get_text_index(ctx)
    q = "How much were the purchases of property and equipment?"
    assert idx.lexical(q)[idx.pos[table_id]] == 0  # the row lies past what the leaf is indexed by
    scores = hybrid_scores(ctx, q)
    assert max(scores, key=lambda i: scores[i]) == table_id
    owner, texts = table_row_passages(tree)
    assert len(texts) == 121 and set(owner) == {table_id}
    assert texts[-1].splitlines() == ["Consolidated Statements of Cash Flows", "| (In millions) | 2020 | 2019 |",
                                      "| Purchases of property and equipment | (1,577) | (1,234) |"]


def test_a_table_row_matches_its_statement_named_in_other_word_forms() -> None:
    """"The cash flow statement" names "Statements of Cash Flows": a table's rows are also scored
    with the other forms of the question's words that the tables' section titles print, so the
    statement's row outscores the same row under "Cash Flow Hedges" (which matched more of the
    question's words as written)."""
    rows = "\n".join(f"| Other operating item number {k} | {k},000 | {k},100 |" for k in range(30))
    table = f"| (In millions) | 2020 | 2019 |\n|---|---|---|\n{rows}\n| Purchases of property and equipment | (1,577) | (1,234) |"
    tree = build_tree("t", "filing", [
        Block("title", "Consolidated Statements of Cash Flows", 0, level=1), Block("table", table, 0),
        Block("title", "Cash Flow Hedges", 1, level=1), Block("table", table, 1)])
    ctx = IndexContext(index=MemoryIndex(tree=tree))
    idx = get_text_index(ctx)
    q = "Using the cash flow statement, how much were purchases of property and equipment?"
    assert idx.table_titles is not None
    assert title_forms(q, idx.table_titles) == "flows statements"
    row = idx.table_row_lexical(q)
    assert row is not None
    statement, hedges = (idx.pos[n.id] for n in tree.walk() if n.type == "table")
    assert row[statement] > row[hedges]
    assert title_forms("Which segment grew?", idx.table_titles) == ""


def test_table_rows_never_outscore_the_best_passage() -> None:
    tree = build_tree("t", "doc", [
        Block("title", "Colours", 0, level=1),
        Block("text", "The plot colour is set with the linecolor option of the plot command.", 0),
        Block("table", "| Option | Meaning |\n|---|---|\n| size | the canvas size |\n| font | the label font |", 0),
    ])
    ctx = IndexContext(index=MemoryIndex(tree=tree))
    scores = hybrid_scores(ctx, "How do I set the plot colour with the linecolor option?")
    text_id = next(n.id for n in tree.walk() if n.type == "text")
    assert max(scores, key=lambda i: scores[i]) == text_id
