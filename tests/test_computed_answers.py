"""Computed answers without an LLM: the arithmetic a question asks (its own definitions, "A to B
ratio", "A as a % of B", margins, growth, multi-year averages), over line items read from the
document's tables at the years asked, each value cited by its table."""

from __future__ import annotations

import pytest

from bookindex.core.config import load_settings
from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import Block, build_tree
from bookindex.evaluation.short_answers import short_answer
from bookindex.operators.computed import computed_answer
from bookindex.operators.context import IndexContext, MemoryIndex
from bookindex.operators.formula import Item, Mean, Op, evaluate, formula, render
from bookindex.operators.statements import find, year_line
from bookindex.retrieval import ask


def _filing():
    """A small 10-K: statements whose column years are a line of text above the table (as
    PyMuPDF reads them), one whose header row holds the years, and a text block of rows."""
    B = Block
    return build_tree("filing0000000001", "ACME_2019_10K.pdf", [
        B("title", "Item 7. Management's Discussion", 0, level=1),
        B("text", "Revenue grew in 2019 compared to 2018 by 12 percent, and deferred revenue fell.", 0),
        B("table", "| Deferred revenue | 40 | 55 |\n|---|---|---|\n| Other | 1 | 2 |", 0),
        B("title", "Consolidated Statements of Operations", 1, level=1),
        B("text", "(In millions) 2019 2018 2017", 1),
        B("table", "| Net sales $ | 1,120 $ | 1,000 $ | 900 |\n|---|---|---|---|\n"
                   "| Cost of sales | 700 | 640 | 600 |\n| Operating income | 224 | 180 | 171 |\n"
                   "| Interest expense | (12) | (10) | (9) |\n"
                   "| Net income | 112 | 90 | 81 |", 1),
        B("title", "Consolidated Balance Sheets", 2, level=1),
        B("table", "| (in millions) | December 31, 2019 | December 31, 2018 |\n|---|---|---|\n"
                   "| Inventories | 210 | 190 |\n| Total current assets | 600 | 520 |\n"
                   "| Accounts payable | 150 | 130 |\n| Other current liabilities | 50 | 40 |\n"
                   "| Total current liabilities | 400 | 390 |\n| Long-term debt | 300 | 260 |\n"
                   "| Total liabilities | 700 | 650 |\n| Total liabilities and equity | 1,400 | 1,300 |\n"
                   "| Property and equipment, net | 300 | 260 |\n| Total assets | 1,400 | 1,300 |", 2),
        B("title", "Consolidated Statements of Cash Flows", 3, level=1),
        B("text", "(In millions) 2019 2018 2017", 3),
        B("text", "Net cash provided by operating activities 250 210 190", 3),
        B("table", "| Purchases of property and equipment | (80) | (70) | (60) |\n|---|---|---|---|\n"
                   "| Inventories | (20) | (15) | (5) |", 3),
    ])


@pytest.fixture(scope="module")
def filing():
    return _filing()


# -- reading the question ------------------------------------------------------------------

def test_a_definition_in_the_question_is_the_expression():
    f = formula("What is ACME's FY2019 working capital ratio? Define working capital ratio as total "
                "current assets divided by total current liabilities. Round your answer to two decimal places.")
    assert f is not None and f.decimals == 2 and not f.percent
    assert f.expr == Op("/", Item("total current assets", "2019"), Item("total current liabilities", "2019"))


def test_definitions_are_substituted_and_averages_span_the_years_named():
    f = formula("What is the FY2019 cash conversion cycle (CCC)? CCC is defined as: DIO - DPO. DIO is defined as: "
                "365 * (average inventory between FY2018 and FY2019) / (FY2019 COGS). DPO is defined as: 365 * "
                "(average accounts payable between FY2018 and FY2019) / (FY2019 COGS).")
    assert f is not None
    inv = Mean((Item("inventory", "2018"), Item("inventory", "2019")))
    assert f.expr.left == Op("/", Op("*", type(f.expr.left.left.left)(365.0), inv), Item("cogs", "2019"))


def test_ratio_share_margin_growth_and_average_wordings():
    assert formula("what is current liabilities to total liabilities for ACME in FY2021?").expr == \
        Op("/", Item("current liabilities", "2021"), Item("total liabilities", "2021"))
    f = formula("What is the FY2017 - FY2019 3 year average of capex as a % of revenue? Answer in units of percents "
                "and round to one decimal place.")
    assert f.percent and f.decimals == 1 and isinstance(f.expr, Mean) and len(f.expr.parts) == 3
    f = formula("What is the FY2019 - FY2020 total revenue growth rate for ACME?")
    assert f.percent and f.expr == Op("/", Op("-", Item("total revenue", "2020"), Item("total revenue", "2019")),
                                      Item("total revenue", "2019"))
    assert formula("What was ACME's interest coverage ratio using FY2022 Adjusted EBIT as the numerator and annual "
                   "Interest Expense as the denominator?").expr == \
        Op("/", Item("adjusted ebit", "2022"), Item("interest expense", "2022"))
    f = formula("What is the FY2015 depreciation and amortization (D&A from cash flow statement) % margin for ACME?")
    assert f.percent and f.expr == Op("/", Item("depreciation and amortization", "2015"), Item("revenue", "2015"))
    f = formula("What is ACME's FY2019 net profit margin?")
    assert f.percent and f.expr == Op("/", Item("net profit", "2019"), Item("revenue", "2019"))


def test_questions_that_ask_no_arithmetic_give_none():
    for q in ("What does asn1_der_coding do?", "How many tables are in section 4?",
              "Which region had the highest revenue?", "What is the operating profit margin before depreciation?",
              "What percentage of Latinos say the economy is improving?",
              "What drove the reduction in SG&A expense as a percent of net sales in FY2023?",
              "Did ACME's wages expense as a percent of net sales increase or decrease in FY2023?",
              "Was there any change in the number of stores between FY2023 and FY2024?"):
        assert formula(q) is None, q


def test_a_line_of_column_years_is_not_a_sentence_about_years():
    assert year_line("December 31, December 31, (Dollars in millions) 2018 2017") == ("2018", "2017")
    assert year_line("In 2017, cash flows decreased $422 million compared to 2016") == ()


# -- finding the line items ----------------------------------------------------------------

def test_items_are_found_by_their_row_and_the_year_of_their_column(filing):
    v = find(filing, Item("total current assets", "2018"))
    assert (v.amount, v.label, v.page, v.scale) == (520.0, "total current assets", 3, 1e6)
    # the years set above the table as a line of text, and a trailing "$" in a cell
    assert find(filing, Item("revenue", "2017")).amount == 900.0
    # a row written as text under the statement's years
    assert find(filing, Item("cash from operations", "2018")).amount == 210.0
    # a name the statements print in other words (the glossary), an outflow read as its size
    assert find(filing, Item("capex", "2019")).amount == 80.0
    assert find(filing, Item("total current assets", "2016")) is None
    assert find(filing, Item("goodwill", "2019")) is None


def test_a_label_with_other_words_between_or_a_second_item_joined_is_another_line(filing):
    assert find(filing, Item("current liabilities", "2019")).amount == 400.0  # the total, not "other ..."
    assert find(filing, Item("total liabilities", "2019")).amount == 700.0  # not "total current ..." nor "... and equity"
    assert find(filing, Item("interest expense", "2019")).amount == 12.0  # an expense in brackets is its size
    f = formula("What is ACME's FY2019 interest expense to average long-term debt ratio?")
    assert render(f, evaluate(f.expr, lambda it: find(filing, it))) == f"{12 / 280:.3f}"


def test_the_statement_asked_is_read_before_another_that_prints_the_row(filing):
    from bookindex.operators.glossary import named_statements
    bs = frozenset(named_statements("based on the balance sheet"))
    assert find(filing, Item("inventories", "2019"), bs).amount == 210.0


def test_evaluate_renders_as_asked(filing):
    f = formula("What is the FY2018 - FY2019 2 year average of capex as a % of revenue? Round to two decimal places.")
    r = evaluate(f.expr, lambda it: find(filing, it))
    assert render(f, r) == f"{(80 / 1120 + 70 / 1000) / 2 * 100:.2f}%"
    f = formula("What is the FY2019 free cash flow? FCF is defined as: (cash from operations - capex). "
                "Answer in USD millions.")
    assert render(f, evaluate(f.expr, lambda it: find(filing, it))) == "$170"


# -- the answer ------------------------------------------------------------------------------

def test_the_computed_answer_states_the_result_first_and_cites_each_table(filing):
    q = ("What is the FY2019 days payable outstanding (DPO)? DPO is defined as: 365 * (average accounts payable "
         "between FY2018 and FY2019) / (FY2019 COGS). Round your answer to two decimal places.")
    c = computed_answer(filing, q)
    assert c is not None
    assert short_answer(q, c.answer) == f"{365 * 140 / 700:.2f}"
    assert c.structural["operation"] == "COMPUTE" and len(c.node_ids) == 2
    assert "accounts payable 2018: 130 [1]" in c.answer and "cost of sales 2019: 700 [2]" in c.answer


def test_a_value_printed_nowhere_gives_no_computed_answer(filing):
    assert computed_answer(filing, "What is ACME's FY2019 goodwill to total assets ratio?") is None


def test_ask_without_an_llm_answers_the_arithmetic_and_leads_with_the_tables(filing):
    ctx = IndexContext(index=MemoryIndex(tree=filing, graph=KnowledgeGraph()), settings=load_settings())
    a = ask(ctx, "What is the FY2019 working capital ratio? Define working capital ratio as total current assets "
                 "divided by total current liabilities.")
    assert a.answer.startswith("1.50 [1]")
    assert a.evidence[0].page == 3 and a.structural["operation"] == "COMPUTE"


def test_search_ranks_the_tables_of_the_arithmetic_first(filing):
    from bookindex.retrieval import search
    ctx = IndexContext(index=MemoryIndex(tree=filing, graph=KnowledgeGraph()), settings=load_settings())
    ev = search(ctx, "What is ACME's FY2019 gross profit to total assets ratio? Gross profit is defined as net sales "
                     "minus cost of sales.")
    assert [e.page for e in ev[:2]] == [2, 3]  # the statement of operations, then the balance sheet


def test_a_model_you_bring_answers_itself_and_reads_the_tables_first(filing):
    from fakes import FakeLLM
    llm = FakeLLM(default='{"answer": "1.5 [1]", "citations": [1]}')
    ctx = IndexContext(index=MemoryIndex(tree=filing, graph=KnowledgeGraph()), settings=load_settings(), llm=llm)
    q = ("What is the FY2019 working capital ratio? Define working capital ratio as total current assets "
         "divided by total current liabilities.")
    a = ask(ctx, q)
    assert llm.calls  # the model answered
    assert (a.structural or {}).get("operation") != "COMPUTE"
    assert a.evidence[0].page == 3  # the balance sheet leads what it reads
    # and reads the computation first, each cell cited by the passage that shows it
    prompt = str(llm.calls[-1].messages[-1]["content"])
    assert "[1] (p. 3 · Consolidated Balance Sheets)\nComputed by bookindex from the cells below" in prompt
    assert "= 1.50, from total current assets 2019: 600 [1]; total current liabilities 2019: 400 [1]." in prompt
    reduce = [r for r in a.trace if r.op == "Reduce"][-1].model_dump()
    assert str(reduce.get("computed", "")).startswith("Computed by bookindex")  # --explain shows it
    never = load_settings(overrides={"answer.computed": "never"})
    llm.calls.clear()
    ask(IndexContext(index=MemoryIndex(tree=filing, graph=KnowledgeGraph()), settings=never, llm=llm), q)
    assert "Computed by bookindex" not in str(llm.calls[-1].messages[-1]["content"])
    always = load_settings(overrides={"answer.computed": "always"})
    a2 = ask(IndexContext(index=MemoryIndex(tree=filing, graph=KnowledgeGraph()), settings=always, llm=llm), q)
    assert a2.answer.startswith("1.50 [1]")


def test_rows_run_together_as_prose_and_column_dates_made_headings():
    """A balance sheet the layout parser read as one line of prose, its column dates as headings
    (the second one even outside the statement's section): each label still reads its amounts."""
    B = Block
    tree = build_tree("filing0000000002", "GM_2020_10K.pdf", [
        B("title", "Consolidated Balance Sheets", 0, level=1),
        B("text", "(In Millions, Except Par Value)", 0),
        B("title", "May 31, 2020", 0, level=2),
        B("title", "May 26, 2019", 0, level=1),
        B("text", "Cash and cash equivalents $ 1,677.8 $ 450.0 Receivables 1,615.1 1,679.7 Total current assets "
                  "5,121.3 4,186.5 Land, buildings, and equipment 3,580.6 3,787.2", 0),
        B("title", "Consolidated Statements of Earnings", 1, level=1),
        B("table", "|  | Fiscal Year |  |  |\n|---|---|---|---|\n| In Millions | 2020 |  | 2019 |\n"
                   "| Net sales | $ 17,626.6 |  | $ 16,865.2 |", 1),
        B("text", "Cost of sales 11,496.7 11,108.4", 1),
    ])
    v = find(tree, Item("total current assets", "2019"))
    assert (v.amount, v.scale) == (4186.5, 1e6) and v.label == "total current assets"
    assert find(tree, Item("net pp&e", "2020")).amount == 3580.6
    assert find(tree, Item("cogs", "2019")).amount == 11108.4  # a text row under a table's header years


@pytest.mark.parametrize("operation", ["ANSWER", "SUMMARIZE", "ANALYZE"])
def test_the_in_process_model_is_not_asked_what_the_tables_compute(filing, operation):
    from fakes import FakeLLM

    from bookindex.operators.base import State
    from bookindex.operators.synthesizer import Map, Reduce
    llm = FakeLLM(default='{"answer": "not answerable", "citations": []}')
    settings = load_settings(overrides={"llm.provider": "llamacpp"})
    ctx = IndexContext(index=MemoryIndex(tree=filing, graph=KnowledgeGraph()), settings=settings, llm=llm)
    q = ("What is the FY2019 working capital ratio? Define working capital ratio as total current assets "
         "divided by total current liabilities.")
    state = State(question=q, candidates=[n.id for n in filing.walk() if n.type != "document"])
    state.operation = operation
    state = Map(ctx, Map.Params()).apply(state)
    state = Reduce(ctx, Reduce.Params(operation=operation)).apply(state)
    assert state.answer.startswith("1.50 [1]") and not llm.calls


def test_year_blocks_read_out_of_order_are_put_in_column_order_by_their_right_edges():
    """"2019", "2017 (In millions ...)", "2018": the parser read the heads in no order of years; a
    head is set right-aligned over its column, so the right edges give the columns' order."""
    B = Block
    tree = build_tree("filing0000000003", "AMD_2019_10K.pdf", [
        B("title", "Consolidated Statements of Operations", 0, level=1),
        B("text", "2019", 0, (373, 116, 386, 123)),
        B("text", "2017 (In millions, except per share amounts)", 0, (411, 116, 556, 135)),
        B("text", "2018", 0, (459, 116, 472, 123)),
        B("table", "| Net revenue | $ | 6,731 | $ | 6,475 | $ | 5,253 |\n|---|---|---|---|---|---|---|\n"
                   "| Total revenues | | 6,731 | | 6,475 | | 5,253 |\n| Net sales | | 6,000 | | 6,100 | | 5,000 |", 0,
          (24, 136, 589, 368)),
    ])
    assert find(tree, Item("net revenue", "2018")).amount == 6475.0
    # the question's own words before what statements may call the item
    assert find(tree, Item("total revenue", "2017")).label == "total revenues"


def test_rows_the_parser_stacked_into_one_are_read_apart():
    B = Block
    tree = build_tree("filing0000000004", "3M_2018_10K.pdf", [
        B("title", "Consolidated Statement of Income", 0, level=1),
        B("text", "(Millions) 2018 2017 2016", 0),
        B("table", "| Net sales | 32,765 | 31,657 | 30,109 |\n|---|---|---|---|\n"
                   "| Selling, general and administrative expenses Research, development and related expenses "
                   "| 7,602 1,821 | 6,626 1,870 | 6,311 1,764 |", 0),
    ])
    assert find(tree, Item("r&d", "2017")).amount == 1870.0
    assert find(tree, Item("selling, general and administrative expenses", "2016")).amount == 6311.0


def test_the_prompt_cites_a_table_it_could_not_fit_by_its_page(filing):
    """Every value of the computation is cited: by its passage when the budget showed its table,
    by its page when it did not; answer-in-evidence reads the same text."""
    from bookindex.evaluation.reader_text import reader_text
    from bookindex.operators.synthesizer import prompt_passages
    from bookindex.retrieval import search
    ctx = IndexContext(index=MemoryIndex(tree=filing, graph=KnowledgeGraph()), settings=load_settings())
    q = ("What is the FY2019 days payable outstanding (DPO)? DPO is defined as: 365 * (average accounts payable "
         "between FY2018 and FY2019) / (FY2019 COGS). Round your answer to two decimal places.")
    ids = [e.node_id for e in search(ctx, q)]
    full = prompt_passages(ctx, ids, q)
    assert "accounts payable 2018: 130 [1]" in full[0].text and "cost of sales 2019: 700 [2]" in full[0].text
    one = prompt_passages(ctx, ids, q, budget_tokens=190)
    assert len(one) == 1 and "cost of sales 2019: 700 (p. 2)" in one[0].text
    ev = search(ctx, q)
    assert "= 73.00," in reader_text(ctx, ev, question=q, computed=True)
    assert "= 73.00," not in reader_text(ctx, ev, question=q)  # a baseline's units, packed plainly


def test_an_aside_in_brackets_does_not_part_a_label():
    """"Net cash provided by (used in) operating activities" is the item "net cash provided by
    operating activities" (cash from operations): the bracketed aside is no word between."""
    B = Block
    tree = build_tree("filing0000000004", "SHOP_2021_10K.pdf", [
        B("title", "Consolidated Statements of Cash Flows", 0, level=1),
        B("table", "| (in millions) | 2020 | 2021 |\n|---|---|---|\n"
                   "| Net cash provided by (used in) operating activities | 66,064 | 46,327 |\n"
                   "| Purchases of property and equipment | (40,140) | (61,053) |", 0),
    ])
    c = computed_answer(tree, "What is the FY2021 free cash flow (FCF)? FCF here is defined as: (cash from "
                              "operations - capex). Answer in USD millions.")
    assert c is not None and c.answer.startswith("-$14,726 [1]")


def test_a_row_of_amounts_alone_under_a_heading_is_its_total_when_it_sums_it():
    """"Revenues" then its lines then "| | 9,680 |": the statement's total revenues, printed with
    no label; a row of amounts that is not the sum of the rows above it is no total."""
    B = Block
    tree = build_tree("filing0000000005", "CASINO_2021_10K.pdf", [
        B("title", "Consolidated Statements of Operations", 0, level=1),
        B("text", "Year Ended December 31, 2021 2020", 0),
        B("table", "| Revenues |  |  |\n|---|---|---|\n| Casino | 5,363 | 2,872 |\n| Rooms | 1,690 | 830 |\n"
                   "| Other | 2,627 | 1,460 |\n|  | 9,680 | 5,162 |\n| Expenses |  |  |\n| Casino | 2,551 | 1,702 |\n"
                   "| Rooms | 601 | 419 |\n|  | 4,000 | 2,000 |", 0),
        B("title", "Consolidated Statements of Cash Flows", 1, level=1),
        B("table", "| (in millions) | 2021 | 2020 |\n|---|---|---|\n| Capital expenditures | (491) | (271) |", 1),
    ])
    assert find(tree, Item("total revenue", "2021")).amount == 9680
    assert find(tree, Item("total expenses", "2021")) is None  # 4,000 is not 2,551 + 601
    c = computed_answer(tree, "What is MGM Resorts' FY2021 capital expenditure as a % of total revenue? "
                              "Round to one decimal place.")
    assert c is not None and c.answer.startswith("5.1% [1]")
