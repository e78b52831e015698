"""Vector figures: charts drawn as paths, their labels outlined, found on the page and read by OCR."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookindex.parsing.pdf import parse_pdf
from bookindex.parsing.pdf_images import tessdata_dir
from bookindex.parsing.pdf_open import import_pymupdf
from bookindex.parsing.pdf_vector_figures import MIN_PATHS, vector_figures

pymupdf = import_pymupdf()


def _outlined_chart_page() -> bytes:
    """A one-page PDF whose bar chart (bars, axes, a title and labels) is vector paths only: the
    chart is drawn with text, then the page goes through SVG with its text as paths."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    shape = page.new_shape()
    for a, b in (((100, 500), (500, 500)), ((100, 500), (100, 250))):  # the axes
        shape.draw_line(a, b)
        shape.finish(color=(0, 0, 0))
    for k, h in enumerate((120, 180, 90, 210, 150)):  # each bar its own path, as plotting programs draw them
        shape.draw_rect(pymupdf.Rect(130 + 70 * k, 500 - h, 170 + 70 * k, 500))
        shape.finish(color=(0, 0, 0), fill=(0.2, 0.4, 0.8))
    shape.commit()
    page.insert_text((130, 235), "Quarterly revenue by region", fontsize=16)
    for k, name in enumerate(("North", "South", "East", "West", "Other")):
        page.insert_text((130 + 70 * k, 520), name, fontsize=11)
    svg = page.get_svg_image(text_as_path=True)
    outlined = pymupdf.open("svg", svg.encode())
    return outlined.convert_to_pdf()


def _page_with_chart_table_and_box(path: Path) -> Path:
    """The outlined chart, a paragraph of real text, a ruled table with real text in its cells and
    a lone framed box: only the chart is a vector figure."""
    doc = pymupdf.open("pdf", _outlined_chart_page())
    page = doc[0]
    page.insert_text((72, 100), "Revenue grew in every region this year, as the chart below shows.", fontsize=11)
    shape = page.new_shape()
    for k in range(4):  # a 3 x 3 ruled grid
        shape.draw_line((100, 580 + 30 * k), (400, 580 + 30 * k))
        shape.draw_line((100 + 100 * k, 580), (100 + 100 * k, 670))
    shape.draw_rect(pymupdf.Rect(450, 580, 560, 700))  # a frame with nothing in it
    shape.finish(color=(0, 0, 0))
    shape.commit()
    for r in range(3):
        for c in range(3):
            page.insert_text((110 + 100 * c, 600 + 30 * r), f"cell {r}{c}", fontsize=10)
    doc.save(path)
    return path


def test_only_the_outlined_chart_is_a_vector_figure(tmp_path: Path) -> None:
    path = _page_with_chart_table_and_box(tmp_path / "chart.pdf")
    with pymupdf.open(path) as doc:
        page = doc[0]
        figures = vector_figures(page, [])
        assert len(figures) == 1
        x0, y0, x1, y1 = figures[0].bbox
        assert x0 <= 101 and y0 <= 240 and x1 >= 499 and y1 >= 500  # the bars, the axes, the title
        assert y1 < 580  # not the table or the frame below it
        assert figures[0].xref == 0
        assert vector_figures(page, [figures[0].bbox]) == []  # inside a box to avoid (a table, an image)
    assert MIN_PATHS > 1


def test_parsed_page_has_the_figure_as_an_image_block(tmp_path: Path) -> None:
    path = _page_with_chart_table_and_box(tmp_path / "chart.pdf")
    doc = parse_pdf(path, ocr=False, image_dir=tmp_path / "img")
    images = [b for b in doc.blocks if b.type == "image"]
    assert len(images) == 1 and "ocr_text" not in images[0].extra
    assert Path(images[0].extra["image_path"]).exists()  # its box rendered
    assert doc.meta["vector_figures"] == 1
    assert not any(b.type == "image" for b in parse_pdf(path, images=False).blocks)


@pytest.mark.skipif(tessdata_dir() is None, reason="tesseract not installed")
def test_vector_figure_words_are_read_by_ocr(tmp_path: Path) -> None:
    doc = parse_pdf(_page_with_chart_table_and_box(tmp_path / "chart.pdf"))
    (figure,) = [b for b in doc.blocks if b.type == "image"]
    words = figure.extra["ocr_text"].lower()
    assert "revenue" in words and "region" in words and "north" in words
    # the text layer never had them: the paragraph's words are text, the chart's only in OCR
    text = " ".join(b.content for b in doc.blocks if b.type != "image").lower()
    assert "north" not in text and "revenue grew" in text
