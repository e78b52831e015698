"""The kind of a figure (photo, pie, bar or line chart) told from its pixels at parse time, and
counts of one kind of figure ("How many pie charts ...?") made from it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from bookindex.core.model import Block, build_tree
from bookindex.operators.context import IndexContext, MemoryIndex
from bookindex.operators.labels import asked_figure_kind
from bookindex.parsing.figure_kind import figure_kind, kind_of_pixels
from bookindex.parsing.pdf import parse_pdf
from bookindex.parsing.pdf_open import import_pymupdf
from bookindex.retrieval import ask

pymupdf = import_pymupdf()

PIE = pymupdf.Rect(60, 60, 280, 260)
BARS = pymupdf.Rect(320, 60, 560, 260)
LINES = pymupdf.Rect(60, 320, 280, 520)
PHOTO = pymupdf.Rect(320, 320, 560, 500)
TEXT = pymupdf.Rect(60, 560, 560, 700)
COLOURS = ((0.26, 0.52, 0.96), (0.92, 0.26, 0.21), (0.98, 0.74, 0.02), (0.20, 0.66, 0.33))


def _pie(page, box: pymupdf.Rect) -> None:
    """Four wedges around one centre, each its own filled path, labelled beside the disc."""
    centre = pymupdf.Point(box.x0 + 80, (box.y0 + box.y1) / 2)
    start = pymupdf.Point(centre.x + 70, centre.y)
    shape = page.new_shape()
    for sweep, colour in zip((140, 100, 80, 40), COLOURS):
        shape.draw_sector(centre, start, sweep)
        shape.finish(fill=colour, color=colour, closePath=False)
        a = math.atan2(start.y - centre.y, start.x - centre.x) - math.radians(sweep)  # y grows down
        start = pymupdf.Point(centre.x + 70 * math.cos(a), centre.y + 70 * math.sin(a))
    shape.commit()
    page.insert_text((box.x0 + 160, box.y0 + 40), "Both right 40%", fontsize=8)


def _bars(page, box: pymupdf.Rect) -> None:
    shape = page.new_shape()
    shape.draw_line((box.x0 + 10, box.y1 - 20), (box.x1 - 10, box.y1 - 20))
    shape.finish(color=(0, 0, 0), width=0.5)
    for k, h in enumerate((60, 140, 95, 170, 120)):
        shape.draw_rect(pymupdf.Rect(box.x0 + 20 + 42 * k, box.y1 - 20 - h, box.x0 + 50 + 42 * k, box.y1 - 20))
        shape.finish(fill=COLOURS[0], color=None)
    shape.commit()
    page.insert_text((box.x0 + 20, box.y1 - 5), "2019 2020 2021 2022 2023", fontsize=8)


def _lines(page, box: pymupdf.Rect) -> None:
    """Two series over gridlines: polylines that rise and fall."""
    shape = page.new_shape()
    for k in range(5):
        y = box.y0 + 20 + 35 * k
        shape.draw_line((box.x0 + 20, y), (box.x1 - 10, y))
    shape.finish(color=(0.8, 0.8, 0.8), width=0.5)
    for series, colour in (((120, 90, 110, 60, 80, 40), COLOURS[0]), ((150, 140, 100, 120, 70, 90), COLOURS[1])):
        pts = [pymupdf.Point(box.x0 + 20 + 36 * i, box.y0 + v) for i, v in enumerate(series)]
        shape.draw_polyline(pts)
        shape.finish(color=colour, width=1.5, closePath=False)
    shape.commit()


def _photo(page, box: pymupdf.Rect, seed: int = 1) -> None:
    """A photograph stand-in: smooth colour gradients under sensor noise, as a raster image."""
    h, w = 180, 240
    yy, xx = np.mgrid[0:h, 0:w].astype(float)
    rng = np.random.default_rng(seed)
    rgb = np.stack([120 + 90 * np.sin(xx / 37 + yy / 53), 110 + 80 * np.cos(yy / 29), 90 + 60 * np.sin((xx + yy) / 41)],
                   axis=2) + rng.normal(0, 7, (h, w, 3))
    pix = pymupdf.Pixmap(pymupdf.csRGB, w, h, np.clip(rgb, 0, 255).astype(np.uint8).tobytes(), False)
    page.insert_image(box, pixmap=pix)


def _figures_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    _pie(page, PIE)
    _bars(page, BARS)
    _lines(page, LINES)
    _photo(page, PHOTO)
    page.insert_textbox(TEXT, "A paragraph of running text set in one colour. " * 12, fontsize=10)
    doc.save(path)
    return path


def test_each_figure_kind_is_told_from_the_drawing(tmp_path: Path) -> None:
    with pymupdf.open(_figures_pdf(tmp_path / "figs.pdf")) as doc:
        page = doc[0]
        assert figure_kind(page, tuple(PIE)) == "pie chart"
        assert figure_kind(page, tuple(BARS)) == "bar chart"
        assert figure_kind(page, tuple(LINES)) == "line chart"
        assert figure_kind(page, tuple(PHOTO)) == "photo"
        assert figure_kind(page, tuple(TEXT)) is None  # text is no kind of figure


def test_flat_colour_and_a_single_box_have_no_kind() -> None:
    blank = np.full((120, 160, 3), 255, dtype=np.uint8)
    assert kind_of_pixels(blank) is None
    box = blank.copy()
    box[30:90, 40:120] = (60, 120, 200)  # one rectangle: no baseline of bars, no disc
    assert kind_of_pixels(box) is None
    disc = blank.copy()
    yy, xx = np.mgrid[0:120, 0:160]
    disc[(yy - 60) ** 2 + (xx - 80) ** 2 <= 45 ** 2] = (60, 120, 200)  # a one-colour disc: a dot, not a pie
    assert kind_of_pixels(disc) is None


def test_the_parser_stores_the_kind_of_raster_images(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    _photo(page, PHOTO)
    page.insert_text((72, 72), "Our head office, seen from the street.", fontsize=11)
    doc.save(tmp_path / "photo.pdf")
    parsed = parse_pdf(tmp_path / "photo.pdf")
    images = [b for b in parsed.blocks if b.type == "image"]
    assert [b.extra.get("figure_kind") for b in images] == ["photo"]
    assert parsed.meta["figure_kinds"] == 1


def _kinds_context() -> IndexContext:
    """A report of four figures: Figure 1 is a pie beside a second, uncaptioned pie; Figure 2 a
    bar chart; one photo of no caption; and a figure whose kind the parser could not tell."""
    def img(page: int, x0: float, kind: str | None, caption: str = "") -> Block:
        extra: dict = {"caption": caption}
        if kind:
            extra["figure_kind"] = kind
        return Block("image", caption, page, (x0, 100, x0 + 200, 300), extra=extra)

    blocks = [Block("title", "1 Results", 0, (50, 20, 400, 40), level=1),
              Block("text", "We surveyed members about their finances and their views.", 0, (50, 50, 500, 80)),
              img(1, 50, "pie chart", "Figure 1: Left: answers in 2019. Right: answers in 2020."),
              img(1, 300, "pie chart"),
              img(2, 50, "bar chart", "Figure 2: Income by region"),
              img(3, 50, "photo"),
              img(3, 300, None, "Figure 3: The survey form")]
    # the report's banner, the same picture at the top of every page: no figure, of no kind
    blocks += [Block("image", "", p, (0, 0, 600, 40), extra={"caption": ""}) for p in range(4)]
    tree = build_tree("kinds", "report.pdf", blocks, {"pages": 4, "page_sizes": [[600, 800]] * 4})
    return IndexContext(index=MemoryIndex(tree=tree))


def test_the_asked_kind_comes_from_the_unit_and_its_qualifiers() -> None:
    assert asked_figure_kind("charts", ["pie"]) == "pie chart"
    assert asked_figure_kind("plots", ["line"]) == "line chart"
    assert asked_figure_kind("graphs", ["bar"]) == "bar chart"
    assert asked_figure_kind("photos", ["exterior"]) == "photo"
    assert asked_figure_kind("photographs", []) == "photo"
    assert asked_figure_kind("figures", []) is None
    assert asked_figure_kind("tables", ["pie"]) is None  # a table is not a figure


def test_a_count_of_one_kind_counts_the_figures_of_that_kind_each_cited() -> None:
    a = ask(_kinds_context(), "How many pie charts are in the report?")
    assert a.structural["count"] == 2 and a.structural["counted"] == "figure kind (pie chart)"
    assert [x["page"] for x in a.structural["items"]] == [2, 2]
    assert a.answer.startswith("2 (Figure 1 (pie chart), p. 2; Pie chart, p. 2)")
    assert "1 other figure of no known kind is not counted" in a.answer


def test_photos_are_counted_by_kind_and_an_unchecked_qualifier_is_named() -> None:
    a = ask(_kinds_context(), "How many exterior photos does the report provide?")
    assert a.structural["count"] == 1 and a.structural["items"][0]["page"] == 4
    assert "'exterior' is not checked" in a.answer


def test_a_kind_no_figure_has_falls_back_to_the_labelled_parts() -> None:
    a = ask(_kinds_context(), "How many line charts are in the report?")
    assert a.structural["counted"] == "document labels" and a.structural["count"] == 3
    assert "every one is counted" in a.answer


def test_a_picture_repeated_on_every_page_is_not_counted() -> None:
    blocks = [Block("text", "Our offices and the people in them.", 0, (50, 50, 500, 80))]
    blocks += [Block("image", "", p, (0, 0, 600, 40), extra={"caption": ""}) for p in range(3)]  # a banner
    blocks += [Block("image", "", 1, (50, 100, 300, 300), extra={"caption": ""}),
               Block("image", "", 2, (50, 100, 300, 300), extra={"caption": ""})]
    tree = build_tree("banner", "offices.pdf", blocks, {"pages": 3, "page_sizes": [[600, 800]] * 3})
    a = ask(IndexContext(index=MemoryIndex(tree=tree)), "How many images are in the report?")
    assert a.structural["count"] == 2 and [x["page"] for x in a.structural["items"]] == [2, 3]


def test_a_kind_no_unlabelled_figure_has_counts_them_all_and_says_so() -> None:
    blocks = [Block("text", "The restrictions and the public's views of them.", 0, (50, 50, 500, 80))]
    blocks += [Block("image", "", p, (50, 100, 300, 300), extra={"caption": "", "figure_kind": "bar chart"})
               for p in range(2)]
    tree = build_tree("lines", "report.pdf", blocks, {"pages": 2, "page_sizes": [[600, 800]] * 2})
    a = ask(IndexContext(index=MemoryIndex(tree=tree)), "How many line plots are in this report?")
    assert a.structural["count"] == 2
    assert a.answer.endswith("Note: no figure was told to be a line chart from its pixels: every one is counted")
