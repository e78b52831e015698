"""What kind of picture a figure is (photo, pie chart, bar chart, line chart), from its pixels.

"How many pie charts / line plots / photos are there?" counts one kind of figure, and a caption
rarely says the kind ("Figure 4: Error analysis ..." is a pie). The kind follows from the figure
itself: its box is rendered small (raster images and vector drawings alike, the way a reader
sees them) and read with a few measures of the pixels:

- a photo has many colours and smooth gradients: few of its pixels sit in large flat areas and
  many neighbouring pixels differ by a little (a chart or diagram is flat colour with sharp edges);
- a chart is drawn on a plain ground (its background colour covers a good share of it) and is no
  smaller than about an inch (a smaller picture is an icon or a symbol);
- a pie chart's largest drawn shape is a disc (it fills the circle its box holds) made of two or
  more flat colours (the wedges) that meet at its centre and run out to its rim (a shaded wheel
  has no flat colour; a plug's pins do not reach the rim);
- a bar chart holds three or more solid rectangles of one colour and thickness standing on one
  baseline (bottoms, tops, left or right edges aligned), in evenly spaced slots, with different
  lengths (table shading has equal lengths, a QR code no regular row);
- a line chart holds a long thin stroke of one hue that crosses each column once, rises or falls
  across the plot and bends (gridlines and axes stay on one row, a leader line is straight, a row
  of text crosses a column several times).

Anything else, or a figure that passes two tests, is left without a kind (None): a count by kind
then says the kind is unknown rather than guess. The thresholds were checked by eye on every
picture of the MMLongBench dev sets (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from scipy import ndimage

from bookindex.parsing.pdf_open import import_pymupdf

if TYPE_CHECKING:
    from pymupdf import Page

BBox = tuple[float, float, float, float]

RENDER_SIDE = 200  # pixels on the rendering's longer side: enough for bars and wedges, a few ms
_STEP = 32  # colour quantisation step (8 levels a channel): JPEG noise stays in its bin
_INK = 48  # a pixel this far (max channel) from the background colour is drawn
# photo: little flat area, many small steps between neighbours, colour spread over many bins
_PHOTO_MID, _PHOTO_FLAT, _PHOTO_TOP = 0.25, 0.55, 0.75
_DISC_IOU = 0.88  # a pie's shape against the disc inscribed in its box
_MIN_DISC = 0.25  # a pie's diameter, as a share of the figure's shorter side (smaller: a logo, a dot)
_WEDGE = 0.08  # a wedge's share of the disc's pixels
_MIN_BARS = 3
_MIN_SIDE = 54.0  # points: a smaller picture is an icon, a symbol or a logo, not a chart
_CANVAS = 0.3  # a chart is drawn on a plain ground: its background colour covers this share or more
_WEDGES_COVER = 0.85  # a pie is flat colour: its wedge colours cover this share of the disc
_FLAT_WEDGE = 3  # a wedge's pixels stay this close (median deviation, per channel) to its colour
_LINE_RUNS = 1.3  # runs of pixels a plotted line makes down a column, on average
_LINE_RISE = 3.0  # pixels a plotted line moves up or down along the plot (a rule moves none)
_LINE_BEND = 1.2  # pixels a plotted series departs from a straight line (a leader line: none)


def figure_kind(page: Page, bbox: BBox) -> str | None:
    """The kind of the figure in `bbox` of `page` (see the module's docstring), None when unsure
    or when the box cannot be rendered."""
    pymupdf = import_pymupdf()
    r = pymupdf.Rect(bbox) & page.rect
    side = max(r.width, r.height)
    if r.is_empty or min(r.width, r.height) < _MIN_SIDE:
        return None
    scale = RENDER_SIDE / side
    try:
        pix = page.get_pixmap(clip=r, matrix=pymupdf.Matrix(scale, scale), alpha=False, colorspace=pymupdf.csRGB)
    except Exception:
        return None
    rgb = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)[:, :, :3]
    return kind_of_pixels(rgb)


def kind_of_pixels(rgb: np.ndarray) -> str | None:
    """The kind of a figure from its RGB pixels (height x width x 3, uint8), None when unsure."""
    h, w = rgb.shape[:2]
    if h < 16 or w < 16:
        return None
    q = rgb // _STEP
    bins = (q[..., 0].astype(np.int32) * 64 + q[..., 1] * 8 + q[..., 2])
    if _is_photo(rgb, bins):
        return "photo"
    border = np.concatenate([bins[0], bins[-1], bins[:, 0], bins[:, -1]])
    bg = int(np.bincount(border).argmax())
    bg_rgb = np.array([bg // 64, (bg // 8) % 8, bg % 8]) * _STEP + _STEP // 2
    if float((bins == bg).mean()) < _CANVAS:
        return None  # no plain ground: a picture, a screenshot, a textured page
    ink = np.abs(rgb.astype(np.int32) - bg_rgb).max(axis=2) > _INK
    found = [kind for kind, hit in (("pie chart", _is_pie(ink, bins, rgb)), ("bar chart", _has_bars(ink, bins)),
                                    ("line chart", _has_line(ink, rgb))) if hit]
    return found[0] if len(found) == 1 else None


def _is_photo(rgb: np.ndarray, bins: np.ndarray) -> bool:
    lum = rgb.astype(np.int32).sum(axis=2) // 3
    dx = np.abs(np.diff(lum, axis=1))
    mid = float(((dx >= 4) & (dx <= 24)).mean())  # the small steps of a gradient
    flat = float((dx < 2).mean())
    counts = np.sort(np.bincount(bins.ravel()))[::-1]
    top = float(counts[:6].sum()) / bins.size  # the share of the six commonest colours
    return mid >= _PHOTO_MID and flat <= _PHOTO_FLAT and top <= _PHOTO_TOP


def _is_pie(ink: np.ndarray, bins: np.ndarray, rgb: np.ndarray) -> bool:
    """The largest drawn shape is a disc of two or more colours (thin strokes, the leader lines of
    its labels, are opened away first)."""
    solid = ndimage.binary_opening(ink, structure=np.ones((3, 3), dtype=bool), iterations=2)
    lab, n = ndimage.label(solid, structure=np.ones((3, 3)))
    if n == 0:
        return False
    sizes = np.bincount(lab.ravel())[1:]
    k = int(sizes.argmax()) + 1
    box = ndimage.find_objects(lab)[k - 1]
    if box is None:
        return False
    ys, xs = box
    bh, bw = ys.stop - ys.start, xs.stop - xs.start
    if not (0.85 <= bh / bw <= 1.15) or min(bh, bw) < _MIN_DISC * min(solid.shape):
        return False
    shape = ndimage.binary_fill_holes(lab[box] == k)  # labels written on a wedge are part of it
    disc = _disc(bh, bw, 1.0)
    iou = float((shape & disc).sum()) / max(1, int((shape | disc).sum()))
    if iou < _DISC_IOU:
        return False
    inside = bins[box][shape]
    shares = np.bincount(inside) / max(1, inside.size)
    wedges = np.flatnonzero(shares >= _WEDGE)
    if wedges.size < 2 or float(shares[wedges].sum()) < _WEDGES_COVER:
        return False  # one colour is a dot or a ring; many colours a photo of a round thing
    # a wedge is filled with one colour; a shaded wheel or knob spreads over a bin's whole range
    px = rgb[box][shape].astype(np.int32)
    flat = []
    for wedge in wedges:
        sel = px[inside == wedge]
        if int(np.median(np.abs(sel - np.median(sel, axis=0)), axis=0).max()) <= _FLAT_WEDGE:
            flat.append(int(wedge))
    wedges = np.array(flat, dtype=np.int64)
    if wedges.size < 2:
        return False
    # the wedges meet at the centre: two or more of their colours around it
    cy, cx, rad = bh // 2, bw // 2, max(2, min(bh, bw) // 7)
    centre = bins[box][cy - rad: cy + rad + 1, cx - rad: cx + rad + 1].ravel()
    near = np.bincount(centre, minlength=shares.size) / max(1, centre.size)
    if int((near[wedges] >= 0.1).sum()) < 2:
        return False
    # and run out to the rim: a wheel's spokes end in its tyre, a plug's pins sit inside its face
    rim = shape & ~_disc(bh, bw, 0.8)
    at_rim = np.bincount(bins[box][rim], minlength=shares.size) / max(1, int(rim.sum()))
    return int((at_rim[wedges] >= 0.05).sum()) >= 2


def _disc(bh: int, bw: int, fraction: float) -> np.ndarray:
    """The pixels of a bh x bw box inside the ellipse of `fraction` of its half-axes."""
    yy, xx = np.mgrid[0:bh, 0:bw]
    return ((yy + 0.5 - bh / 2) / (fraction * bh / 2)) ** 2 + ((xx + 0.5 - bw / 2) / (fraction * bw / 2)) ** 2 <= 1.0


def _colour_parts(ink: np.ndarray, bins: np.ndarray, top: int = 6) -> list[tuple[int, tuple[slice, slice], int]]:
    """The connected shapes of each of the `top` commonest drawn colours: (colour, box, pixels)."""
    drawn = bins[ink]
    if drawn.size == 0:
        return []
    counts = np.bincount(drawn)
    out: list[tuple[int, tuple[slice, slice], int]] = []
    for colour in np.argsort(counts)[::-1][:top]:
        if counts[colour] == 0:
            break
        lab, n = ndimage.label(ink & (bins == colour))
        sizes = np.bincount(lab.ravel())
        for j, box in enumerate(ndimage.find_objects(lab), 1):
            if box is not None:
                out.append((int(colour), (box[0], box[1]), int(sizes[j])))
    return out


def _has_bars(ink: np.ndarray, bins: np.ndarray) -> bool:
    """Three or more solid rectangles of one colour and one thickness standing on one baseline
    (their bottoms, tops, left or right edges aligned), in evenly spaced slots, of
    different lengths: bars. Table shading has equal lengths, a QR code or an icon no regular
    stride of equal-thickness blocks."""
    rects: dict[int, list[tuple[int, int, int, int]]] = {}
    for colour, (ys, xs), size in _colour_parts(ink, bins):
        bh, bw = ys.stop - ys.start, xs.stop - xs.start
        if min(bh, bw) >= 3 and size >= 0.9 * bh * bw:
            rects.setdefault(colour, []).append((xs.start, ys.start, xs.stop, ys.stop))
    for boxes in rects.values():
        # (edge the bars stand on, their position across it, their thickness, their length)
        for edge, pos, thick, length in ((3, 0, lambda b: b[2] - b[0], lambda b: b[3] - b[1]),
                                         (1, 0, lambda b: b[2] - b[0], lambda b: b[3] - b[1]),
                                         (0, 1, lambda b: b[3] - b[1], lambda b: b[2] - b[0]),
                                         (2, 1, lambda b: b[3] - b[1], lambda b: b[2] - b[0])):
            groups: dict[tuple[int, int], list[tuple[int, int, int, int]]] = {}
            for b in boxes:
                groups.setdefault((b[edge] // 2, thick(b) // 2), []).append(b)
            for group in groups.values():
                # the bars are most of their colour's blocks (a QR code's are a few of many)
                if len(group) >= max(_MIN_BARS, len(boxes) / 2) \
                        and _a_row_of_bars(sorted(group, key=lambda b: b[pos]), pos, length):
                    return True
    return False


def _a_row_of_bars(group: list[tuple[int, int, int, int]], pos: int,
                   length: Callable[[tuple[int, int, int, int]], int]) -> bool:
    """Bars (sorted along the baseline) of two or more lengths, with a gap between neighbours,
    standing in evenly spaced slots."""
    starts = [b[pos] for b in group]
    ends = [b[pos + 2] for b in group]
    if any(starts[i + 1] - ends[i] < 1 for i in range(len(group) - 1)):
        return False  # touching blocks: cells, a pattern, not bars
    # bars stand in evenly spaced slots: every gap is a whole number of the smallest one (a slot
    # whose bar is too short to see at this size leaves a double gap)
    strides = np.diff(starts).astype(float)
    base = float(strides.min())
    if base < 2:
        return False
    ratios = strides / base
    if float(np.abs(ratios - np.round(ratios)).max() * base) > max(2.0, 0.15 * base):
        return False
    lengths = [length(b) for b in group]  # values differ: equal blocks are a pattern (a plug's pins)
    return max(lengths) - min(lengths) >= max(3, 0.1 * max(lengths))


def _has_line(ink: np.ndarray, rgb: np.ndarray) -> bool:
    """A thin stroke of one hue across 40% of the plot's width that is not a straight rule
    (gridlines and axes are one or two pixels tall at this size; a plotted series has markers or
    slopes). Hue, not the quantised colour: a thin line's antialiased pixels are its colour
    blended with the background, and keep its hue."""
    h, w = ink.shape
    hues = _hue_classes(rgb, ink)
    for hue in np.unique(hues[hues >= 0]):
        lab, _ = ndimage.label(hues == hue, structure=np.ones((3, 3)))
        sizes = np.bincount(lab.ravel())
        for j, box in enumerate(ndimage.find_objects(lab), 1):
            if box is None:
                continue
            ys, xs = box
            bh, bw = ys.stop - ys.start, xs.stop - xs.start
            if bw >= 0.4 * w and bh >= 4 and sizes[j] <= 4 * bw and sizes[j] <= 0.5 * bh * bw \
                    and _plotted(lab[box] == j):
                return True
    return False


def _plotted(shape: np.ndarray) -> bool:
    """A plotted line crosses each column once (one run of pixels down a column) and moves up or
    down along the plot. A row of text whose letters touch at this size crosses most columns two
    or three times (the bowls and bars of its letters); axes and gridlines stay on one row."""
    starts = shape[0].astype(np.int32) + (shape[1:] & ~shape[:-1]).sum(axis=0)
    cols = np.flatnonzero(starts > 0)
    if cols.size == 0 or float(starts[cols].mean()) > _LINE_RUNS:
        return False
    rows = np.arange(shape.shape[0])[:, None]
    centre = (shape * rows).sum(axis=0)[cols] / shape.sum(axis=0)[cols]
    low, high = np.percentile(centre, [10, 90])  # a few columns of ticks or bar edges aside
    if float(high - low) < _LINE_RISE:
        return False
    fit = np.polyval(np.polyfit(cols, centre, 1), cols)  # a leader line or an arrow is straight
    return float(np.abs(centre - fit).max()) >= _LINE_BEND


def _hue_classes(rgb: np.ndarray, ink: np.ndarray) -> np.ndarray:
    """Per pixel: its hue in twelve steps where it is drawn in colour, 12 where it is drawn grey or
    black, -1 where nothing is drawn."""
    c = rgb.astype(np.int32)
    hi, lo = c.max(axis=2), c.min(axis=2)
    chroma = hi - lo
    r, g, b = c[..., 0], c[..., 1], c[..., 2]
    safe = np.maximum(chroma, 1)
    hue = np.where(hi == r, ((g - b) / safe) % 6, np.where(hi == g, (b - r) / safe + 2, (r - g) / safe + 4))
    out = np.where(chroma >= 40, (hue * 2).astype(np.int32) % 12, 12)
    return np.where(ink, out, -1)
