"""Charts drawn as vector paths with their labels in the text layer, read as one figure, row by row.

A report's bar or line chart exported from a plotting program keeps its category names, values
and legend as real text over paths. Line grouping then scatters it: each value ("44", "26") and
each piece of a wrapped category name becomes a block of its own, a page holds sixty of them, and
no block says which value belongs to which category. The chart was no figure either, so "how many
bar charts" could not count it.

A cluster of paths (PyMuPDF's `Page.cluster_drawings`) is a labelled chart when it is large
enough to be a figure (`pdf_vector_figures.MIN_SIDE`), holds enough drawing commands to be more
than a box (`MIN_PATHS`; one path may draw a whole series of bars), its pixels show a chart
(`figure_kind`: bars, a plotted line or a pie; a table's ruling or a shaded text panel shows none
of them) and the text lines over it are labels, not prose (their median length is at most
MAX_LABEL_CHARS: values and category names, where a text panel's or a table's lines hold
phrases), one at least a word (a photo's numbered callouts and their leader lines have none).
The lines over it become the figure's words in rows (`rows_text`), so a category's name stands
next to its values ("Negotiate favorable trade agreements 44 26 30 54"); they leave the page's
text blocks. Found before tables, so a chart's aligned values are not read as one.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import replace
from typing import TYPE_CHECKING

from bookindex.parsing.figure_kind import figure_kind
from bookindex.parsing.pdf_images import ImageItem
from bookindex.parsing.pdf_lines import Line
from bookindex.parsing.pdf_vector_figures import LABEL_GAP, MIN_PATHS, MIN_SIDE, PageDrawings, overlaps_any

if TYPE_CHECKING:
    from pymupdf import Page, Rect

BBox = tuple[float, float, float, float]

CHART_KINDS = ("bar chart", "line chart", "pie chart")
# a chart's labels are values ("44", "12.5%") and short category names; the median line of a text
# panel or a table drawn over paths is a phrase. On the MMLongBench dev PDFs the charts' medians
# were 2 to 9 characters, text panels' and tables' 10 to 50
MAX_LABEL_CHARS = 12
_WORD = re.compile(r"[^\W\d_]{2}")  # a label's word, where a value ("67", "+14", "n/a") has none
_ALIGN = 0.35  # ems: lines this close at an edge are set flush (a box may end with a space)
MIN_LABELS = 2  # one line over a drawing is a title or a note, not a chart's labels


def labelled_charts(page: Page, blocks: list[list[Line]], avoid: list[BBox],
                    drawings: PageDrawings | None = None) -> list[tuple[ImageItem, list[Line]]]:
    """The page's labelled charts (see the module's docstring) outside the boxes of `avoid`
    (tables, raster images), each with the text lines of `blocks` (the page's blocks of lines)
    it takes: an image item without an xref whose `words` are those lines in rows and whose
    `kind` is the chart's kind. Besides the lines over it, a chart takes the lines beside it
    (`_beside`): category names set left of the plot, further than LABEL_GAP from its middle.
    `drawings`: the page's, when another finder has read them already."""
    drawings = drawings or PageDrawings(page)
    big = [r for r in drawings.clusters if r.width >= MIN_SIDE and r.height >= MIN_SIDE and not overlaps_any(r, avoid)]
    lines = [ln for blk in blocks for ln in blk]
    if not big or not lines:
        return []
    # a block of lines no longer than two labels each: a label column, not a paragraph beside a chart
    short = {id(ln) for blk in blocks if all(len(x.text.strip()) <= 2 * MAX_LABEL_CHARS for x in blk) for ln in blk}
    out: list[tuple[ImageItem, list[Line]]] = []
    taken: set[int] = set()
    for r in big:
        near = r + (-LABEL_GAP, -LABEL_GAP, LABEL_GAP, LABEL_GAP)
        over = [k for k, ln in enumerate(lines) if k not in taken and _centre_in(ln.bbox, near)]
        if len(over) < MIN_LABELS or statistics.median(len(lines[k].text.strip()) for k in over) > MAX_LABEL_CHARS:
            continue
        if not any(_WORD.search(lines[k].text) for k in over):
            continue  # numbers alone: a photo's callouts and their leader lines, not a chart
        inside = r + (-1, -1, 1, 1)  # a cluster's box is its paths' union, up to rounding
        if sum(n for box, n in drawings.paths if inside.contains(box)) < MIN_PATHS:
            continue
        kind = figure_kind(page, (float(r.x0), float(r.y0), float(r.x1), float(r.y1)))
        if kind not in CHART_KINDS:
            continue
        beside = [k for k, ln in enumerate(lines)
                  if k not in taken and k not in over and id(ln) in short and _beside(ln, r)]
        mine = [lines[k] for k in sorted([*over, *beside])]
        taken.update(over)
        taken.update(beside)
        x0 = min([r.x0, *(ln.bbox[0] for ln in mine)])
        y0 = min([r.y0, *(ln.bbox[1] for ln in mine)])
        x1 = max([r.x1, *(ln.bbox[2] for ln in mine)])
        y1 = max([r.y1, *(ln.bbox[3] for ln in mine)])
        item = ImageItem(bbox=(float(x0), float(y0), float(x1), float(y1)), xref=0, words=rows_text(mine), kind=kind)
        out.append((item, mine))
    return out


def _beside(ln: Line, r: Rect) -> bool:
    """Whether `ln` stands level with the plot `r` (its middle within the plot's height) and
    ends within LABEL_GAP of its left side or starts within LABEL_GAP of its right side."""
    mid = _middle(ln)
    if not r.y0 <= mid <= r.y1:
        return False
    return 0 <= r.x0 - ln.bbox[2] <= LABEL_GAP or 0 <= ln.bbox[0] - r.x1 <= LABEL_GAP


def rows_text(lines: list[Line]) -> str:
    """`lines` as rows, top to bottom, each read left to right. A category name wrapped over two
    or three lines is one label first (`_wrapped_labels`). Labels set at one height (the same
    category in two panels, a legend's entries; `_level`) form a row. A value ("67", "+14")
    joins the row whose labels' height holds its middle (a wrapped label's values stand beside
    any of its lines); values level with each other and with no label form a row of their own
    (a category named by a number, "50+", or an axis' ticks); a lone value joins the nearest row
    within a line's height (a second bar set just below its category's name), else stands alone."""
    items = _wrapped_labels(lines)
    rows: list[list[Line]] = []
    for ln in sorted((x for x in items if _WORD.search(x.text)), key=lambda x: x.bbox[1]):
        row = next((r for r in rows if _level(ln, r[0])), None)
        if row is None:
            rows.append([ln])
        else:
            row.append(ln)
    labelled = len(rows)
    loose: list[list[Line]] = []
    for ln in sorted((x for x in items if not _WORD.search(x.text)), key=lambda x: x.bbox[1]):
        row = next((r for r in rows[:labelled] if _distance(ln, r) == 0.0), None)
        if row is not None:
            row.append(ln)
            continue
        group = next((g for g in loose if _level(ln, g[0])), None)
        if group is None:
            loose.append([ln])
        else:
            group.append(ln)
    for group in loose:
        near = min(rows[:labelled], key=lambda r: _distance(group[0], r), default=None)
        if len(group) == 1 and near is not None and _distance(group[0], near) <= group[0].height:
            near.extend(group)
        else:
            rows.append(group)
    rows.sort(key=lambda r: min(x.bbox[1] for x in r))
    return "\n".join(" ".join(x.text.strip() for x in sorted(r, key=lambda x: x.bbox[0])) for r in rows)


def _distance(ln: Line, row: list[Line]) -> float:
    """How far `ln`'s middle lies from the height the row's labels span (0 within it)."""
    top, bottom, mid = min(x.bbox[1] for x in row), max(x.bbox[3] for x in row), _middle(ln)
    return max(0.0, top - mid, mid - bottom)


def _wrapped_labels(lines: list[Line]) -> list[Line]:
    """Lines of words (a run of two letters: not a value such as "67", "+14" or "n/a") set
    directly below one another, flush left, flush right or centred, in one size, the lower one
    not capitalised (`_continues`), joined: a category name wrapped by the chart ("Some college"
    / "or more"). A line continues the
    best-aligned line above it (two panels may repeat the same names side by side)."""
    out: list[Line] = []
    for ln in sorted(lines, key=lambda x: (x.bbox[1], x.bbox[0])):
        fits = [(err, k) for k, o in enumerate(out) if (err := _continues(o, ln)) is not None]
        if not fits:
            out.append(ln)
            continue
        k = min(fits)[1]
        above = out[k]
        out[k] = replace(above, text=f"{above.text.strip()} {ln.text.strip()}",
                         bbox=(min(above.bbox[0], ln.bbox[0]), above.bbox[1], max(above.bbox[2], ln.bbox[2]), ln.bbox[3]))
    return out


def _continues(above: Line, ln: Line) -> float | None:
    """How far `ln`, set right below `above` in its size, is from flush with it (left, right or
    centre, in points); None when it does not continue it. A line opening with a capital starts
    a name of its own: labels stacked a line apart ("White" / "Black" / "Hispanic") are
    categories, where a wrapped name goes on in lower case ("Deal effectively with the" /
    "threat of terrorism")."""
    if not (_WORD.search(above.text) and _WORD.search(ln.text)) or abs(above.size - ln.size) > 0.5:
        return None
    if ln.text.strip()[:1].isupper():
        return None
    gap = ln.bbox[1] - above.bbox[3]
    if not -0.3 * ln.height <= gap <= 0.15 * ln.height:  # line spacing; rows of categories stand further apart
        return None
    a, b = above.bbox, ln.bbox
    err = min(abs(a[0] - b[0]), abs(a[2] - b[2]), abs((a[0] + a[2]) - (b[0] + b[2])) / 2)
    return err if err <= _ALIGN * ln.size else None  # a line's box may end with a space


def _level(ln: Line, other: Line) -> bool:
    """Whether two labels stand at one height: their middles within a quarter of a line (labels
    a line apart, "Men" over "Women", are two rows even when their boxes touch)."""
    return abs(_middle(ln) - _middle(other)) <= 0.25 * min(ln.height, other.height)


def _middle(ln: Line) -> float:
    return (ln.bbox[1] + ln.bbox[3]) / 2


def _centre_in(b: BBox, r: Rect) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return bool(r.x0 <= cx <= r.x1 and r.y0 <= cy <= r.y1)
