"""Raster figures: the words inside a chart saved as a picture are read by OCR; a photo's, an
icon's, a picture under text-layer words and a repeated picture's are not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bookindex.parsing.figure_kind import figure_kind
from bookindex.parsing.pdf import parse_pdf
from bookindex.parsing.pdf_images import ImageItem, figure_words, tessdata_dir
from bookindex.parsing.pdf_open import import_pymupdf
from bookindex.parsing.pdf_raster_figures import MIN_SIDE, RasterReader, readable_words

pymupdf = import_pymupdf()
needs_tesseract = pytest.mark.skipif(tessdata_dir() is None, reason="tesseract not installed")

CHART = (72, 120, 372, 345)
PHOTO = (72, 420, 372, 645)


def _chart_png() -> bytes:
    """A bar chart with a title and category labels, rendered to a PNG: its words are pixels."""
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    shape = page.new_shape()
    shape.draw_line((40, 250), (380, 250))
    shape.draw_line((40, 250), (40, 60))
    shape.finish(color=(0, 0, 0))
    for k, h in enumerate((120, 170, 90, 150)):
        shape.draw_rect(pymupdf.Rect(70 + 75 * k, 250 - h, 110 + 75 * k, 250))
        shape.finish(color=(0, 0, 0), fill=(0.2, 0.4, 0.8))
    shape.commit()
    page.insert_text((60, 40), "Harvest yield by orchard", fontsize=18)
    for k, name in enumerate(("Maple", "Cedar", "Willow", "Birch")):
        page.insert_text((68 + 75 * k, 270), name, fontsize=12)
    return page.get_pixmap(dpi=150).tobytes("png")


def _photo_png() -> bytes:
    """A photo-like picture (smooth colour gradients and grain) with a sign's words on it."""
    rng = np.random.default_rng(7)
    h, w = 300, 400
    yy, xx = np.mgrid[0:h, 0:w] / 15.0
    base = np.stack([np.sin(xx + c) * np.cos(yy * 0.7 + 2 * c) for c in (0.0, 1.3, 2.6)], axis=2)
    img = ((base + 1) * 110 + rng.normal(0, 12, (h, w, 3))).clip(0, 255).astype(np.uint8)
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    page.insert_image(page.rect, pixmap=pymupdf.Pixmap(pymupdf.csRGB, w, h, img.tobytes(), False))
    page.draw_rect(pymupdf.Rect(50, 122, 350, 160), color=None, fill=(1, 1, 1))  # a sign in the picture
    page.insert_text((60, 150), "Harbour lighthouse keeper", fontsize=24)
    return page.get_pixmap(dpi=150).tobytes("png")


def _report(path: Path, pages: int = 1) -> Path:
    """Pages with a line of text, the chart picture and the photo, the same pictures on each."""
    doc = pymupdf.open()
    chart, photo = _chart_png(), _photo_png()
    for _ in range(pages):
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 80), "The orchards had a good year, as the chart shows.", fontsize=11)
        page.insert_image(pymupdf.Rect(CHART), stream=chart)
        page.insert_image(pymupdf.Rect(PHOTO), stream=photo)
    doc.save(path)
    return path


@needs_tesseract
def test_the_test_pictures_are_what_they_claim(tmp_path: Path) -> None:
    """The photo's words are legible to tesseract: only its kind keeps them out."""
    with pymupdf.open(_report(tmp_path / "r.pdf")) as doc:
        page = doc[0]
        assert figure_kind(page, CHART) == "bar chart"
        assert figure_kind(page, PHOTO) == "photo"
        assert "keeper" in figure_words(page, PHOTO).lower()


@needs_tesseract
def test_a_raster_charts_words_reach_ocr_text_and_a_photos_do_not(tmp_path: Path) -> None:
    doc = parse_pdf(_report(tmp_path / "r.pdf"))
    chart, photo = sorted((b for b in doc.blocks if b.type == "image"), key=lambda b: b.bbox[1])
    words = chart.extra["ocr_text"].lower()
    assert "harvest" in words and "orchard" in words and "maple" in words and "willow" in words
    assert photo.extra["figure_kind"] == "photo" and "ocr_text" not in photo.extra
    text = " ".join(b.content for b in doc.blocks if b.type != "image").lower()
    assert "orchards had a good year" in text and "maple" not in text  # the text layer never had them
    assert doc.meta["raster_ocr"] == {"read": 1, "kept": 1}


@needs_tesseract
def test_a_picture_repeated_on_later_pages_is_read_once(tmp_path: Path) -> None:
    doc = parse_pdf(_report(tmp_path / "r.pdf", pages=3))
    charts = [b for b in doc.blocks if b.type == "image" and b.extra.get("figure_kind") == "bar chart"]
    assert [b.page_idx for b in charts] == [0, 1, 2]
    assert ["ocr_text" in b.extra for b in charts] == [True, False, False]


def test_ocr_off_reads_no_picture(tmp_path: Path) -> None:
    doc = parse_pdf(_report(tmp_path / "r.pdf"), ocr=False)
    images = [b for b in doc.blocks if b.type == "image"]
    assert len(images) == 2 and not any("ocr_text" in b.extra for b in images)
    assert doc.meta["raster_ocr"] is None


def test_which_pictures_are_worth_reading() -> None:
    reader = RasterReader()
    chart = ImageItem(bbox=CHART, xref=0, kind="bar chart")
    assert reader.wants(chart, [(72, 80, 300, 92)])  # text above the picture, not over it
    assert reader.wants(ImageItem(bbox=CHART, xref=0, kind=None), [])  # a diagram: no kind
    assert not reader.wants(ImageItem(bbox=CHART, xref=0, kind="photo"), [])
    assert not reader.wants(chart, [(100, 200, 200, 212)])  # a text-layer label over it: read as text
    icon = ImageItem(bbox=(72, 120, 72 + MIN_SIDE - 1, 300), xref=0, kind=None)
    assert not reader.wants(icon, [])


@needs_tesseract
def test_no_picture_is_read_past_the_cap(tmp_path: Path) -> None:
    with pymupdf.open(_report(tmp_path / "r.pdf")) as doc:
        capped = RasterReader(max_images=0)
        assert capped.words(doc[0], ImageItem(bbox=CHART, xref=0)) == "" and capped.read == 0
        reader = RasterReader(max_images=1)
        assert "maple" in reader.words(doc[0], ImageItem(bbox=CHART, xref=0)).lower()
        assert reader.read == 1 and reader.kept == 1


def test_only_readings_that_hold_words_are_kept() -> None:
    assert readable_words("x, Py = Is gee i ae o* oy\" « a a ees , . ol a Wa ae 2") == ""  # a texture
    assert readable_words("OOOO ' a mae") == ""
    assert readable_words("Quarterly revenue | — 4.8% 2019 ,") == "Quarterly revenue 4.8% 2019"
    assert readable_words("GPT-4 PaLM-2L MMLU Physics TimeQA") == "GPT-4 PaLM-2L MMLU Physics TimeQA"
    assert readable_words("") == ""
