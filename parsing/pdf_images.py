"""Raster images of a page (bbox, extracted file) and tesseract OCR: of pages without a text
layer (`ocr_page_dict`) and of one figure's box (`figure_words`)."""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bookindex.parsing.pdf_open import import_pymupdf

if TYPE_CHECKING:  # PyMuPDF is imported on first use (parsing.pdf_open.import_pymupdf)
    from pymupdf import Document, Page, Pixmap

BBox = tuple[float, float, float, float]
_MIN_SIDE = 24.0  # points: smaller images are icons, bullets, rules


@dataclass
class ImageItem:
    bbox: BBox
    xref: int
    image_path: str | None = None
    words: str = ""  # what OCR read inside it (`pdf_vector_figures`, `pdf_raster_figures`)
    kind: str | None = None  # the kind of figure its pixels show (`figure_kind`), once computed


def page_images(page: Page, with_xrefs: bool = False) -> list[ImageItem]:
    """Displayed images of at least _MIN_SIDE points, clipped to the page, deduplicated.

    Without `with_xrefs` the boxes come from a text page that keeps image blocks (a few ms);
    get_image_info() (needed to save the original image bytes) runs the page through another
    device and costs 10-50 ms on figure-heavy pages, so it is used only when saving images.
    """
    pr = page.rect
    seen: set[tuple] = set()
    out: list[ImageItem] = []
    try:
        if with_xrefs:
            infos = page.get_image_info(xrefs=True)
        else:
            if not page.get_images() and not _has_inline_images(page):
                return []
            tp = page.get_textpage(flags=import_pymupdf().TEXT_PRESERVE_IMAGES)
            infos = [{"bbox": b[:4], "xref": 0} for b in tp.extractBLOCKS() if b[6] == 1]
    except Exception:
        return []
    for info in infos:
        x0, y0, x1, y1 = info["bbox"]
        x0, y0, x1, y1 = max(x0, pr.x0), max(y0, pr.y0), min(x1, pr.x1), min(y1, pr.y1)
        if x1 - x0 < _MIN_SIDE or y1 - y0 < _MIN_SIDE:
            continue
        key = (info.get("xref", 0), round(x0), round(y0), round(x1), round(y1))
        if key in seen:
            continue
        seen.add(key)
        out.append(ImageItem(bbox=(x0, y0, x1, y1), xref=int(info.get("xref", 0) or 0)))
    return out


def _has_inline_images(page: Page) -> bool:
    """Inline images (BI ... ID ... EI) are not in the resources; look for the operator."""
    try:
        data = page.read_contents()
        return b"BI" in data and b" ID" in data
    except Exception:
        return False


def save_image(doc: Document, page: Page, item: ImageItem, image_dir: Path, stem: str, n: int) -> str | None:
    """Write the image's own bytes (or a rendering of its box for inline images); return the path."""
    image_dir.mkdir(parents=True, exist_ok=True)
    base = f"{stem}-p{page.number + 1:04d}-{n}"
    try:
        if item.xref:
            data = doc.extract_image(item.xref)
            if data and data.get("image"):
                path = image_dir / f"{base}.{data.get('ext', 'png')}"
                path.write_bytes(data["image"])
                return str(path)
        pix = page.get_pixmap(clip=item.bbox, dpi=150)
        path = image_dir / f"{base}.png"
        pix.save(str(path))
        return str(path)
    except Exception:
        return None


@functools.lru_cache(maxsize=1)
def tessdata_dir() -> str | None:
    """The tesseract language data folder when tesseract is installed, else None."""
    if shutil.which("tesseract") is None:
        return None
    try:
        path = import_pymupdf().get_tessdata()
    except Exception:
        path = None
    if path and Path(path).is_dir():
        return str(path)
    for cand in sorted(Path("/usr/share").glob("tesseract-ocr/*/tessdata")) + [Path("/usr/share/tessdata")]:
        if cand.is_dir():
            return str(cand)
    return None


OCR_DPI = 200  # the resolution scanned pages and figures are read at
OCR_FONT = "GlyphLessFont"  # the stand-in font MuPDF gives the text tesseract recognizes


def ocr_page_dict(page: Page, flags: int, dpi: int = OCR_DPI) -> dict | None:
    """OCR a scanned page with MuPDF's tesseract binding; a text dict like get_text('dict')."""
    tess = tessdata_dir()
    if tess is None:
        return None
    try:
        tp = page.get_textpage_ocr(flags=flags, language="eng", dpi=dpi, full=True, tessdata=tess)
        d = page.get_text("dict", textpage=tp, flags=flags)
    except Exception:
        return None
    # recognized text comes in one stand-in font flagged monospaced: that says nothing about the
    # page's typography, and would make every recognized line read as code
    for block in d.get("blocks", []):
        for line in block.get("lines", []):
            for span in line.get("spans", []):
                span["flags"] = int(span.get("flags", 0)) & ~8
    return d


def figure_words(page: Page, bbox: BBox, dpi: int = OCR_DPI) -> str:
    """The words tesseract reads in `bbox` of `page`, whitespace collapsed ('' when tesseract is
    not installed or reads nothing)."""
    try:
        pix = page.get_pixmap(clip=import_pymupdf().Rect(bbox), dpi=dpi)
    except Exception:
        return ""
    return pixmap_words(pix)


def pixmap_words(pix: Pixmap) -> str:
    """The words tesseract reads in a rendering, whitespace collapsed ('' when tesseract is not
    installed or reads nothing)."""
    tess = tessdata_dir()
    if tess is None:
        return ""
    pymupdf = import_pymupdf()
    try:
        with pymupdf.open("pdf", pix.pdfocr_tobytes(language="eng", tessdata=tess)) as scan:
            text = scan[0].get_text()
    except Exception:
        return ""
    return " ".join(text.split())
