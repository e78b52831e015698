"""Reading order of a page's items (text groups, tables, images) by a recursive XY-cut.

Horizontal cuts first give bands; consecutive bands that share a clear vertical gutter (a
two-column stretch between full-width titles or figures) are merged and read column by
column, so aligned paragraph gaps in both columns cannot interleave the columns. A gutter
only counts when both sides are wide (columns, not a narrow label column of a list).
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
BBox = tuple[float, float, float, float]

_H_TOL = 1.5  # points of vertical overlap still treated as "no overlap" (descenders)
_GUTTER = 6.0  # minimum width of a column gutter in points
_MIN_COL_FRAC = 0.22  # each column at least this share of the grouped region's width


def reading_order(items: Sequence[T], bbox_of: Callable[[T], BBox]) -> list[T]:
    """Return `items` in reading order."""
    return _order(list(items), bbox_of, 0)


def _order(items: list[T], bb: Callable[[T], BBox], depth: int) -> list[T]:
    if len(items) <= 1 or depth > 40:
        return _rows(items, bb)
    bands = _split_h(items, bb)
    if len(bands) == 1:
        cols = _split_v(items, bb)
        if len(cols) == 1:
            return _rows(items, bb)
        return [x for c in cols for x in _order(c, bb, depth + 1)]
    out: list[T] = []
    i = 0
    while i < len(bands):
        j, gut = _column_group(bands, i, bb)
        if gut is None:
            out.extend(_order(bands[i], bb, depth + 1))
            i += 1
            continue
        group = [x for b in bands[i:j] for x in b]
        left = [x for x in group if (bb(x)[0] + bb(x)[2]) / 2 < gut]
        right = [x for x in group if (bb(x)[0] + bb(x)[2]) / 2 >= gut]
        out.extend(_order(left, bb, depth + 1))
        out.extend(_order(right, bb, depth + 1))
        i = j
    return out


def _rows(items: list[T], bb: Callable[[T], BBox], tol: float = 3.0) -> list[T]:
    """Top to bottom; items whose tops are within `tol` points form a row read left to right."""
    out: list[T] = []
    row: list[T] = []
    for it in sorted(items, key=lambda x: bb(x)[1]):
        if row and bb(it)[1] - bb(row[0])[1] > tol:
            out.extend(sorted(row, key=lambda x: (round(bb(x)[0]), bb(x)[2])))
            row = []
        row.append(it)
    out.extend(sorted(row, key=lambda x: (round(bb(x)[0]), bb(x)[2])))
    return out


def _split(items: list[T], bb: Callable[[T], BBox], axis: int, slack: float) -> list[list[T]]:
    """Runs of items along `axis` (0 = x, 1 = y): an item starting before the run's far edge
    plus `slack` joins the run, otherwise it starts a new one."""
    items = sorted(items, key=lambda it: bb(it)[axis])
    runs: list[list[T]] = []
    edge = -1e9
    for it in items:
        lo, hi = bb(it)[axis], bb(it)[axis + 2]
        if runs and lo < edge + slack:
            runs[-1].append(it)
            edge = max(edge, hi)
        else:
            runs.append([it])
            edge = hi
    return runs


def _split_h(items: list[T], bb: Callable[[T], BBox]) -> list[list[T]]:
    """Horizontal bands: items that overlap vertically by more than _H_TOL."""
    return _split(items, bb, 1, -_H_TOL)


def _split_v(items: list[T], bb: Callable[[T], BBox]) -> list[list[T]]:
    """Columns: items closer horizontally than a _GUTTER."""
    return _split(items, bb, 0, _GUTTER)


def _gutters(band: list[T], bb: Callable[[T], BBox]) -> list[tuple[float, float]]:
    """Empty x-intervals inside a band with items on both sides."""
    spans = sorted((bb(it)[0], bb(it)[2]) for it in band)
    out = []
    right = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 - right >= _GUTTER:
            out.append((right, x0))
        right = max(right, x1)
    return out


def _crosses(band: list[T], bb: Callable[[T], BBox], g: float) -> bool:
    return any(bb(it)[0] + 1 < g < bb(it)[2] - 1 for it in band)


def _shrink(g0: float, g1: float, band: list[T], bb: Callable[[T], BBox]) -> tuple[float, float] | None:
    """Narrow the free interval (g0, g1) by the band's items; None when an item fills it."""
    for it in band:
        x0, x1 = bb(it)[0], bb(it)[2]
        if x1 <= g0 or x0 >= g1:
            continue
        if x0 <= g0 + 1 and x1 < g1:
            g0 = x1
        elif x1 >= g1 - 1 and x0 > g0:
            g1 = x0
        else:
            return None
        if g1 - g0 < _GUTTER / 2:
            return None
    return (g0, g1)


def _column_group(bands: list[list[T]], i: int, bb: Callable[[T], BBox]) -> tuple[int, float | None]:
    """Largest run of bands from i that a gutter of band i runs through, if they form columns."""
    best: tuple[int, float | None] = (i + 1, None)
    for g0, g1 in _gutters(bands[i], bb):
        j = i + 1
        while j < len(bands):
            nxt = _shrink(g0, g1, bands[j], bb)
            if nxt is None:
                break
            g0, g1 = nxt
            j += 1
        g = (g0 + g1) / 2
        group = [x for b in bands[i:j] for x in b]
        left = [bb(x) for x in group if (bb(x)[0] + bb(x)[2]) / 2 < g]
        right = [bb(x) for x in group if (bb(x)[0] + bb(x)[2]) / 2 >= g]
        if not left or not right:
            continue
        x0 = min(b[0] for b in left)
        x1 = max(b[2] for b in right)
        width = max(1.0, x1 - x0)
        lw = max(b[2] for b in left) - x0
        rw = x1 - min(b[0] for b in right)
        if lw < _MIN_COL_FRAC * width or rw < _MIN_COL_FRAC * width:
            continue
        if j - i < 2 and len(left) + len(right) < 3:
            continue  # a single row of two boxes: plain left-to-right order is the same
        if best[1] is None or j > best[0]:
            best = (j, g)
    return best
