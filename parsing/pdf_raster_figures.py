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
- no text-layer word lies over it: labels set as text over a picture are read as text already,
  and a slide's background picture lies under the slide's own text;
- it is not a picture already seen on an earlier page of the document (a logo or a banner
  repeated on every page is furniture, like a running header);
- at most `MAX_PER_DOCUMENT` images are read per document (in page order), so a long filing full
  of pictures costs a bounded time (about half a second an image).

What tesseract reads is kept only when it reads words (`readable_words`): two or more tokens
that look like words (four letters or more, vowels and consonants, one case or capitalised),
which what it makes of a texture or a picture's edges does not hold. No dictionary: the test
holds for names, product terms and any language written in Latin letters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from bookindex.parsing.pdf_images import OCR_DPI, ImageItem, pixmap_words
from bookindex.parsing.pdf_open import import_pymupdf

if TYPE_CHECKING:
    from pymupdf import Page

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


class RasterReader:
    """Reads the raster images of one document that carry words (see the module's docstring);
    one per document: it remembers the pictures seen and counts the images read."""

    def __init__(self, max_images: int = MAX_PER_DOCUMENT) -> None:
        self.max_images = max_images
        self.read = 0  # images given to tesseract
        self.kept = 0  # images whose words were kept
        self._seen: set[str] = set()

    def wants(self, item: ImageItem, text_boxes: Iterable[BBox]) -> bool:
        """Whether `item` (its `kind` computed) is worth reading: big enough, not a photo, no
        text-layer line over it (`text_boxes`: the boxes of the page's text-layer lines)."""
        x0, y0, x1, y1 = item.bbox
        if x1 - x0 < MIN_SIDE or y1 - y0 < MIN_SIDE or item.kind == "photo":
            return False
        return not any(x0 <= (b[0] + b[2]) / 2 <= x1 and y0 <= (b[1] + b[3]) / 2 <= y1 for b in text_boxes)

    def words(self, page: Page, item: ImageItem) -> str:
        """The readable words in `item`'s box ('' for a picture seen before, past the cap, or
        when tesseract reads no words)."""
        if self.read >= self.max_images:
            return ""
        try:
            pix = page.get_pixmap(clip=import_pymupdf().Rect(item.bbox), dpi=OCR_DPI)
            digest = pix.digest.hex()
        except Exception:
            return ""
        if digest in self._seen:
            return ""
        self._seen.add(digest)
        self.read += 1
        words = readable_words(pixmap_words(pix))
        self.kept += bool(words)
        return words


def readable_words(text: str) -> str:
    """`text` without its tokens of stray marks ("|", "—" read from a diagram's lines), or ''
    when it holds fewer than MIN_WORDS words (see MIN_WORDS)."""
    tokens = [t for t in text.split() if any(c.isalnum() for c in t)]
    words = 0
    for token in tokens:
        core = _EDGES.sub("", token)
        if _WORD.match(core) and not _VOWELS.isdisjoint(core) and not _VOWELS.issuperset(core):
            words += 1
    return " ".join(tokens) if words >= MIN_WORDS else ""
