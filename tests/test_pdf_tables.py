"""Tables read from PDFs (parsing.pdf_tables): statements ruled by shaded bands."""

from __future__ import annotations

import pytest

from bookindex.parsing.pdf_tables import find_tables, looks_tabular, merge_label_columns

pymupdf = pytest.importorskip("pymupdf")

LABELS = ["Cash and cash equivalents", "Short-term investments", "Receivables, net", "Merchandise inventories",
          "Other current assets", "Total current assets", "Goodwill"]


def _shaded_statement() -> object:
    """A balance sheet whose every other row sits on a shaded band, shaded cell by cell."""
    doc = pymupdf.open()
    page = doc.new_page()
    for i, label in enumerate(LABELS):
        y = 120 + 20 * i
        if i % 2 == 0:
            for x0, x1 in ((60, 360), (360, 450), (450, 540)):
                page.draw_rect(pymupdf.Rect(x0, y - 13, x1, y + 5), color=None, fill=(0.85, 0.9, 0.95))
        page.insert_text((72, y), label, fontsize=9)
        page.insert_text((380, y), f"{1000 + 37 * i:,}", fontsize=9)
        page.insert_text((470, y), f"{900 + 29 * i:,}", fontsize=9)
    return doc, page


def test_the_rows_between_shaded_bands_are_kept_with_their_values() -> None:
    _doc, page = _shaded_statement()
    assert looks_tabular(page) == ("lines", None)
    tables = find_tables(page, "lines")
    assert len(tables) == 1
    rows = tables[0].rows
    assert [r[0] for r in rows] == LABELS  # the unshaded rows were lost: each band was a table of its own
    assert rows[3] == ["Merchandise inventories", "1,111", "987"]


def test_a_wrapped_row_label_is_one_label_column_and_values_stay_apart() -> None:
    rows = [["Property under capital", "and financing leases", "", "579", "", "340"],
            ["Cash and cash", "equivalents", "$", "1,980", "$", "1,101"],
            ["Goodwill", "", "", "915", "", "425"], ["Other assets", "", "", "606", "", "374"]]
    assert merge_label_columns(rows) == [["Property under capital and financing leases", "", "579", "", "340"],
                                         ["Cash and cash equivalents", "$", "1,980", "$", "1,101"],
                                         ["Goodwill", "", "915", "", "425"], ["Other assets", "", "606", "", "374"]]
    years = [["", "2019", "2018"], ["Revenue", "1,000", "900"]]
    assert merge_label_columns(years) == years
    methods = [["CODEX", "prompting", "53.8"], ["GPT-4", "prompting", "57.8"], ["SLM", "fine-tuning", "61.9"]]
    assert merge_label_columns(methods) == methods  # a column of words in every row is its own
