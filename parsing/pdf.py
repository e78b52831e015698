"""The `pymupdf` parser: PDF → blocks in reading order (BookRAG §4.2.1, layout parsing).

One pass over the pages (streamed: only the current page's objects are alive) turns spans
into lines and lines into groups, finds tables on pages with ruling lines and raster images
(reading the words inside charts and diagrams with tesseract: `pdf_raster_figures`,
`pdf_vector_figures`; a vector chart's text-layer labels become one figure:
`pdf_labelled_charts`), and orders everything by an XY-cut that handles column layouts. A second
pass over the light blocks removes running headers/footers (margin text repeated across pages),
types blocks (title candidates, text, list, code, equation) against the document's body font
size and attaches "Table n"/"Figure n" captions. The outline is read but not applied: that is section
filtering's job (parsing.sections.assign_levels).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from bookindex.core.model import BBox, Block
from bookindex.parsing.base import OutlineEntry, ParsedDocument
from bookindex.parsing.figure_kind import figure_kind
from bookindex.parsing.numbering import parse_numbering
from bookindex.parsing.page_numbers import page_number_candidates, printed_page_labels
from bookindex.parsing.pdf_images import (
    OCR_FONT,
    ImageItem,
    figure_words,
    ocr_page_dict,
    page_images,
    save_image,
    tessdata_dir,
)
from bookindex.parsing.pdf_labelled_charts import labelled_charts
from bookindex.parsing.pdf_lines import BULLET_RE, Group, Line, join_lines, page_lines, split_groups
from bookindex.parsing.pdf_open import import_pymupdf, open_pdf
from bookindex.parsing.pdf_order import reading_order
from bookindex.parsing.pdf_raster_figures import RasterReader
from bookindex.parsing.pdf_tables import TableItem, aligned_columns, find_tables, looks_tabular
from bookindex.parsing.pdf_vector_figures import PageDrawings, drawn_text_page, overlaps_any, vector_figures
from bookindex.parsing.pdf_words import rejoin_split_words

if TYPE_CHECKING:  # PyMuPDF is imported on first use (parsing.pdf_open.import_pymupdf)
    from pymupdf import Document, Page

MARGIN_FRAC = 0.085  # top/bottom share of the page where running headers and footers live
_CAPTION_TABLE = re.compile(r"^\s*(table|tab\.)\s*[0-9IVXA-Z]+[\d.\-]*\s*[:.\-–—]?", re.I)
_CAPTION_FIG = re.compile(r"^\s*(figure|fig\.|chart|plate|exhibit)\s*[0-9IVXA-Z]+[\d.\-]*\s*[:.\-–—]?", re.I)
_PAGE_NUM = re.compile(r"^\s*(?:page\s+)?[-–]?\s*(?:\d{1,4}|[ivxlc]{1,6})\s*[-–]?\s*(?:(?:of|/)\s*\d{1,4})?\s*$", re.I)


def parse_pdf(path: str | Path, *, tables: bool = True, images: bool = True, ocr: bool = True,
              image_dir: str | Path | None = None, progress: bool = False) -> ParsedDocument:
    """Parse a PDF into blocks in reading order; raises InputError for unusable files."""
    pymupdf = import_pymupdf()
    path = Path(path)
    doc = open_pdf(path)
    # without TEXT_PRESERVE_LIGATURES MuPDF writes a ligature glyph as its letters ("file", not
    # "ﬁle"): what a reader types, searches and quotes
    flags = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
    warnings: list[str] = []
    blocks: list[Block] = []
    page_sizes: list[tuple[float, float]] = []
    img_dir = Path(image_dir) if image_dir is not None else None
    stats: Counter[str] = Counter()
    numbers: dict[int, set[int]] = {}  # the numbers each page may print as its own (parsing.page_numbers)
    raster = RasterReader() if ocr and images else None
    try:
        outline = read_outline(doc)
        n = doc.page_count
        it: Any = range(n)
        if progress:
            it = tqdm(it, total=n, unit="page", desc=f"parse {path.name}")
        for pno in it:
            page = doc.load_page(pno)
            page_sizes.append((float(page.rect.width), float(page.rect.height)))
            try:
                blocks.extend(_parse_page(doc, page, pno, flags, tables=tables, images=images, ocr=ocr,
                                          img_dir=img_dir, stem=path.stem, warnings=warnings, stats=stats,
                                          numbers=numbers, raster=raster))
            except Exception as exc:  # one broken page must not lose the whole document
                warnings.append(f"{path.name}: page {pno + 1}: could not be parsed ({exc})")
            del page
        meta = {"source": str(path), "metadata": {k: v for k, v in (doc.metadata or {}).items() if v},
                "tables_enabled": tables, "table_pages": stats["table_pages"], "ocr_pages": stats["ocr_pages"],
                "vector_figures": stats["vector_figures"], "labelled_charts": stats["labelled_charts"],
                "figure_kinds": stats["figure_kinds"],
                "raster_ocr": {"read": raster.read, "kept": raster.kept} if raster is not None else None}
        labels = page_labels(doc) or printed_page_labels(numbers, n)
        if labels:
            meta["page_labels"] = labels
    finally:
        doc.close()
    blocks = _remove_furniture(blocks, len(page_sizes))
    body = _body_size(blocks)
    blocks = rejoin_split_words(_classify(blocks, body))
    meta["body_font_size"] = body
    return ParsedDocument(blocks=blocks, page_count=len(page_sizes), parser="pymupdf", outline=outline,
                          page_sizes=page_sizes, warnings=warnings, meta=meta)


def page_labels(doc: Document) -> list[str] | None:
    """The number each page prints ("i", "17"), from the PDF's page-label tree; None when the PDF
    has none or they only repeat the physical numbers (then `parse_pdf` reads the numbering from
    the pages' text, `parsing.page_numbers`). Questions quote printed numbers."""
    try:
        labels = [doc[i].get_label() or "" for i in range(doc.page_count)]
    except Exception:  # a damaged label tree is not worth failing the document over
        return None
    if not any(labels) or all(lab == str(i + 1) for i, lab in enumerate(labels)):
        return None
    return labels


def read_outline(doc: Document) -> list[OutlineEntry]:
    """The PDF bookmarks as OutlineEntry (0-based pages, target point when known); not applied here."""
    try:
        toc = doc.get_toc(simple=False)
    except Exception:
        return []
    out = []
    for lvl, title, page, *rest in toc:
        pno = int(page) - 1 if page and page > 0 else None
        x, y = _target_point(doc, pno, rest[0] if rest and isinstance(rest[0], dict) else {})
        out.append(OutlineEntry(level=int(lvl), title=" ".join(str(title).split()), page_idx=pno, x=x, y=y))
    return out


def _target_point(doc: Document, pno: int | None, dest: dict) -> tuple[float | None, float | None]:
    """A bookmark's target point in top-left coordinates. pymupdf gives GOTO targets top-left but
    named destinations in PDF user space (bottom-up); (0, 0) means "no point" (a /Fit target)."""
    to = dest.get("to")
    if pno is None or to is None or dest.get("kind") not in (1, 4):
        return None, None
    try:
        x, y = float(to.x), float(to.y)
        h = float(doc.page_cropbox(pno).height)
    except Exception:
        return None, None
    if x == 0 and y == 0:
        return None, None
    if dest.get("kind") == 4:
        y = h - y
    return (x, y) if 0 <= y <= h else (None, None)


# -- one page -----------------------------------------------------------------------------

def _parse_page(doc: Document, page: Page, pno: int, flags: int, *, tables: bool, images: bool, ocr: bool,
                img_dir: Path | None, stem: str, warnings: list[str], stats: Counter,
                numbers: dict[int, set[int]] | None = None, raster: RasterReader | None = None) -> list[Block]:
    """One page's blocks; `numbers` gets the numbers the page may print as its own; `raster`
    (None: OCR off) reads the words inside raster charts and diagrams."""
    W, H = float(page.rect.width), float(page.rect.height)
    d = page.get_text("dict", flags=flags)
    mu_blocks = page_lines(d)
    del d
    nchars = sum(len(ln.text) for blk in mu_blocks for ln in blk)
    imgs = page_images(page, with_xrefs=img_dir is not None) if (images or nchars < 10) else []
    scan_imgs: list[ImageItem] = []
    read_by_ocr = False
    if nchars < 10:
        cover = sum((i.bbox[2] - i.bbox[0]) * (i.bbox[3] - i.bbox[1]) for i in imgs) / max(1.0, W * H)
        if cover >= 0.3:
            scanned = None
            if ocr:
                scanned = ocr_page_dict(page, flags)
            if scanned is not None:
                warnings.append(f"page {pno + 1}: no text layer (scanned); text recognized with tesseract OCR")
                mu_blocks, read_by_ocr = page_lines(scanned), True
                stats["ocr_pages"] += 1
                imgs = [i for i in imgs if (i.bbox[2] - i.bbox[0]) * (i.bbox[3] - i.bbox[1]) < 0.5 * W * H] if images else []
            else:
                why = "OCR disabled" if not ocr else ("tesseract not installed" if tessdata_dir() is None else "OCR failed")
                warnings.append(f"page {pno + 1}: no text layer (scanned) and {why}; kept as an image")
                scan_imgs = [i for i in imgs if (i.bbox[2] - i.bbox[0]) * (i.bbox[3] - i.bbox[1]) >= 0.3 * W * H]
                if not images:
                    imgs = scan_imgs
    elif not images:
        imgs = []
    drawings = PageDrawings(page)  # read once, when a figure finder first asks
    if ocr and not read_by_ocr and _body_chars(mu_blocks, H) < 10 and drawn_text_page(page, drawings):
        outlines = ocr_page_dict(page, flags)
        if outlines is not None:
            warnings.append(f"page {pno + 1}: text drawn as outlines; recognized with tesseract OCR")
            mu_blocks, read_by_ocr = page_lines(outlines), True
            stats["ocr_pages"] += 1

    if numbers is not None:
        numbers[pno] = page_number_candidates([(ln.bbox, ln.text) for blk in mu_blocks for ln in blk], H, MARGIN_FRAC)
    # a labelled chart's values and categories stand in aligned columns and over drawn rules: found
    # first, it is not read as a table
    charts: list[ImageItem] = []
    charted: set[int] = set()  # ids of the text lines a labelled chart took
    if images and not read_by_ocr:
        for chart, took in labelled_charts(page, mu_blocks, [i.bbox for i in imgs], drawings):
            charts.append(chart)
            charted.update(id(ln) for ln in took)
        stats["labelled_charts"] += len(charts)
    tabs: list[TableItem] = []
    if tables:
        tabular = looks_tabular(page)
        if tabular is None:  # no rules: a borderless table shows as text in aligned columns
            region = aligned_columns([ln for blk in mu_blocks for ln in blk if not ln.mono and id(ln) not in charted])
            tabular = ("text", region) if region else None
        if tabular:
            stats["table_pages"] += 1
            tabs = [t for t in find_tables(page, *tabular) if not overlaps_any(t.bbox, [c.bbox for c in charts])]

    items: list[Any] = []
    for lines in mu_blocks:
        if tabs:
            lines = [ln for ln in lines if not _inside_any(ln.bbox, [t.bbox for t in tabs])]
        if charted:
            lines = [ln for ln in lines if id(ln) not in charted]
        body: list[Line] = []
        for ln in lines:
            if _in_margin(ln.bbox, H):
                top = (ln.bbox[1] + ln.bbox[3]) / 2 < H / 2
                items.append(Group([ln], kind="margin", key=_furniture_key(ln.text) + ("|top" if top else "|bottom")))
            else:
                body.append(ln)
        if body:
            items.extend(Group(g) for g in split_groups(body))
    if imgs:
        # text drawn over an image (labels inside figures) stays text; images never overlap tables
        imgs = [i for i in imgs if not _inside_any(i.bbox, [t.bbox for t in tabs])]
    for item in imgs:
        if item not in scan_imgs:
            item.kind = figure_kind(page, item.bbox)  # photo, pie/bar/line chart; None when unsure
    if raster is not None and imgs and not read_by_ocr:  # a page read by OCR has its pictures' words already
        text_boxes = [ln.bbox for blk in mu_blocks for ln in blk]
        for item in imgs:
            if item not in scan_imgs and raster.wants(item, text_boxes):
                item.words = raster.words(page, item)
    if images:
        drawn = vector_figures(page, [t.bbox for t in tabs] + [i.bbox for i in imgs + charts], drawings)
        for fig in drawn:
            fig.words = figure_words(page, fig.bbox) if ocr else ""
            fig.kind = figure_kind(page, fig.bbox)
        stats["vector_figures"] += len(drawn)
        imgs = imgs + drawn + charts
    items.extend(tabs)
    items.extend(imgs)
    ordered = reading_order(items, _bbox_of)

    out: list[Block] = []
    n_img = 0
    for item in ordered:
        if isinstance(item, Group):
            out.append(_group_block(item, pno, W))
        elif isinstance(item, TableItem):
            md = item.markdown()
            out.append(Block(type="table", content=md, page_idx=pno, bbox=_r(item.bbox),
                             extra={"markdown": md, "html": item.html(), "caption": ""}))
        else:
            n_img += 1
            path = save_image(doc, page, item, img_dir, stem, n_img) if img_dir is not None else None
            extra: dict[str, Any] = {"caption": "", "image_path": path}
            if item in scan_imgs:
                extra["scanned_page"] = True
            elif item.kind:
                extra["figure_kind"] = item.kind
                stats["figure_kinds"] += 1
            if item.words:
                extra["chart_text" if item in charts else "ocr_text"] = item.words
            out.append(Block(type="image", content="", page_idx=pno, bbox=_r(item.bbox), extra=extra))
    _attach_captions(out)
    return out


def _in_margin(bbox: tuple, height: float) -> bool:
    """Whether a line's middle lies in the top or bottom band where running headers live."""
    cy = (bbox[1] + bbox[3]) / 2
    return cy < MARGIN_FRAC * height or cy > (1 - MARGIN_FRAC) * height


def _body_chars(blocks: list[list[Line]], height: float) -> int:
    """Characters of text-layer lines between the running header and footer bands."""
    return sum(len(ln.text) for blk in blocks for ln in blk if not _in_margin(ln.bbox, height))


def _bbox_of(item: Any) -> tuple[float, float, float, float]:
    return item.bbox


def _r(b: tuple) -> tuple[float, float, float, float]:
    return (round(b[0], 2), round(b[1], 2), round(b[2], 2), round(b[3], 2))


def _inside_any(b: tuple, boxes: list[tuple]) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return any(x0 - 1 <= cx <= x1 + 1 and y0 - 1 <= cy <= y1 + 1 for x0, y0, x1, y1 in boxes)


def _furniture_key(text: str) -> str:
    t = " ".join(text.lower().split())
    if _PAGE_NUM.match(t):
        return "#pagenum"
    return re.sub(r"\d+", "#", t)


def _group_block(g: Group, pno: int, page_w: float) -> Block:
    lines = g.lines
    weights = [max(1, len(ln.text)) for ln in lines]
    total = sum(weights)
    size_w: Counter = Counter()
    font_w: Counter = Counter()
    for ln, w in zip(lines, weights):
        size_w[ln.size] += w
        font_w[(ln.font, ln.flags)] += w
    size = size_w.most_common(1)[0][0]
    (font, fl), _ = font_w.most_common(1)[0]
    mono = sum(w for ln, w in zip(lines, weights) if ln.mono) >= 0.9 * total
    math = sum(ln.math * w for ln, w in zip(lines, weights)) / total
    if mono:
        x0 = min(ln.bbox[0] for ln in lines)
        cw = max(1.0, 0.6 * size)
        content = "\n".join(" " * max(0, round((ln.bbox[0] - x0) / cw)) + ln.text.rstrip() for ln in lines)
        content = _dedent(content)
    else:
        content = join_lines([ln.text for ln in lines])
    features = {"font_size": size, "bold": all(ln.bold for ln in lines), "font_name": font, "flags": fl,
                "mono": mono, "math": round(math, 2), "lines": len(lines),
                "italic": all(ln.italic for ln in lines), "max_size": max(ln.size for ln in lines)}
    if len(lines) == 1 and lines[0].run_in:
        features["run_in"] = True
    extra: dict[str, Any] = {}
    if g.kind == "margin":
        extra["_furniture_key"] = g.key
    return Block(type="text", content=content, page_idx=pno, bbox=_r(g.bbox), features=features, extra=extra)


def _dedent(text: str) -> str:
    lines = text.split("\n")
    pad = min((len(x) - len(x.lstrip(" ")) for x in lines if x.strip()), default=0)
    return "\n".join(x[pad:] for x in lines)


def _attach_captions(blocks: list[Block]) -> None:
    """Give each table/image the nearest "Table n"/"Figure n" block on its page; drop that block."""
    used: set[int] = set()
    for b in blocks:
        if b.type not in ("table", "image") or b.bbox is None:
            continue
        pat = _CAPTION_TABLE if b.type == "table" else _CAPTION_FIG
        best, best_d = None, 1e9
        for j, c in enumerate(blocks):
            if j in used or c.type != "text" or c.bbox is None or not pat.match(c.content):
                continue
            if "_furniture_key" in c.extra:
                continue
            ox = min(b.bbox[2], c.bbox[2]) - max(b.bbox[0], c.bbox[0])
            if ox <= 0:
                continue
            if c.bbox[1] >= b.bbox[3] - 2:
                dist = c.bbox[1] - b.bbox[3]
                dist *= 1.0 if b.type == "image" else 1.3  # tables: captions usually above
            elif c.bbox[3] <= b.bbox[1] + 2:
                dist = b.bbox[1] - c.bbox[3]
                dist *= 1.3 if b.type == "image" else 1.0
            else:
                continue
            if dist < best_d and dist <= 72:
                best, best_d = j, dist
        if best is not None:
            used.add(best)
            b.extra["caption"] = blocks[best].content
            if b.type == "image":
                b.content = blocks[best].content
    for j in sorted(used, reverse=True):
        del blocks[j]


# -- whole document -----------------------------------------------------------------------

def _remove_furniture(blocks: list[Block], n_pages: int) -> list[Block]:
    """Drop margin text that repeats across pages (running headers/footers) and page numbers."""
    pages_of: dict[str, set[int]] = {}
    for b in blocks:
        k = b.extra.get("_furniture_key")
        if k is not None:
            pages_of.setdefault(k, set()).add(b.page_idx)
    need = 2 if n_pages <= 6 else 3
    furniture = {k for k, pg in pages_of.items() if len(pg) >= need or k.startswith("#pagenum")}
    out = []
    for b in blocks:
        k = b.extra.pop("_furniture_key", None)
        if k is not None and k in furniture:
            continue
        if k is not None:
            b.extra["margin"] = True
        out.append(b)
    return out


def _body_size(blocks: list[Block]) -> float:
    c: Counter = Counter()
    for b in blocks:
        if b.type == "text" and b.features and not b.features.get("mono"):
            c[round(float(b.features.get("font_size", 0)) * 2) / 2] += len(b.content)
    return float(c.most_common(1)[0][0]) if c else 10.0


def _classify(blocks: list[Block], body: float) -> list[Block]:
    """Type text blocks: title candidates, lists, code, equations; merge 'Part I' + its title."""
    for b in blocks:
        if b.type != "text" or not b.features:
            continue
        f = b.features
        if f.get("mono"):
            b.type = "code"
        elif f.get("font_name") == OCR_FONT:
            # recognized text: its sizes are estimates from pixel boxes and its words may be
            # misread, so a map's labels or a scan's noise would become headings
            if BULLET_RE.match(b.content):
                b.type = "list"
        elif is_title_candidate(b.content, f, body):
            b.type = "title"
        elif f.get("math", 0) >= 0.5 and len(b.content) < 300 and not _LEADERS.search(b.content):
            b.type = "equation"
        elif BULLET_RE.match(b.content):
            b.type = "list"
    return _merge_stacked_titles(_merge_labels(_merge_lists(_merge_equations(blocks))))


_LEADERS = re.compile(r"(?:\.\s*){4,}")


def _near(a: Block, b: Block, gap: float) -> bool:
    if a.page_idx != b.page_idx or a.bbox is None or b.bbox is None:
        return False
    dy = max(a.bbox[1], b.bbox[1]) - min(a.bbox[3], b.bbox[3])
    return dy <= gap


def _union(a: BBox | None, b: BBox | None) -> BBox:
    """The box around two boxes; only called on blocks `_near` accepted, which have both."""
    if a is None or b is None:
        raise ValueError("_union needs two boxes")
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _merge_equations(blocks: list[Block]) -> list[Block]:
    """A display formula comes out as fragments (fraction parts, big operators, indices): join
    adjacent equation fragments, and short text fragments next to them, into one block."""
    out: list[Block] = []
    for b in blocks:
        prev = out[-1] if out else None
        frag = b.type == "equation" or (b.type == "text" and len(b.content.strip()) <= 6)
        if prev is not None and prev.type == "equation" and frag and _near(prev, b, 1.2 * float(b.features.get("font_size", 10) or 10)):
            prev.content = f"{prev.content} {b.content}".strip()
            prev.bbox = _union(prev.bbox, b.bbox)
            continue
        if (b.type == "equation" and prev is not None and prev.type == "text" and len(prev.content.strip()) <= 6
                and _near(prev, b, 1.2 * float(b.features.get("font_size", 10) or 10))):
            b.content = f"{prev.content} {b.content}".strip()
            b.bbox = _union(prev.bbox, b.bbox)
            out[-1] = b
            continue
        out.append(b)
    return out


_SENTENCE_END = re.compile(r"[,;]\s*$")
_XREF = re.compile(r"\((?:p|pp|page|pages)\.?\s*\d+\)", re.I)
_LABEL_ONLY = re.compile(r"^\s*(part|chapter|appendix|book)\s+([0-9]+|[IVXLC]+|[A-Z])\s*[.:]?\s*$", re.I)


def is_title_candidate(text: str, f: dict, body: float) -> bool:
    """Layout cues for a heading: short, own block, larger or bold font; no caption/sentence."""
    t = text.strip()
    if not t or len(t) > 200 or f.get("lines", 1) > 3 or not re.search(r"[^\W\d_]", t):
        return False
    if _CAPTION_TABLE.match(t) or _CAPTION_FIG.match(t) or _SENTENCE_END.search(t):
        return False
    if _XREF.search(t) or t[0] in "([{,;:)":
        return False  # a bold cross-reference line ("see set style (p. 154).") or a continuation
    if t.endswith(".") and len(t.split()) > 10:
        return False
    if BULLET_RE.match(t) and not parse_numbering(t):
        return False
    size = float(f.get("font_size", 0))
    bigger = size >= body * 1.12 and size - body >= 0.8
    return bigger or bool(f.get("bold")) or bool(_LABEL_ONLY.match(t) and size >= body)


def _merge_lists(blocks: list[Block]) -> list[Block]:
    """Consecutive list items on a page with the same indent become one list block."""
    out: list[Block] = []
    for b in blocks:
        prev = out[-1] if out else None
        if (b.type == "list" and prev is not None and prev.type in ("list", "text") and prev.page_idx == b.page_idx
                and prev.bbox and b.bbox and abs(prev.bbox[0] - b.bbox[0]) < 3
                and 0 <= b.bbox[1] - prev.bbox[3] < 2.5 * float(b.features.get("font_size", 10))
                and (prev.type == "list")):
            prev.content = prev.content + "\n" + b.content
            prev.bbox = (min(prev.bbox[0], b.bbox[0]), prev.bbox[1], max(prev.bbox[2], b.bbox[2]), b.bbox[3])
            prev.features["lines"] = prev.features.get("lines", 1) + b.features.get("lines", 1)
            continue
        out.append(b)
    return out


def _merge_stacked_titles(blocks: list[Block]) -> list[Block]:
    """Two title lines in the same font set one under the other at line spacing (no paragraph
    gap) are one heading over two lines ("Consolidated Balance Sheet" / "At December 31"), as
    they would be had they come in one text block; they arrive apart when the first sits in the
    page's header band or the PDF draws them as separate blocks."""
    out: list[Block] = []
    for b in blocks:
        prev = out[-1] if out else None
        if prev is not None and _stacked(prev, b):
            assert prev.bbox is not None and b.bbox is not None  # _stacked checked both
            prev.content = f"{prev.content.strip()} {b.content.strip()}"
            prev.bbox = _union(prev.bbox, b.bbox)
            prev.features["lines"] = prev.features.get("lines", 1) + b.features.get("lines", 1)
            if not (prev.extra.get("margin") and b.extra.get("margin")):
                prev.extra.pop("margin", None)
            continue
        out.append(b)
    return out


def _stacked(a: Block, b: Block) -> bool:
    if a.type != "title" or b.type != "title" or a.page_idx != b.page_idx or a.bbox is None or b.bbox is None:
        return False
    fa, fb = a.features, b.features
    size = float(fa.get("font_size") or 0)
    if not size or abs(size - float(fb.get("font_size") or 0)) > 0.3 or bool(fa.get("bold")) != bool(fb.get("bold")):
        return False
    if fa.get("run_in") or fb.get("run_in") or fa.get("lines", 1) + fb.get("lines", 1) > 3:
        return False
    gap = b.bbox[1] - a.bbox[3]
    # the lines of one heading share their left edge or their centre; an indented line under a
    # heading (an option tag under OPTIONS) starts something else
    aligned = (abs(a.bbox[0] - b.bbox[0]) <= 0.5 * size
               or abs((a.bbox[0] + a.bbox[2]) - (b.bbox[0] + b.bbox[2])) <= size)
    return -0.5 * size <= gap <= 0.4 * size and aligned


def _merge_labels(blocks: list[Block]) -> list[Block]:
    """'Part I' / 'Chapter 3' set on its own line above the chapter title: one heading."""
    out: list[Block] = []
    skip = False
    for i, b in enumerate(blocks):
        if skip:
            skip = False
            continue
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if (b.type == "title" and _LABEL_ONLY.match(b.content) and nxt is not None and nxt.type == "title"
                and nxt.page_idx == b.page_idx):
            merged = Block(type="title", content=f"{b.content.strip()} {nxt.content.strip()}", page_idx=b.page_idx,
                           bbox=(min(b.bbox[0], nxt.bbox[0]), b.bbox[1], max(b.bbox[2], nxt.bbox[2]), nxt.bbox[3])
                           if b.bbox and nxt.bbox else b.bbox,
                           features=dict(max((b, nxt), key=lambda x: x.features.get("font_size", 0)).features),
                           extra={**b.extra, **nxt.extra})
            merged.features["bold"] = bool(b.features.get("bold")) and bool(nxt.features.get("bold"))
            out.append(merged)
            skip = True
            continue
        out.append(b)
    return out
