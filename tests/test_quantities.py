"""The one lexicon of quantities (bookindex.core.quantities) and the one pipe-table reader
(bookindex.core.pipe_tables), and that the modules which used to keep their own copies now read
the same: the cases below are ones the copies disagreed on."""

from __future__ import annotations

import pytest

from bookindex.core.model import Node
from bookindex.core.pipe_tables import TABLE_RULE, pipe_rows, pipe_tables, row_cells
from bookindex.core.quantities import (
    FISCAL_SPELLED,
    FISCAL_YEAR,
    SCALES,
    YEAR_MAYBE_FISCAL,
    digits_for_words,
    number_word,
    scale_factor,
    scale_name,
    spelled_number,
    word_number,
)


@pytest.mark.parametrize(("text", "value"), [
    ("nine", 9), ("Eleven", 11), ("twenty", 20), ("twenty-one", 21), ("Twenty One", 21),
    ("ninety nine", 99), ("one hundred", 100), ("two hundred and five", 205), ("three thousand", 3000),
])
def test_number_words_are_valued(text: str, value: int) -> None:
    assert word_number(text) == value
    assert spelled_number(text) == str(value)


@pytest.mark.parametrize("text", ["Two-thirds", "one of them", "twenty twenty", "half", "first", "million",
                                  "several", ""])
def test_words_that_are_no_whole_number_are_refused(text: str) -> None:
    assert word_number(text) is None
    assert spelled_number(text) == ""


def test_number_words_written_back() -> None:
    assert [number_word(n) for n in (0, 7, 20, 21, 42, 100)] == ["zero", "seven", "twenty", "twenty-one",
                                                                  "forty-two", ""]
    assert all(word_number(number_word(n)) == n for n in range(100))


def test_cardinals_in_a_text_become_digits_and_ordinals_stay_words() -> None:
    assert digits_for_words("twenty-one pages from page three") == "21 pages from page 3"
    assert digits_for_words("the first ten pages") == "the first 10 pages"
    assert digits_for_words("pages thirty to forty-two") == "pages 30 to 42"


def test_scale_words_and_abbreviations() -> None:
    assert scale_factor("Millions") == 1e6 and scale_factor("thousand") == 1e3 and scale_factor("trillions") == 1e12
    assert scale_factor("000") == 1e3 and scale_factor("mm") == 1e6 and scale_factor("percent") is None
    assert [scale_name(f) for f in SCALES.values()] == list(SCALES) and scale_name(1.0) == ""


def test_years_with_and_without_a_fiscal_prefix() -> None:
    text = "FY2019, FY 2018, FY'2017, fiscal 2016, fiscal year 2015 and 2014"
    assert [m.group(1) for m in FISCAL_YEAR.finditer(text)] == ["2019", "2018", "2017", "2016", "2015"]
    assert [m.group(1) for m in YEAR_MAYBE_FISCAL.finditer(text)] == ["2019", "2018", "2017", "2016", "2015", "2014"]
    assert [m.group(1) for m in FISCAL_SPELLED.finditer(text)] == ["2016", "2015"]


def test_every_module_reads_a_trillion() -> None:
    """The reader knew "trillion"; the statements' and the formula's scale patterns did not."""
    from bookindex.operators.formula import formula
    from bookindex.operators.reader import in_scale
    from bookindex.operators.statements import _scale_of

    assert _scale_of(["Consolidated balance sheet (in trillions of yen)"]) == 1e12
    assert in_scale("¥1.2 trillion", "billion", "") == "1,200 billion"
    f = formula("What is the FY2021 current ratio in trillions? Define it as current assets divided by "
                "current liabilities.")
    assert f is not None and f.scale is None  # a ratio keeps no scale
    g = formula("What is the change in total assets between FY2020 and FY2021 in trillions?")
    assert g is not None and g.scale == 1e12


def test_a_fiscal_year_with_an_apostrophe_is_read_by_the_reader_and_the_router_alike() -> None:
    from bookindex.operators.reader import asked
    from bookindex.routing.identity_match import named_years

    assert named_years("What was revenue in FY'2019?") == {2019}
    assert "2019" in asked("What was revenue in FY'2019?").years


def test_the_planner_reads_a_compound_number_word_as_one_number() -> None:
    """"twenty-one" was read as "20-1", a page range from 20 to 1."""
    from bookindex.retrieval.planner import global_spec_rules

    spec, _ = global_spec_rules("What do pages twenty-one to twenty-three show?")
    assert [(f.filter_type, f.filter_value) for f in spec.filters] == [("page", "21-23")]


def test_a_pipe_row_keeps_an_escaped_pipe_in_its_cell() -> None:
    assert row_cells(r"| E[Y\|X] | 0.5 |") == ["E[Y|X]", "0.5"]
    assert row_cells("| a | b |") == ["a", "b"]
    text = "Intro\n| h1 | h2 |\n|---|:--:|\n| a | b |\n\n| x |\n"
    assert pipe_rows(text) == [["h1", "h2"], ["a", "b"], ["x"]]
    assert pipe_tables(text) == [[["h1", "h2"], ["a", "b"]], [["x"]]]
    assert TABLE_RULE.match("|---|:--:|") and not TABLE_RULE.match("| a | b |")


def test_the_table_readers_count_the_columns_of_a_cell_holding_a_pipe() -> None:
    from bookindex.indexing.graph.extraction import table_rows
    from bookindex.operators.table_shape import shape

    text = "| Term | Meaning | Value |\n|---|---|---|\n| P(Y\\|X) | conditional | 0.4 |\n| P(Y) | marginal | 0.6 |"
    node = Node(id="t", type="table", level=1, text=text)
    assert shape(node).columns == 3
    assert table_rows(node)[1] == ["P(Y|X)", "conditional", "0.4"]


def test_graph_extraction_reads_html_spans_as_the_parsers_do() -> None:
    """A row header spanning two rows heads both: the second row's cells stay in their columns."""
    from bookindex.indexing.graph.extraction import table_rows
    from bookindex.parsing.htmltable import html_table_rows

    html = ("<table><tr><th>Segment</th><th>Year</th><th>Sales</th></tr>"
            "<tr><td rowspan='2'>Retail</td><td>2020</td><td>10</td></tr><tr><td>2021</td><td>12</td></tr></table>")
    node = Node(id="t", type="table", level=1, text="", meta={"html": html})
    assert table_rows(node) == html_table_rows(html)
    assert table_rows(node)[2] == ["Retail", "2021", "12"]


def test_an_average_over_years_counted_in_any_number_word() -> None:
    """The formula's average knew the words one to five; "six year average" became a line item."""
    from bookindex.operators.formula import Mean, formula

    f = formula("What is the FY2010 - FY2015 six year average gross margin?")
    assert f is not None and isinstance(f.expr, Mean) and len(f.expr.parts) == 6
