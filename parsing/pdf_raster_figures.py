"""Raster images that carry words in their pixels (charts, diagrams, tables saved as pictures),
read by OCR.

A chart exported as a PNG into a slide deck or a report keeps its title, its categories and its
values only in its pixels: the text layer holds none of them, so a question about the chart's
title or one of its values found nothing to retrieve. Whether an image is read follows from the
image itself, never from the document it is in:

- it is big enough to hold a line of words: an inch or more each way, as for figures drawn as
  paths (icons, logos and bullets are smaller);
- its pixels are not a photo's (`parsing.figure_kind`): what tesseract makes of a photo's texture
  is noise, and a photo's words (a sign, a label) are rarely what a question asks;
- where text-layer words lie over it (a chart's legend set as text, a caption over a photo, a
  slide's text over its background picture), those words are read as text already: the
  picture's own pixels are read instead of its box (the text drawn over it would be read
  twice), and the words of the text over it are left out of the reading (a pie whose legend is
  text keeps only its percentages);
- it is not a picture already seen on an earlier page of the document (a logo or a banner
  repeated on every page is furniture, like a running header);
- at most `MAX_PER_DOCUMENT` images are read per document (in page order), so a long filing full
  of pictures costs a bounded time (about half a second an image).

What tesseract reads is kept only when it reads words (`readable_words`): two or more tokens
that look like words (four letters or more, vowels and consonants, one case or capitalised), or
two or more values with a decimal point or a percent sign, which what it makes of a texture or a
picture's edges does not hold. No dictionary: the test
holds for names, product terms and any language written in Latin letters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from bookindex.parsing.pdf_images import OCR_DPI, ImageItem, pixmap_words
from bookindex.parsing.pdf_open import import_pymupdf

if TYPE_CHECKING:
    from pymupdf import Page, Pixmap

BBox = tuple[float, float, float, float]

MIN_SIDE = 72.0  # points (an inch) each way: a smaller picture is an icon, a bullet or a logo
MAX_PER_DOCUMENT = 40  # images read per document: 20-30 s of OCR at most
# tesseract's reading is kept when it holds this many words: four or more letters, vowels and
# consonants, in one case or capitalised. What it makes of a texture or a photo's edges is short
# tokens and mixed case ("Is gee i ae o* oy"), a chart's or a diagram's labels hold real words
MIN_WORDS = 2
_WORD = re.compile(r"^(?=.{4})(?:[A-Z]?[a-z]+|[A-Z]+)$")  # four letters or more, one case or capitalised
_EDGES = re.compile(r"^\W+|\W+$")
_VOWELS = frozenset("aeiouyAEIOUY")
# or this many values with a decimal point or a percent sign ("27.2%", "$1.5", "0.55"): a chart
# whose labels are its values; a texture's misreadings are letters and marks, not decimals
MIN_VALUES = 2
_VALUE = re.compile(r"^[$€£]?\d+(?:,\d{3})*(?:\.\d+%?|%)$")


class RasterReader:
    """Reads the raster images of one document that carry words (see the module's docstring);
    one per document: it remembers the pictures seen and counts the images read."""

    def __init__(self, max_images: int = MAX_PER_DOCUMENT) -> None:
        self.max_images = max_images
        self.read = 0  # images given to tesseract
        self.kept = 0  # images whose words were kept
        self._seen: set[str] = set()

    def wants(self, item: ImageItem) -> bool:
        """Whether `item` (its `kind` computed) is worth reading: big enough, not a photo."""
        x0, y0, x1, y1 = item.bbox
        return x1 - x0 >= MIN_SIDE and y1 - y0 >= MIN_SIDE and item.kind != "photo"

    def words(self, page: Page, item: ImageItem, lines: Iterable[tuple[BBox, str]] = ()) -> str:
        """The readable words in `item` that the text layer lacks ('' for a picture seen
        before, past the cap, or when tesseract reads no words). `lines`: the page's text-layer
        lines (box, text); with one over the picture, the picture's own pixels are read (without
        the text drawn over it) and the words of the lines over it are left out."""
        if self.read >= self.max_images:
            return ""
        x0, y0, x1, y1 = item.bbox
        over = {_core(w) for b, text in lines if x0 <= (b[0] + b[2]) / 2 <= x1 and y0 <= (b[1] + b[3]) / 2 <= y1
                for w in text.split()}
        try:
            pix = own_pixels(page, item.bbox) if over else \
                page.get_pixmap(clip=import_pymupdf().Rect(item.bbox), dpi=OCR_DPI)
            if pix is None:
                return ""
            digest = pix.digest.hex()
        except Exception:
            return ""
        if digest in self._seen:
            return ""
        self._seen.add(digest)
        self.read += 1
        read = pixmap_words(pix)
        if over:
            read = " ".join(t for t in read.split() if _core(t) not in over)
        words = readable_words(read)
        self.kept += bool(words)
        return words


def own_pixels(page: Page, bbox: BBox) -> Pixmap | None:
    """The pixels of the image shown in `bbox` of `page`, as stored (RGB or grey, no alpha),
    without what the page draws over it; None when no stored image fills that box (an inline
    image)."""
    pymupdf = import_pymupdf()
    box = pymupdf.Rect(bbox)
    best, best_iou = 0, 0.9
    for info in page.get_image_info(xrefs=True):
        shown = pymupdf.Rect(info["bbox"]) & page.rect
        union = (shown | box).get_area()
        iou = (shown & box).get_area() / union if union > 0 else 0.0
        if info.get("xref") and iou >= best_iou:
            best, best_iou = int(info["xref"]), iou
    if not best:
        return None
    pix = pymupdf.Pixmap(page.parent, best)
    if pix.alpha or pix.n - pix.alpha > 3 or (pix.colorspace is not None and pix.colorspace.n not in (1, 3)):
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix, 0)
    return pix


def _core(token: str) -> str:
    return _EDGES.sub("", token).lower()


def readable_words(text: str) -> str:
    """`text` without its tokens of stray marks ("|", "—" read from a diagram's lines), or ''
    when it holds fewer than MIN_WORDS words and fewer than MIN_VALUES values (see MIN_WORDS)."""
    tokens = [t for t in text.split() if any(c.isalnum() for c in t)]
    words = values = 0
    for token in tokens:
        core = _EDGES.sub("", token)
        if _WORD.match(core) and not _VOWELS.isdisjoint(core) and not _VOWELS.issuperset(core):
            words += 1
        elif _VALUE.match(token.strip("()[],;:")):
            values += 1
    return " ".join(tokens) if words >= MIN_WORDS or values >= MIN_VALUES else ""
