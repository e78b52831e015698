"""Figures drawn as vector paths, and the words inside them read by OCR.

A chart exported from a plotting or layout program is often a set of vector paths whose labels
were turned into outlines: the page has no raster image and its text layer none of the chart's
words ("Automatically registering all eligible citizens to vote", "Rep/Lean Rep 93 68 38"). Such
a figure was invisible: no image node to count, caption or show, and no words to retrieve its
page by. PyMuPDF groups a page's drawings into clusters of paths that touch
(`Page.cluster_drawings`); a cluster is a figure when it is large enough to be one, holds enough
paths to be more than a box or a rule, holds no word of the text layer (a table's ruling, a
shaded panel behind text and a chart with real text labels all hold words, and their words are
read as text already) and lies inside no table or raster image. Its words come from tesseract on
a rendering of its box, the way scanned pages are read (`pdf_images.figure_words`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from bookindex.parsing.pdf_images import ImageItem
from bookindex.parsing.pdf_open import import_pymupdf

if TYPE_CHECKING:
    from pymupdf import Page, Rect

BBox = tuple[float, float, float, float]

MIN_SIDE = 72.0  # points (an inch): a smaller drawing is an icon, a bullet or a logo
MIN_PATHS = 8  # fewer paths make a box, a rule or a frame, not a figure
# a figure's outlined title, axis labels and legend are clusters of their own, set apart from its
# plot by about a line of text: word-free clusters this close to a figure are part of it
LABEL_GAP = 14.0
# a page whose text is drawn as outlines: at least this many clusters the height of a line of text
DRAWN_LINES_MIN = 10
LINE_HEIGHT = (4.0, 24.0)  # points: from small print to a heading


class PageDrawings:
    """A page's drawings as the figure finders read them, each extracted on first use and once:
    `Page.cluster_drawings` and `Page.get_drawings` walk every path of the page, and
    `drawn_text_page`, `vector_figures` and labelled charts (`pdf_labelled_charts`) all read them."""

    def __init__(self, page: Page) -> None:
        self.page = page

    @cached_property
    def clusters(self) -> list[Rect]:
        """The clusters of touching drawings, none when PyMuPDF cannot group them."""
        try:
            return list(self.page.cluster_drawings())
        except Exception:
            return []

    @cached_property
    def paths(self) -> list[tuple[Rect, int]]:
        """Each path's box and its drawing commands (one path may draw a whole series of bars)."""
        make_rect = import_pymupdf().Rect
        return [(make_rect(d["rect"]), len(d.get("items") or ())) for d in self.page.get_drawings()]


def drawn_text_page(page: Page, drawings: PageDrawings | None = None) -> bool:
    """Whether the page's text is drawn as outlines (a brochure or annual-report page exported
    with its fonts converted to curves): no text layer to read, but many clusters of paths each
    the height of a line of text and wider than tall, and none the size of a figure (a figure
    drawn as paths is `vector_figures`' job). Such a page is read by OCR, as a scan is."""
    clusters = (drawings or PageDrawings(page)).clusters
    if not clusters or any(r.width >= MIN_SIDE and r.height >= MIN_SIDE for r in clusters):
        return False
    lo, hi = LINE_HEIGHT
    return sum(1 for r in clusters if lo <= r.height <= hi and r.width >= r.height) >= DRAWN_LINES_MIN


def vector_figures(page: Page, avoid: list[BBox], drawings: PageDrawings | None = None) -> list[ImageItem]:
    """The page's vector figures (see the module's docstring), outside the boxes of `avoid`
    (tables, raster images), as image items without an xref (their box is rendered when saved).
    `drawings`: the page's, when another finder has read them already."""
    drawings = drawings or PageDrawings(page)
    clusters = drawings.clusters
    if not any(r.width >= MIN_SIDE and r.height >= MIN_SIDE for r in clusters):
        return []
    make_rect = import_pymupdf().Rect
    wordless: dict[int, bool] = {}  # per cluster: no text-layer word in it (one extraction each)

    def word_free(k: int) -> bool:
        if k not in wordless:
            wordless[k] = not page.get_text("words", clip=clusters[k])
        return wordless[k]

    clear = [j for j, c in enumerate(clusters) if not overlaps_any(c, avoid)]  # outside tables, images
    out: list[ImageItem] = []
    for k in clear:
        r = clusters[k]
        if r.width < MIN_SIDE or r.height < MIN_SIDE or not word_free(k):
            continue
        box = _with_labels(make_rect(r), [j for j in clear if j != k], clusters, word_free)
        inside = box + (-1, -1, 1, 1)  # a cluster's box is its paths' union, up to rounding
        if sum(1 for d, _ in drawings.paths if inside.contains(d)) < MIN_PATHS:
            continue
        out.append(ImageItem(bbox=(float(box.x0), float(box.y0), float(box.x1), float(box.y1)), xref=0))
    return out


def _with_labels(box: Rect, others: list[int], clusters: list[Rect], word_free: Callable[[int], bool]) -> Rect:
    """`box` grown by the word-free clusters (`others`, indices into `clusters`) within
    LABEL_GAP of it, repeatedly (a title over a legend over the plot)."""
    rest = list(others)
    grown = True
    while grown:
        grown = False
        near = box + (-LABEL_GAP, -LABEL_GAP, LABEL_GAP, LABEL_GAP)
        for j in list(rest):
            if near.intersects(clusters[j]) and word_free(j):
                box = box | clusters[j]
                rest.remove(j)
                grown = True
    return box


def overlaps_any(r: Rect | BBox, boxes: list[BBox]) -> bool:
    """True when half of `r` (a Rect or an (x0, y0, x1, y1) box) or more lies inside one of `boxes`."""
    x0, y0, x1, y1 = r if isinstance(r, tuple) else (r.x0, r.y0, r.x1, r.y1)
    area = max(1e-6, (x1 - x0) * (y1 - y0))
    for bx0, by0, bx1, by1 in boxes:
        w, h = min(x1, bx1) - max(x0, bx0), min(y1, by1) - max(y0, by0)
        if w > 0 and h > 0 and w * h >= 0.5 * area:
            return True
    return False
