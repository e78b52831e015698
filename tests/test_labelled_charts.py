"""Labelled charts: a vector chart whose labels are real text becomes one figure read in rows."""

from __future__ import annotations

from pathlib import Path

from bookindex.parsing.pdf import parse_pdf
from bookindex.parsing.pdf_labelled_charts import labelled_charts, rows_text
from bookindex.parsing.pdf_lines import Line, page_lines
from bookindex.parsing.pdf_open import import_pymupdf

pymupdf = import_pymupdf()

# (first line of the category's name, its second line, its value): one bar each, evenly spaced
CATEGORIES = (("Trade", "agreements", 44), ("Economic", "policy", 46), ("Military", "force", 81),
              ("Federal", "courts", 48), ("Immigration", "policy", 55))


def _line(text: str, x0: float, y0: float, size: float = 9.0) -> Line:
    return Line(bbox=(x0, y0, x0 + 5.0 * len(text), y0 + size + 1), text=text, size=size, font="Helvetica",
                flags=0, bold=False, mono=False, math=0.0)


def _chart_pdf(path: Path, bars: bool = True) -> Path:
    """A page with a paragraph, then a horizontal bar chart (one path) whose category names (each
    wrapped over two lines), values and legend are real text; without `bars`, the same labels
    in a ruled frame."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 100), "Confidence in the administration is mixed on most issues, the survey finds.",
                     fontsize=11)
    shape = page.new_shape()
    for k, (_, _, value) in enumerate(CATEGORIES):
        y = 300 + 36 * k
        if bars:
            shape.draw_rect(pymupdf.Rect(250, y, 250 + 2 * value, y + 20))
        else:
            shape.draw_line((150, y - 4), (500, y - 4))
    shape.finish(color=(0.2, 0.4, 0.8), fill=(0.2, 0.4, 0.8) if bars else None)
    shape.draw_line((248, 290), (248, 480))  # the axis
    shape.finish(color=(0, 0, 0))
    shape.draw_line((140, 480), (500, 480))  # a rule under the labels and the bars: one cluster
    shape.finish(color=(0, 0, 0))
    shape.commit()
    page.insert_text((250, 285), "Very confident", fontsize=9)
    for k, (first, second, value) in enumerate(CATEGORIES):
        y = 300 + 36 * k
        page.insert_text((150, y + 9), first, fontsize=9)
        page.insert_text((150, y + 19), second, fontsize=9)
        page.insert_text((255 + 2 * value, y + 14), str(value), fontsize=9)
    doc.save(path)
    return path


def _page_blocks(page) -> list[list[Line]]:
    flags = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
    return page_lines(page.get_text("dict", flags=flags))


def test_rows_join_a_wrapped_label_with_its_values() -> None:
    lines = [_line("Some college", 100, 100), _line("or more", 100, 110), _line("85", 300, 100),
             _line("65", 300, 111), _line("Male", 100, 140), _line("84", 300, 140), _line("2015 2008", 100, 60)]
    assert rows_text(lines).splitlines() == ["2015 2008", "Some college or more 85 65", "Male 84"]


def test_capitalised_labels_stacked_a_line_apart_are_rows_of_their_own() -> None:
    lines = [_line("White", 100, 100), _line("Black", 100, 110.5), _line("Hispanic", 100, 121),
             _line("22", 300, 100), _line("13", 300, 110.5), _line("15", 300, 121)]
    assert rows_text(lines).splitlines() == ["White 22", "Black 13", "Hispanic 15"]


def test_rows_keep_labels_apart_when_they_are_not_stacked() -> None:
    # a legend's entries side by side stay one row; labels a line apart are two
    lines = [_line("Rep", 100, 100), _line("Dem", 200, 100), _line("Total", 100, 130), _line("61", 150, 130)]
    assert rows_text(lines).splitlines() == ["Rep Dem", "Total 61"]


def test_a_bar_chart_with_text_labels_is_one_figure(tmp_path: Path) -> None:
    path = _chart_pdf(tmp_path / "chart.pdf")
    with pymupdf.open(path) as doc:
        page = doc[0]
        found = labelled_charts(page, _page_blocks(page), [])
        assert len(found) == 1
        chart, took = found[0]
        assert chart.kind == "bar chart" and chart.xref == 0
        rows = chart.words.splitlines()
        assert "Trade agreements 44" in rows and "Military force 81" in rows
        assert not any("survey finds" in ln.text for ln in took)  # the paragraph stays text
        assert labelled_charts(page, _page_blocks(page), [chart.bbox]) == []  # inside a box to avoid


def test_a_framed_block_of_labels_is_no_chart(tmp_path: Path) -> None:
    path = _chart_pdf(tmp_path / "frames.pdf", bars=False)
    with pymupdf.open(path) as doc:
        page = doc[0]
        assert labelled_charts(page, _page_blocks(page), []) == []


def test_numbered_callouts_over_bars_are_no_chart(tmp_path: Path) -> None:
    # the same drawing with numbers only over it (a photo's numbered parts, their leader lines)
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    shape = page.new_shape()
    for k, (_, _, value) in enumerate(CATEGORIES):
        shape.draw_rect(pymupdf.Rect(250, 300 + 36 * k, 250 + 2 * value, 320 + 36 * k))
    shape.finish(color=(0.2, 0.4, 0.8), fill=(0.2, 0.4, 0.8))
    shape.draw_line((140, 480), (500, 480))
    shape.finish(color=(0, 0, 0))
    shape.commit()
    for k in range(len(CATEGORIES)):
        page.insert_text((200, 314 + 36 * k), str(k + 1), fontsize=9)
    doc.save(tmp_path / "callouts.pdf")
    with pymupdf.open(tmp_path / "callouts.pdf") as saved:
        assert labelled_charts(saved[0], _page_blocks(saved[0]), []) == []


def test_parsed_page_holds_the_chart_as_an_image_and_the_paragraph_as_text(tmp_path: Path) -> None:
    doc = parse_pdf(_chart_pdf(tmp_path / "chart.pdf"), ocr=False)
    images = [b for b in doc.blocks if b.type == "image"]
    assert len(images) == 1 and images[0].extra["figure_kind"] == "bar chart"
    assert "Economic policy 46" in images[0].extra["chart_text"]
    texts = " ".join(b.content for b in doc.blocks if b.type != "image")
    assert "survey finds" in texts and "agreements" not in texts  # the labels left the text blocks
    assert not any(b.type == "table" for b in doc.blocks)  # aligned values are not read as a table
    assert doc.meta["labelled_charts"] == 1
