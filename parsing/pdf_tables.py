"""Tables: a cheap "does this page look tabular?" test, then PyMuPDF's find_tables().

find_tables() costs tens of milliseconds a page, so it only runs where the vector graphics
contain ruling lines (a grid, or at least three long horizontal rules as in booktabs
tables). It is always called with use_layout=False: no ONNX model (see pdf_open).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # PyMuPDF is imported on first use (parsing.pdf_open.import_pymupdf)
    from pymupdf import Page

BBox = tuple[float, float, float, float]


@dataclass
class TableItem:
    bbox: BBox
    rows: list[list[str]]

    def markdown(self) -> str:
        rows = self.rows
        ncol = max(len(r) for r in rows)
        norm = [[_md_cell(c) for c in r] + [""] * (ncol - len(r)) for r in rows]
        out = ["| " + " | ".join(norm[0]) + " |", "|" + "---|" * ncol]
        out += ["| " + " | ".join(r) + " |" for r in norm[1:]]
        return "\n".join(out)

    def html(self) -> str:
        parts = ["<table>"]
        for i, r in enumerate(self.rows):
            tag = "th" if i == 0 else "td"
            parts.append("<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in r) + "</tr>")
        parts.append("</table>")
        return "".join(parts)


SHADED_MIN_PIECES = 3  # one-row tables stacked into one: a statement ruled by shaded bands
_WORDS = re.compile(r"[^\W\d_]{2}")


def _md_cell(c: str) -> str:
    return " ".join(c.split()).replace("|", "\\|")


def ruling_stats(page: Page, margin: float = 0.07) -> tuple[int, int, int, tuple | None]:
    """Distinct rule positions outside the page margins: (horizontal y's, vertical x's, max
    number of horizontal rules sharing one x-extent, bbox of all rules). Collinear segments
    count once, and the rules under running headers / above footers are ignored."""
    H = float(page.rect.height)
    lo, hi = margin * H, (1 - margin) * H
    hy: dict[int, list[tuple[float, float]]] = {}
    vx: set[int] = set()
    box = [1e9, 1e9, -1e9, -1e9]
    try:
        drawings = page.get_drawings()
    except Exception:
        return 0, 0, 0, None
    for d in drawings:
        for item in d.get("items", ()):
            kind = item[0]
            if kind == "l":
                p1, p2 = item[1], item[2]
                x0, x1, y0, y1 = min(p1.x, p2.x), max(p1.x, p2.x), min(p1.y, p2.y), max(p1.y, p2.y)
                segs = [(x0, y0, x1, y1)]
            elif kind == "re":
                r = item[1]
                if abs(r.width) > 20 and abs(r.height) > 8:  # cell/frame: its four sides
                    segs = [(r.x0, r.y0, r.x1, r.y0), (r.x0, r.y1, r.x1, r.y1), (r.x0, r.y0, r.x0, r.y1), (r.x1, r.y0, r.x1, r.y1)]
                else:
                    segs = [(r.x0, r.y0, r.x1, r.y1)]
            else:
                continue
            for x0, y0, x1, y1 in segs:
                dx, dy = x1 - x0, y1 - y0
                if dy < 2.5 and dx > 20 and lo < y0 < hi:
                    hy.setdefault(round(y0), []).append((x0, x1))
                elif dx < 2.5 and dy > 8 and lo < y1 and y0 < hi:
                    vx.add(round(x0))
                else:
                    continue
                box = [min(box[0], x0), min(box[1], y0), max(box[2], x1), max(box[3], y1)]
    extents: dict[tuple[int, int], int] = {}
    for spans in hy.values():
        key = (round(min(a for a, _ in spans) / 4), round(max(b for _, b in spans) / 4))
        extents[key] = extents.get(key, 0) + 1
    return len(hy), len(vx), max(extents.values(), default=0), (tuple(box) if box[0] < 1e9 else None)


def looks_tabular(page: Page) -> tuple[str, tuple[float, float, float, float] | None] | None:
    """('lines', clip) for ruled grids (at least 2x2 cells), ('hlines', clip) for tables with
    horizontal rules only (booktabs: top, mid and bottom rule of one width), else None.
    A single framed box (two rules each way) is not a table."""
    h, v, aligned, box = ruling_stats(page)
    if box is None:
        return None
    if h >= 3 and v >= 3:
        # no clip here: clipping the edge and character sets made find_tables() merge running
        # text into phantom tables on the gnuplot manual
        return "lines", None
    if aligned >= 3 and v < 2:
        # column boundaries come from the text, so keep it between the rules
        return "hlines", (box[0] - 2, box[1] - 2, box[2] + 2, box[3] + 2)
    return None


def aligned_columns(lines: list, min_rows: int = 4, min_cols: int = 3) -> tuple | None:
    """Region of a borderless table: at least `min_rows` text rows that each start pieces at
    the same `min_cols` or more x positions (two-column prose has only two). `lines` are the
    page's pdf_lines.Line objects; returns the region's bbox or None."""
    rows: dict[int, list] = {}
    for ln in lines:
        rows.setdefault(round((ln.bbox[1] + ln.bbox[3]) / 4), []).append(ln)
    cand = []
    for key in sorted(rows):
        xs = sorted({round(x / 3) for ln in rows[key] for x in (ln.xs or (ln.bbox[0],))})
        if len(xs) >= min_cols:
            cand.append((key, frozenset(xs), rows[key]))
    if len(cand) < min_rows:
        return None
    counts: dict[int, int] = {}
    for _, cols, _ in cand:
        for x in cols:
            counts[x] = counts.get(x, 0) + 1
    common = {x for x, c in counts.items() if c >= max(min_rows, 0.6 * len(cand))}
    if len(common) < min_cols:
        return None
    good = [lns for _, cols, lns in cand if len(cols & common) >= min_cols]
    if len(good) < min_rows:
        return None
    boxes = [ln.bbox for lns in good for ln in lns]
    return (min(b[0] for b in boxes) - 2, min(b[1] for b in boxes) - 2,
            max(b[2] for b in boxes) + 2, max(b[3] for b in boxes) + 2)


def find_tables(page: Page, mode: str, clip: tuple | None = None) -> list[TableItem]:
    """Run find_tables() in the given mode (only inside `clip`) and keep tables with content."""
    kwargs: dict[str, Any] = {"use_layout": False}
    if clip is not None:
        kwargs["clip"] = clip
    if mode == "hlines":
        kwargs.update(horizontal_strategy="lines", vertical_strategy="text")
    elif mode == "text":
        kwargs.update(horizontal_strategy="text", vertical_strategy="text")
    try:
        found = page.find_tables(**kwargs)
    except TypeError:  # PyMuPDF < 2 has no use_layout
        kwargs.pop("use_layout")
        found = page.find_tables(**kwargs)
    except Exception:
        return []
    raw: list[tuple[tuple, list[list[str]]]] = []
    words = None
    for tab in found.tables:
        try:
            if words is None:
                words = page.get_text("words")
            raw.append((tuple(tab.bbox), _cell_texts(tab, words)))
        except Exception:
            continue
    out = []
    for bbox, rows, pieces in _join_row_tables(raw):
        if pieces >= SHADED_MIN_PIECES:
            rows = _text_grid(page, bbox, words or []) or rows
        rows = [r for r in rows if any(r)]
        if rows:  # the text strategy leaves empty columns between wide gaps
            ncol = max(len(r) for r in rows)
            rows = [r + [""] * (ncol - len(r)) for r in rows]
            keep = [c for c in range(ncol) if any(r[c] for r in rows)]
            rows = [[r[c] for c in keep] for r in rows]
        if len(rows) < 2 or max(len(r) for r in rows) < 2:
            continue
        cells = [c for r in rows for c in r]
        filled = sum(1 for c in cells if c)
        if filled < 4 or filled < 0.4 * len(cells):
            continue  # plot frames, boxed notes: mostly empty "cells"
        if mode in ("hlines", "text") and max(len(r) for r in rows) > 12:
            continue
        if sum(len(c) for c in cells if c) / max(1, filled) > 80:
            continue  # cells full of running prose: a text box, not a table
        out.append(TableItem(bbox=bbox, rows=rows))
    return out


def _join_row_tables(raw: list[tuple[tuple, list[list[str]]]]) -> list[tuple[tuple, list[list[str]], int]]:
    """Shaded-row tables (financial statements) come out as one 'table' per row: join tables
    of the same width stacked closely above each other. Returns (bbox, rows, pieces joined)."""
    out: list[tuple[tuple, list[list[str]], int]] = []
    for bbox, rows in sorted(raw, key=lambda t: t[0][1]):
        if out:
            pb, prow, n = out[-1]
            same_width = abs(pb[0] - bbox[0]) < 3 and abs(pb[2] - bbox[2]) < 3
            if same_width and 0 <= bbox[1] - pb[3] < 30 and (len(prow) == 1 or len(rows) == 1):
                out[-1] = ((pb[0], pb[1], max(pb[2], bbox[2]), bbox[3]), prow + rows, n + 1)
                continue
        out.append((bbox, rows, 1))
    return out


def _text_grid(page: Page, bbox: tuple, words: list[tuple]) -> list[list[str]] | None:
    """The rows of a shaded-row table read again from its text. Its ruling comes from the shaded
    bands: each band is a table of one row, and the unshaded rows between the bands belong to
    none of them (a balance sheet lost its inventories row that way), while the bands split
    their columns each in their own way. Rows and columns from the text's lines and alignment
    cover the whole region alike; None when that finds no single table."""
    try:
        found = page.find_tables(clip=bbox, horizontal_strategy="text", vertical_strategy="text", use_layout=False)
    except Exception:
        return None
    if len(found.tables) != 1:
        return None
    tab = found.tables[0]
    rows = _cell_texts(tab, words)
    # a header spanning several columns ("FewNERD (NER)" over its 5-, 10-, 20-shot columns) aligns
    # with none of them, and the text strategy leaves it out: lines of the region above or below
    # the table come back as rows, each phrase in the column where it starts
    cols = _column_spans(tab)
    above = _outside_rows(words, bbox, cols, lambda cy: cy < tab.bbox[1])
    below = _outside_rows(words, bbox, cols, lambda cy: cy > tab.bbox[3])
    return merge_label_columns(above + rows + below)


def _column_spans(tab: Any) -> list[tuple[float, float]]:
    """Each column's x extent over the rows of a found table."""
    spans: dict[int, tuple[float, float]] = {}
    for row in tab.rows:
        for c, box in enumerate(row.cells):
            if box is not None:
                x0, x1 = spans.get(c, (box[0], box[2]))
                spans[c] = (min(x0, box[0]), max(x1, box[2]))
    return [spans[c] for c in sorted(spans)]


def _outside_rows(words: list[tuple], clip: tuple, cols: list[tuple[float, float]],
                  where: Any) -> list[list[str]]:
    """The lines of `clip` whose words `where` (on their centre's y) selects, as table rows:
    words closer than a space's width form a phrase, placed in the column holding its start."""
    if not cols:
        return []
    lines: dict[int, list[tuple]] = {}
    for w in words:
        cx, cy = (w[0] + w[2]) / 2, (w[1] + w[3]) / 2
        if clip[0] <= cx <= clip[2] and clip[1] <= cy <= clip[3] and where(cy):
            lines.setdefault(round(cy / 3), []).append(w)
    out = []
    for key in sorted(lines):
        row = [""] * len(cols)
        phrase: list[tuple] = []
        ordered: list[tuple | None] = [*sorted(lines[key], key=lambda w: w[0]), None]  # None ends the last phrase
        for word in ordered:
            if phrase and (word is None or word[0] - phrase[-1][2] > 4.0):
                x = phrase[0][0]
                c = min(range(len(cols)), key=lambda i: 0 if cols[i][0] - 1 <= x <= cols[i][1] + 1
                        else min(abs(x - cols[i][0]), abs(x - cols[i][1])))
                row[c] = " ".join(filter(None, [row[c], " ".join(p[4] for p in phrase)]))
                phrase = []
            if word is not None:
                phrase.append(word)
        out.append(row)
    return out


def merge_label_columns(rows: list[list[str]]) -> list[list[str]]:
    """Join to the first column the columns after it that hold only the wrapped parts of some
    rows' labels: a row label that wraps ("Property under capital / and financing leases") is
    split by the text strategy at the x where each line's words start. Such a column is filled
    in at most half the rows, and only with words (no value such as "1,980", "—" or a lone "$")."""
    width = max((len(r) for r in rows), default=0)

    def words_only(c: int) -> bool:
        # every filled cell holds words (no value, no lone "$"), and only some rows fill it: the
        # labels that wrap; a column of words in every row is a column of its own ("Method")
        cells = [r[c] for r in rows if c < len(r) and r[c].strip()]
        return bool(cells) and len(cells) <= len(rows) / 2 and all(_WORDS.search(x) for x in cells)

    k = 0
    while k + 1 < width and words_only(k + 1):
        k += 1
    if k == 0 or k + 1 >= width:
        return rows
    return [[" ".join(c for c in r[:k + 1] if c)] + r[k + 1:] for r in rows]


def _cell_texts(tab: Any, words: list[tuple]) -> list[list[str]]:
    """Cell text from page words by their centres (Table.extract() splits '2.5' into '25 .')."""
    grid = [list(row.cells) for row in tab.rows]
    cells: dict[tuple[int, int], list[tuple]] = {}
    flat = [(r, c, box) for r, row in enumerate(grid) for c, box in enumerate(row) if box is not None]
    tx0 = min((b[0] for _, _, b in flat), default=0)
    tx1 = max((b[2] for _, _, b in flat), default=0)
    for w in words:
        cx, cy = (w[0] + w[2]) / 2, (w[1] + w[3]) / 2
        near, near_d = None, 40.0  # a word running past the outer column edge still belongs to it
        for r, c, (x0, y0, x1, y1) in flat:
            if not (y0 <= cy <= y1):
                continue
            if x0 <= cx <= x1:
                near, near_d = (r, c), -1
                break
            d = x0 - cx if cx < x0 else cx - x1
            if d < near_d and (x1 >= tx1 - 1 or x0 <= tx0 + 1) and w[0] < x1 + 40 and w[2] > x0 - 40:
                near, near_d = (r, c), d
        if near is not None:
            cells.setdefault(near, []).append(w)
    rows = []
    for r, row in enumerate(grid):
        out_row = []
        for c, _box in enumerate(row):
            ws = sorted(cells.get((r, c), []), key=lambda w: (round(w[3]), w[0]))
            out_row.append(" ".join(w[4] for w in ws))
        rows.append(out_row)
    return rows
