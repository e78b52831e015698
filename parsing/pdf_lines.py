"""Spans → lines → text groups for one PDF page (PyMuPDF `get_text("dict")` output).

A `Line` carries the style cues section filtering needs (dominant size and font, bold from
the font name as well as the flags, monospace, math). A `Group` is a run of lines that belong
together: a mupdf block split where a heading line starts it, where the style changes between
code and prose, or at a paragraph gap.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from bookindex.parsing.numbering import is_number_label

BBox = tuple[float, float, float, float]

# Font-name cues: flags only mark "bold" for some fonts; Semibold/Demi/Heavy/Black never.
_BOLD_RE = re.compile(r"bold|semibold|demi|heavy|black|extrab|ultrab|cmbx|cmb\d|-bd\b|,bd|\bbd\b|-b$|\.b$|sbd", re.I)
_MONO_RE = re.compile(r"mono|courier|cmtt|sftt|consol|typewriter|inconsolata|menlo|\bcode\b|txtt|lmtt|nimbusmon", re.I)
_MATH_RE = re.compile(r"cmmi|cmsy|cmex|msam|msbm|symbol|math|esint|stix.*math|cambria math|mtsy|mtmi|rsfs", re.I)
BULLET_RE = re.compile(r"^\s*(?:[•◦▪‣●○■□➢►▶✓✔∗\u2022\u2013\u2014*\-–]\s+|\(?[a-z]\)\s+|\(?\d{1,2}[.)]\s+)")


@functools.lru_cache(maxsize=4096)
def _font_cues(font: str) -> tuple[bool, bool, bool]:
    """(bold, mono, math) from a font name, subset prefix ("ABCDEF+") removed; cached."""
    name = font.split("+")[-1]
    return bool(_BOLD_RE.search(name)), bool(_MONO_RE.search(name)), bool(_MATH_RE.search(name))


def is_bold_span(font: str, flags: int) -> bool:
    """Bold from the flags (bit 4) or the font name (Bold, Semibold, Demi, Heavy, Black, CMBX)."""
    return bool(flags & 16) or _font_cues(font)[0]


def is_mono_span(font: str, flags: int) -> bool:
    return bool(flags & 8) or _font_cues(font)[1]


@dataclass
class Line:
    bbox: BBox
    text: str
    size: float
    font: str
    flags: int
    bold: bool
    mono: bool
    math: float  # fraction of characters set in a math font
    italic: bool = False
    run_in: bool = False  # a bold lead-in set on the first line of a paragraph, apart from it
    xs: tuple[float, ...] = ()  # left edges of the pieces mupdf found on this baseline (table cells)

    @property
    def height(self) -> float:
        return self.bbox[3] - self.bbox[1]


@dataclass
class Group:
    """Lines that form one block candidate, plus where it came from."""

    lines: list[Line]
    kind: str = "text"  # text | margin (header/footer candidate)
    key: str = ""  # normalized text for running-header detection
    extra: dict = field(default_factory=dict)

    bbox: BBox = (0.0, 0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        xs0, ys0, xs1, ys1 = zip(*(ln.bbox for ln in self.lines))
        self.bbox = (min(xs0), min(ys0), max(xs1), max(ys1))

    @property
    def text(self) -> str:
        return join_lines([ln.text for ln in self.lines])


def join_lines(texts: list[str]) -> str:
    """Join wrapped lines into a paragraph, undoing end-of-line hyphenation."""
    out = ""
    for t in texts:
        t = t.strip()
        if not t:
            continue
        if not out:
            out = t
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha() and t[:1].islower():
            out = out[:-1] + t
        else:
            out += " " + t
    return out


@functools.lru_cache(maxsize=8192)
def _span_cues(font: str, flags: int) -> tuple[bool, bool, bool]:
    b, m, x = _font_cues(font)
    return (bool(flags & 16) or b, bool(flags & 8) or m, x)


def _line_from_spans(spans: list[dict], bbox: BBox) -> Line | None:
    """One pass over the spans (this loop runs for every span of every page: keep it lean)."""
    parts: list[str] = []
    total = bold_chars = mono_chars = math_chars = plain = 0
    dom: dict | None = None
    dom_w = -1
    for s in spans:
        t = s["text"]
        parts.append(t)
        w = len(t.strip())
        if not w:
            continue
        total += w
        if w > dom_w:
            dom, dom_w = s, w
        b, m, x = _span_cues(s["font"], s["flags"])
        if b:
            bold_chars += w
        if m:
            mono_chars += w
        if x:
            math_chars += w
        if not b and not m:
            plain += w
    if dom is None:
        return None
    text = "".join(parts)
    # A bullet glyph in a symbol font or inline code in a heading does not make the line "not bold".
    bold = bold_chars >= 0.6 * total and plain <= max(1, 0.1 * total)
    mono = mono_chars >= 0.9 * total
    clean = text.rstrip() if mono else " ".join(text.split())  # code keeps its indentation
    fl = int(dom["flags"])
    return Line(bbox=(bbox[0], bbox[1], bbox[2], bbox[3]), text=clean, size=round(float(dom["size"]), 2),
                font=dom["font"].split("+")[-1], flags=fl, bold=bold, mono=mono,
                math=math_chars / total, italic=bool(fl & 2))


def page_lines(page_dict: dict) -> list[list[Line]]:
    """mupdf blocks → lists of Lines, lines on the same baseline within a block merged."""
    out: list[list[Line]] = []
    for blk in page_dict.get("blocks", []):
        if blk.get("type", 0) != 0:
            continue
        raw: list[Line] = []
        for ln in blk.get("lines", []):
            d = ln.get("dir", (1.0, 0.0))
            line = _line_from_spans(ln.get("spans", []), ln["bbox"])
            if line is None:
                continue
            if abs(d[1]) > 0.2:  # rotated text (margins, table headers): keep, never a heading
                line.bold = False
                line.size = 0.0
            raw.append(line)
        if raw:
            out.append(_merge_same_baseline(raw))
    return out


def _rows_then_x(lines: list[Line]) -> list[Line]:
    """Order lines top to bottom, and left to right within a row of vertically overlapping
    lines (a bold run-in word may sit a point lower than the text after it)."""
    rows: list[list[Line]] = []
    for ln in sorted(lines, key=lambda x: (x.bbox[1] + x.bbox[3]) / 2):
        if rows:
            r = rows[-1][-1]
            overlap = min(r.bbox[3], ln.bbox[3]) - max(r.bbox[1], ln.bbox[1])
            if overlap > 0.6 * min(r.height, ln.height):
                rows[-1].append(ln)
                continue
        rows.append([ln])
    return [ln for row in rows for ln in sorted(row, key=lambda x: x.bbox[0])]


def _merge_same_baseline(lines: list[Line]) -> list[Line]:
    """mupdf splits a line at wide gaps (justified text, inline code); rejoin them."""
    lines = _rows_then_x(lines)
    merged: list[Line] = []
    for k, ln in enumerate(lines):
        if merged:
            prev = merged[-1]
            overlap = min(prev.bbox[3], ln.bbox[3]) - max(prev.bbox[1], ln.bbox[1])
            if (len(merged) == 1 and k == 1 and prev.bold and len(prev.text.split()) <= 6
                    and not is_number_label(prev.text)  # "1.1   Social dynamics": a numbered heading
                    and ln.bbox[0] - prev.bbox[2] >= 0.8 * max(prev.size, 1.0)
                    and overlap > 0.6 * min(prev.height, ln.height) and not prev.text.rstrip().endswith((",", "("))
                    and len(ln.text.split()) >= 3):
                prev.run_in = True  # "Heading   Body text..." set on one line: keep apart
                merged.append(ln)
                continue
            if overlap > 0.6 * min(prev.height, ln.height) and ln.bbox[0] >= prev.bbox[2] - 1:
                merged[-1] = Line(
                    bbox=(prev.bbox[0], min(prev.bbox[1], ln.bbox[1]), ln.bbox[2], max(prev.bbox[3], ln.bbox[3])),
                    text=prev.text + " " + ln.text,
                    size=prev.size if len(prev.text) >= len(ln.text) else ln.size,
                    font=prev.font if len(prev.text) >= len(ln.text) else ln.font,
                    flags=prev.flags, bold=prev.bold and ln.bold, mono=prev.mono and ln.mono,
                    math=(prev.math * len(prev.text) + ln.math * len(ln.text)) / max(1, len(prev.text) + len(ln.text)),
                    italic=prev.italic and ln.italic, xs=(prev.xs or (prev.bbox[0],)) + (ln.bbox[0],))
                continue
        merged.append(ln)
    return merged


def _style(ln: Line) -> tuple:
    return (round(ln.size * 2) / 2, ln.bold, ln.mono)


def split_groups(lines: list[Line]) -> list[list[Line]]:
    """Split one mupdf block into groups: heading lines off the top, code vs prose, paragraph gaps."""
    groups: list[list[Line]] = [[lines[0]]]
    for prev, ln in zip(lines, lines[1:]):
        cur = groups[-1]
        gap = ln.bbox[1] - prev.bbox[3]
        new = False
        if prev.run_in:
            new = True  # run-in heading: its paragraph starts on the same baseline
        elif gap > 0.9 * max(prev.height, ln.height):
            new = True  # paragraph gap
        elif ln.mono != prev.mono and (ln.mono or all(x.mono for x in cur)):
            new = True  # code block starts or ends
        elif _style(ln) != _style(prev) and all(_style(x) == _style(cur[0]) for x in cur) and _headingish(cur, ln):
            new = True  # a heading line (bold or larger) on top of a paragraph
        elif ln.size > prev.size + 0.7 and ln.size > 0:
            new = True  # a larger heading line after a paragraph in the same mupdf block
        if new:
            groups.append([ln])
        else:
            cur.append(ln)
    return groups


def _headingish(cur: list[Line], nxt: Line) -> bool:
    first = cur[0]
    if len(cur) > 3:
        return False
    return (first.bold and not nxt.bold) or first.size > nxt.size + 0.7
