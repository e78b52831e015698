"""Read MinerU output (every schema generation) into blocks; optionally run MinerU 4.x in process.

Formats are recognized by shape, not by file name:
- content list v1: a flat list of items with `type` and `page_idx`. magic-pdf 1.x has no bbox
  and uses `img_caption`; MinerU 2.x-4.x add `bbox` as integers 0-1000 of the page size and use
  `image_caption`.
- content list v2 (MinerU 4.x): a list of pages, each a list of `{type, content: {...}, bbox}`.
- middle.json 1.x/2.x: `{"pdf_info": [{page_idx, page_size, para_blocks, discarded_blocks}]}`
  with bboxes in PDF points.
- middle.json 4.x: `{"schema": "docvortex.middle", "pages": [{page_idx, blocks}]}` with bboxes as
  0-1 fractions and page sizes under `extensions.docvortex_layout.pages`.

Bboxes end in PDF points (top-left origin) using page sizes from the middle.json or the PDF
beside the file. MinerU's `text_level` / title `level` says "this is a heading", but its depth
is unreliable (the pipeline backend puts every title at level 1), so titles come out with
`level=None` and section filtering (`parsing.sections.assign_levels`) decides, exactly as for
PDF headings; MinerU's own level is kept in `features["mineru_level"]`.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
from pathlib import Path
from typing import Any, Callable

from bookindex.core.errors import InputError
from bookindex.core.limits import loads_bounded
from bookindex.core.model import Block
from bookindex.parsing.base import OutlineEntry, ParsedDocument
from bookindex.parsing.htmltable import html_table_to_markdown
from bookindex.parsing.pdf import read_outline
from bookindex.parsing.pdf_open import import_pymupdf

FURNITURE = {"discarded", "header", "footer", "page_number", "aside_text",
             "page_header", "page_footer", "page_aside_text"}
_SUFFIXES = ("_content_list_v2", "_content_list", "_middle_json", "_middle", "_model",
             "content_list_v2", "content_list", "middle_json", "middle")

FORMATS = ("content_list_v1", "content_list_v2", "middle_v1", "middle_v4")
MAX_PAGES = 100_000  # a page_idx of 1e9 made a document of a billion (empty) pages
MAX_COORD = 1e6  # points or normalized units; anything larger is a corrupt field
MAX_JSON_BYTES = 512 << 20


# -- format detection --------------------------------------------------------------------

def load_json(path: Path) -> Any:
    """Parse a JSON file, turning syntax errors into an InputError with line and column."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise InputError(f"{path}: {size / 2**20:.0f} MiB of JSON is more than the {MAX_JSON_BYTES >> 20} MiB "
                             "a MinerU output may have")
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a UTF-8 JSON file ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from None
    return loads_bounded(text, str(path))


def detect_format(data: Any) -> str | None:
    """Which MinerU output this decoded JSON is, or None when it is none of them."""
    if isinstance(data, dict):
        if data.get("schema") == "docvortex.middle" or (
                isinstance(data.get("pages"), list) and "pdf_info" not in data and "schema_version" in data):
            return "middle_v4"
        if "pdf_info" in data:
            return "middle_v1"
        return None
    if isinstance(data, list):
        if not data:
            return "content_list_v1"
        if all(isinstance(p, list) for p in data):
            return "content_list_v2"
        if all(isinstance(it, dict) for it in data) and any("page_idx" in it for it in data):
            return "content_list_v1"
    return None


def is_mineru_json(path: Path) -> bool:
    """Cheap check used when scanning folders: a .json file that holds MinerU output."""
    if path.suffix.lower() != ".json":
        return False
    try:
        return detect_format(load_json(path)) is not None
    except InputError:
        return False


def output_base(path: Path) -> str:
    """`doc` for `doc_content_list.json`, `doc_middle.json`, ...: groups one document's files."""
    stem = path.stem
    for suf in _SUFFIXES:
        if stem.endswith(suf) and len(stem) > len(suf):
            return stem[: -len(suf)].rstrip("_.-") or stem
        if stem == suf:
            return ""
    return stem


def find_outputs(directory: Path) -> list[Path]:
    """MinerU JSON files in a MinerU output folder, best first (middle, v2, v1)."""
    files = [p for p in sorted(directory.glob("*.json")) if is_mineru_json(p)]
    rank = {"middle_v4": 0, "middle_v1": 0, "content_list_v2": 1, "content_list_v1": 2}
    return sorted(files, key=lambda p: rank.get(detect_format(load_json(p)) or "", 9))


# -- small validated accessors ------------------------------------------------------------

class _Fields:
    """Typed field access that names the file and JSON path of anything malformed."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, msg: str) -> InputError:
        return InputError(f"{self.path}: malformed MinerU output: field {where} {msg}")

    def obj(self, v: Any, where: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(where, f"must be an object, got {_tname(v)}")
        return v

    def lst(self, v: Any, where: str, optional: bool = True) -> list[Any]:
        if v is None and optional:
            return []
        if not isinstance(v, list):
            raise self.fail(where, f"must be a list, got {_tname(v)}")
        return v

    def text(self, v: Any, where: str) -> str:
        if v is None:
            return ""
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return str(v)
        if not isinstance(v, str):
            raise self.fail(where, f"must be a string, got {_tname(v)}")
        return v

    def texts(self, v: Any, where: str) -> list[str]:
        """Captions/footnotes: a string or a list of strings."""
        if v is None:
            return []
        if isinstance(v, str):
            return [v] if v.strip() else []
        return [self.text(x, f"{where}[{i}]") for i, x in enumerate(self.lst(v, where)) if x]

    def page(self, v: Any, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise self.fail(where, f"must be a non-negative integer page index, got {_short(v)}")
        if v >= MAX_PAGES:
            raise self.fail(where, f"is {v:,}; a document has at most {MAX_PAGES:,} pages")
        return v

    def size(self, v: Any, where: str) -> tuple[float, float]:
        """A page size [width, height] in points: two finite positive numbers."""
        if (not isinstance(v, (list, tuple)) or len(v) != 2
                or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v)):
            raise self.fail(where, f"must be [width, height] in points, got {_short(v)}")
        if any(not math.isfinite(x) or x < 0 or x > MAX_COORD for x in v):
            raise self.fail(where, f"must be two numbers in [0, {MAX_COORD:g}] points, got {_short(v)}")
        return (float(v[0]), float(v[1]))

    def bbox(self, v: Any, where: str) -> tuple[float, float, float, float] | None:
        if v is None:
            return None
        if (not isinstance(v, (list, tuple)) or len(v) != 4
                or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v)):
            raise self.fail(where, f"must be 4 numbers [x0, y0, x1, y1], got {_short(v)}")
        if any(not math.isfinite(x) or abs(x) > MAX_COORD for x in v):
            raise self.fail(where, f"must hold finite coordinates within ±{MAX_COORD:g}, got {_short(v)}")
        return (float(v[0]), float(v[1]), float(v[2]), float(v[3]))


def f_page_count(path: Path, n: int) -> int:
    """metadata.document.page_count, within MAX_PAGES."""
    if not 0 <= n <= MAX_PAGES:
        raise InputError(f"{path}: malformed MinerU output: field metadata.document.page_count is {n:,}; "
                         f"a document has at most {MAX_PAGES:,} pages")
    return n


def _short(v: Any) -> str:
    """A value as shown in a one-line message: repr cut to 60 characters."""
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _tname(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null",
            bool: "a boolean", int: "a number", float: "a number"}.get(type(v), type(v).__name__)


# -- the reader ---------------------------------------------------------------------------

class _Reader:
    def __init__(self, path: Path, pdf_path: Path | None, image_dir: Path | None) -> None:
        self.path = path
        self.base_dir = path.parent
        self.f = _Fields(path)
        self.blocks: list[Block] = []
        self.warnings: list[str] = []
        self.page_sizes: dict[int, tuple[float, float]] = {}
        self.pdf_path = pdf_path
        self.image_dir = image_dir
        self.missing_images = 0
        self.skipped: dict[str, int] = {}
        self.max_page = -1

    # geometry -------------------------------------------------------------------------
    def to_points(self, bbox: tuple[float, float, float, float] | None, page: int, scale: str,
                  extra: dict[str, Any]) -> tuple[float, float, float, float] | None:
        """Convert a bbox in `scale` ("points", "norm1000", "norm1") to PDF points."""
        if bbox is None:
            return None
        if scale == "points":
            return bbox
        div = 1000.0 if scale == "norm1000" else 1.0
        size = self.page_sizes.get(page)
        if size is None:
            extra["bbox_norm"] = [round(x / div, 4) for x in bbox]
            return None
        w, h = size
        return (round(bbox[0] / div * w, 2), round(bbox[1] / div * h, 2),
                round(bbox[2] / div * w, 2), round(bbox[3] / div * h, 2))

    # images ---------------------------------------------------------------------------
    def image(self, ref: str | None, page: int) -> str | None:
        """Resolve an image reference relative to the JSON file; copy it into image_dir."""
        if not ref:
            return None
        p = Path(ref)
        cands = [p] if p.is_absolute() else [self.base_dir / p, self.base_dir / "images" / p,
                                              self.base_dir / "images" / p.name]
        found = next((c for c in cands if c.is_file()), None)
        if found is None:
            self.missing_images += 1
            return None
        if self.image_dir is not None:
            self.image_dir.mkdir(parents=True, exist_ok=True)
            dest = self.image_dir / f"p{page + 1:04d}-{found.name}"
            if not dest.exists():
                shutil.copyfile(found, dest)
            found = dest
        return str(found.resolve())

    # block emission ---------------------------------------------------------------------
    def add(self, btype: str, content: str, page: int, bbox: Any, scale: str,
            features: dict[str, Any] | None = None, **extra: Any) -> None:
        ex = {k: v for k, v in extra.items() if v not in (None, "", [])}
        pts = self.to_points(bbox, page, scale, ex)
        self.max_page = max(self.max_page, page)
        self.blocks.append(Block(type=btype, content=content, page_idx=page, bbox=pts,
                                 features=features or {}, extra=ex))

    def skip(self, kind: str, page: int) -> None:
        self.skipped[kind] = self.skipped.get(kind, 0) + 1
        self.max_page = max(self.max_page, page)

    def title(self, text: str, page: int, bbox: Any, scale: str, level: Any) -> None:
        feats: dict[str, Any] = {"mineru_level": level if isinstance(level, int) else None}
        pts = self.to_points(bbox, page, scale, {}) if bbox is not None else None
        if bbox is not None and len(text) <= 80:
            # One-line heading: its box height tracks the font size (line height ~1.2 em).
            # Without the page size, assume a 792 pt page: section filtering only ranks sizes.
            if pts is not None:
                feats["font_size"] = round((pts[3] - pts[1]) / 1.2, 1)
                feats["font_size_source"] = "bbox"
            else:
                div = 1000.0 if scale == "norm1000" else 1.0
                feats["font_size"] = round((bbox[3] - bbox[1]) / div * 792.0 / 1.2, 1)
                feats["font_size_source"] = "bbox, page height assumed 792 pt"
        self.add("title", text.strip(), page, bbox, scale, feats)

    def table(self, html: str, page: int, bbox: Any, scale: str, caption: list[str],
              footnote: list[str], img: str | None) -> None:
        md = html_table_to_markdown(html) if html.strip().startswith("<") else html
        cap = "\n".join(caption)
        # Like the PDF parser: content is the table itself; the caption rides in extra
        # (Node.content adds it for search).
        self.add("table", md or cap, page, bbox, scale, markdown=md, html=html if html.startswith("<") else None,
                 caption=cap, footnote="\n".join(footnote), image_path=self.image(img, page))

    def picture(self, page: int, bbox: Any, scale: str, caption: list[str], footnote: list[str],
                img: str | None, body: str = "") -> None:
        cap = "\n".join(caption)
        content = "\n".join(x for x in (cap, body) if x)
        self.add("image", content, page, bbox, scale, caption=cap, footnote="\n".join(footnote),
                 image_path=self.image(img, page), ocr_text=body or None)

    def finish(self, fmt: str, page_count: int | None, outline: list[OutlineEntry]) -> ParsedDocument:
        if self.missing_images:
            self.warnings.append(f"{self.path}: {self.missing_images} image file(s) referenced but not "
                                 f"found beside the JSON (expected under {self.base_dir / 'images'})")
        if any("bbox_norm" in b.extra for b in self.blocks):
            self.warnings.append(f"{self.path}: page sizes unknown, so boxes stay normalized (extra.bbox_norm);"
                                 f" put the middle.json or the PDF beside the file to get points")
        pages = max(page_count or 0, self.max_page + 1)
        sizes = [self.page_sizes.get(i, (0.0, 0.0)) for i in range(pages)] if self.page_sizes else []
        return ParsedDocument(blocks=self.blocks, page_count=pages, parser="mineru", outline=outline,
                              page_sizes=sizes, warnings=self.warnings,
                              meta={"mineru_format": fmt, "skipped": dict(self.skipped),
                                    "pdf": str(self.pdf_path) if self.pdf_path else None},
                              levels_final=False)


# -- content list v1 ----------------------------------------------------------------------

def _read_content_list_v1(r: _Reader, data: list[Any]) -> None:
    f = r.f
    has_bbox = any(isinstance(it, dict) and it.get("bbox") is not None for it in data)
    scale = "norm1000" if has_bbox else "points"
    for i, raw in enumerate(data):
        w = f"[{i}]"
        it = f.obj(raw, w)
        t = f.text(it.get("type"), f"{w}.type")
        if not t:
            raise f.fail(f"{w}.type", "is missing")
        page = f.page(it.get("page_idx"), f"{w}.page_idx")
        bbox = f.bbox(it.get("bbox"), f"{w}.bbox")
        if t in FURNITURE:
            r.skip(t, page)
            continue
        if t == "text" or t == "title":
            text = f.text(it.get("text"), f"{w}.text")
            level = it.get("text_level")
            if t == "title" or (level not in (None, 0, False)):
                r.title(text, page, bbox, scale, level)
            elif text.strip():
                r.add("text", text, page, bbox, scale)
        elif t in ("ref_text", "page_footnote", "phonetic"):
            text = f.text(it.get("text"), f"{w}.text")
            if text.strip():
                r.add("text", text, page, bbox, scale, page_footnote=True if t == "page_footnote" else None)
        elif t == "image" or t == "chart":
            cap = f.texts(it.get("image_caption", it.get("img_caption", it.get("chart_caption"))), f"{w}.image_caption")
            foot = f.texts(it.get("image_footnote", it.get("img_footnote", it.get("chart_footnote"))), f"{w}.image_footnote")
            r.picture(page, bbox, scale, cap, foot, f.text(it.get("img_path"), f"{w}.img_path") or None,
                      f.text(it.get("content"), f"{w}.content"))
        elif t == "table":
            r.table(f.text(it.get("table_body"), f"{w}.table_body"), page, bbox, scale,
                    f.texts(it.get("table_caption"), f"{w}.table_caption"),
                    f.texts(it.get("table_footnote"), f"{w}.table_footnote"),
                    f.text(it.get("img_path"), f"{w}.img_path") or None)
        elif t == "equation":
            latex = _strip_math(f.text(it.get("text"), f"{w}.text"))
            r.add("equation", latex, page, bbox, scale, latex=latex,
                  image_path=r.image(f.text(it.get("img_path"), f"{w}.img_path") or None, page))
        elif t in ("list", "index"):
            items = [f.text(x, f"{w}.list_items[{k}]") for k, x in enumerate(f.lst(it.get("list_items"), f"{w}.list_items"))]
            text = "\n".join(x for x in items if x.strip()) or f.text(it.get("text"), f"{w}.text")
            if text.strip():
                r.add("list", text, page, bbox, scale, toc=True if t == "index" else None)
        elif t == "code":
            body = f.text(it.get("code_body"), f"{w}.code_body")
            r.add("code", body, page, bbox, scale, language=it.get("guess_lang"),
                  caption="\n".join(f.texts(it.get("code_caption"), f"{w}.code_caption")))
        else:
            text = f.text(it.get("text"), f"{w}.text")
            if text.strip():
                r.warnings.append(f"{r.path}: item {w} has unknown type {t!r}; kept as text")
                r.add("text", text, page, bbox, scale)
            else:
                r.skip(t, page)


# -- content list v2 ----------------------------------------------------------------------

def _spans(f: _Fields, v: Any, where: str) -> str:
    """Join v2 inline spans: text as is, inline math as $...$, links by their text."""
    if isinstance(v, str):
        return v
    out: list[str] = []
    for k, s in enumerate(f.lst(v, where)):
        s = f.obj(s, f"{where}[{k}]")
        c = s.get("content")
        if isinstance(c, list):
            c = _spans(f, c, f"{where}[{k}].content")
        c = f.text(c, f"{where}[{k}].content")
        out.append(f"${c}$" if s.get("type") == "equation_inline" else c)
    return "".join(out)


def _read_content_list_v2(r: _Reader, data: list[Any]) -> None:
    f = r.f
    for p, page_items in enumerate(data):
        for i, raw in enumerate(f.lst(page_items, f"[{p}]", optional=False)):
            w = f"[{p}][{i}]"
            it = f.obj(raw, w)
            t = f.text(it.get("type"), f"{w}.type")
            if not t:
                raise f.fail(f"{w}.type", "is missing")
            c = f.obj(it.get("content", {}), f"{w}.content")
            bbox = f.bbox(it.get("bbox"), f"{w}.bbox")
            sc = "norm1000"
            if t in FURNITURE:
                r.skip(t, p)
            elif t == "title":
                r.title(_spans(f, c.get("title_content"), f"{w}.content.title_content"), p, bbox, sc, c.get("level"))
            elif t in ("paragraph", "page_footnote"):
                key = "paragraph_content" if t == "paragraph" else "page_footnote_content"
                text = _spans(f, c.get(key), f"{w}.content.{key}")
                if text.strip():
                    r.add("text", text, p, bbox, sc, page_footnote=True if t == "page_footnote" else None)
            elif t in ("list", "index"):
                items = [_spans(f, f.obj(x, f"{w}.content.list_items[{k}]").get("item_content"),
                                f"{w}.content.list_items[{k}].item_content")
                         for k, x in enumerate(f.lst(c.get("list_items"), f"{w}.content.list_items"))]
                text = "\n".join(x for x in items if x.strip())
                if text:
                    r.add("list", text, p, bbox, sc, toc=True if t == "index" else None)
            elif t == "table":
                src = f.obj(c.get("image_source") or {}, f"{w}.content.image_source")
                r.table(f.text(c.get("html"), f"{w}.content.html"), p, bbox, sc,
                        [_spans(f, x, f"{w}.content.table_caption") for x in f.lst(c.get("table_caption"), f"{w}.content.table_caption")],
                        [_spans(f, x, f"{w}.content.table_footnote")
                         for x in f.lst(c.get("table_footnote"), f"{w}.content.table_footnote")],
                        f.text(src.get("path"), f"{w}.content.image_source.path") or None)
            elif t in ("image", "chart"):
                src = f.obj(c.get("image_source") or {}, f"{w}.content.image_source")
                r.picture(p, bbox, sc,
                          [_spans(f, x, f"{w}.content.{t}_caption") for x in f.lst(c.get(f"{t}_caption"), f"{w}.content.{t}_caption")],
                          [_spans(f, x, f"{w}.content.{t}_footnote") for x in f.lst(c.get(f"{t}_footnote"), f"{w}.content.{t}_footnote")],
                          f.text(src.get("path"), f"{w}.content.image_source.path") or None,
                          f.text(c.get("content") if isinstance(c.get("content"), str) else None, f"{w}.content.content"))
            elif t == "equation_interline":
                latex = _strip_math(f.text(c.get("math_content"), f"{w}.content.math_content"))
                img_src: dict[str, Any] = c["image_source"] if isinstance(c.get("image_source"), dict) else {}
                r.add("equation", latex, p, bbox, sc, latex=latex, image_path=r.image(img_src.get("path"), p))
            elif t in ("code", "algorithm"):
                body = _spans(f, c.get(f"{t}_content"), f"{w}.content.{t}_content")
                cap = [_spans(f, x, f"{w}.content.{t}_caption") for x in f.lst(c.get(f"{t}_caption"), f"{w}.content.{t}_caption")]
                r.add("code", body, p, bbox, sc, language=c.get("code_language"), caption="\n".join(cap))
            else:
                r.warnings.append(f"{r.path}: item {w} has unknown type {t!r}; skipped")
                r.skip(t, p)


# -- middle.json 1.x/2.x (pdf_info) -------------------------------------------------------

def _line_text(f: _Fields, blk: dict[str, Any], where: str) -> tuple[str, list[float]]:
    """Text of a block's lines (spans joined; inline math as $...$) and its line heights."""
    lines_out: list[str] = []
    heights: list[float] = []
    for li, line in enumerate(f.lst(blk.get("lines"), f"{where}.lines")):
        line = f.obj(line, f"{where}.lines[{li}]")
        parts = []
        for si, span in enumerate(f.lst(line.get("spans"), f"{where}.lines[{li}].spans")):
            span = f.obj(span, f"{where}.lines[{li}].spans[{si}]")
            st = span.get("type")
            c = f.text(span.get("content"), f"{where}.lines[{li}].spans[{si}].content")
            if st == "inline_equation":
                c = f"${c}$"
            elif st == "table":
                c = f.text(span.get("html"), f"{where}.lines[{li}].spans[{si}].html") or c
            parts.append(c)
        lb = f.bbox(line.get("bbox"), f"{where}.lines[{li}].bbox")
        if lb:
            heights.append(lb[3] - lb[1])
        lines_out.append("".join(parts))
    # MinerU joins lines of a paragraph with spaces (hyphenated breaks already resolved).
    return " ".join(x.strip() for x in lines_out if x.strip()), heights


def _first_span_attr(f: _Fields, blk: dict[str, Any], key: str, where: str) -> str | None:
    for li, line in enumerate(f.lst(blk.get("lines"), f"{where}.lines")):
        for span in f.lst(f.obj(line, f"{where}.lines[{li}]").get("spans"), f"{where}.lines[{li}].spans"):
            if isinstance(span, dict) and span.get(key):
                return str(span[key])
    return None


def _read_middle_v1(r: _Reader, data: dict[str, Any]) -> None:
    f = r.f
    pages = f.lst(data.get("pdf_info"), "pdf_info", optional=False)
    for pi, raw_page in enumerate(pages):
        pw = f"pdf_info[{pi}]"
        page = f.obj(raw_page, pw)
        pidx = f.page(page.get("page_idx", pi), f"{pw}.page_idx")
        size = page.get("page_size")
        if size is not None:
            r.page_sizes[pidx] = f.size(size, f"{pw}.page_size")
        for _ in f.lst(page.get("discarded_blocks"), f"{pw}.discarded_blocks"):
            r.skip("discarded", pidx)
        for bi, raw in enumerate(f.lst(page.get("para_blocks"), f"{pw}.para_blocks")):
            w = f"{pw}.para_blocks[{bi}]"
            blk = f.obj(raw, w)
            t = f.text(blk.get("type"), f"{w}.type")
            if not t:
                raise f.fail(f"{w}.type", "is missing")
            bbox = f.bbox(blk.get("bbox"), f"{w}.bbox")
            if t in FURNITURE:
                r.skip(t, pidx)
                continue
            if t in ("image", "table", "chart", "code"):
                subs: dict[str, list[str]] = {}
                body_ref = None
                html = ""
                for si, sub in enumerate(f.lst(blk.get("blocks"), f"{w}.blocks")):
                    sw = f"{w}.blocks[{si}]"
                    sub = f.obj(sub, sw)
                    st = f.text(sub.get("type"), f"{sw}.type")
                    text, _ = _line_text(f, sub, sw)
                    subs.setdefault(st.rsplit("_", 1)[-1], []).append(text)
                    if st.endswith("_body"):
                        body_ref = _first_span_attr(f, sub, "image_path", sw)
                        html = _first_span_attr(f, sub, "html", sw) or html
                cap, foot, body = subs.get("caption", []), subs.get("footnote", []), subs.get("body", [])
                if t == "table":
                    r.table(html or "\n".join(body), pidx, bbox, "points", cap, foot, body_ref)
                elif t == "code":
                    r.add("code", "\n".join(body), pidx, bbox, "points", caption="\n".join(cap),
                          language=blk.get("guess_lang"))
                else:
                    r.picture(pidx, bbox, "points", cap, foot, body_ref)
                continue
            if t == "list" and blk.get("blocks"):
                items = [_line_text(f, f.obj(s, f"{w}.blocks[{k}]"), f"{w}.blocks[{k}]")[0]
                         for k, s in enumerate(f.lst(blk.get("blocks"), f"{w}.blocks"))]
                text = "\n".join(x for x in items if x)
            else:
                text, heights = _line_text(f, blk, w)
            if t == "title":
                r.title(text, pidx, bbox, "points", blk.get("level"))
                if heights:
                    r.blocks[-1].features["font_size"] = round(sorted(heights)[len(heights) // 2] / 1.2, 1)
                    r.blocks[-1].features["font_size_source"] = "line_bbox"
            elif t == "interline_equation":
                latex = _strip_math(text)
                r.add("equation", latex, pidx, bbox, "points", latex=latex,
                      image_path=r.image(_first_span_attr(f, blk, "image_path", w), pidx))
            elif t in ("list", "index"):
                if text:
                    r.add("list", text, pidx, bbox, "points", toc=True if t == "index" else None)
            elif text.strip():
                r.add("text", text, pidx, bbox, "points")


# -- middle.json 4.x (docvortex.middle) ---------------------------------------------------

def _v4_inline(f: _Fields, v: Any, where: str) -> str:
    return _spans(f, v, where) if isinstance(v, list) else f.text(v, where)


def _read_middle_v4(r: _Reader, data: dict[str, Any]) -> None:
    f = r.f
    ext = data.get("extensions")
    layout = ext.get("docvortex_layout") if isinstance(ext, dict) else None
    if isinstance(layout, dict):
        for k, pg in enumerate(f.lst(layout.get("pages"), "extensions.docvortex_layout.pages")):
            pg = f.obj(pg, f"extensions.docvortex_layout.pages[{k}]")
            wv, hv = pg.get("width_pt"), pg.get("height_pt")
            if isinstance(wv, (int, float)) and isinstance(hv, (int, float)):
                where = f"extensions.docvortex_layout.pages[{k}]"
                r.page_sizes[f.page(pg.get("page_idx", k), f"{where}.page_idx")] = f.size([wv, hv], f"{where}.width_pt")
    pages = f.lst(data.get("pages"), "pages", optional=False)
    for pi, raw_page in enumerate(pages):
        pw = f"pages[{pi}]"
        page = f.obj(raw_page, pw)
        pidx = f.page(page.get("page_idx", pi), f"{pw}.page_idx")
        r.max_page = max(r.max_page, pidx)
        for bi, raw in enumerate(f.lst(page.get("blocks"), f"{pw}.blocks")):
            w = f"{pw}.blocks[{bi}]"
            blk = f.obj(raw, w)
            t = f.text(blk.get("type"), f"{w}.type")
            if not t:
                raise f.fail(f"{w}.type", "is missing")
            bbox = f.bbox(blk.get("bbox"), f"{w}.bbox")
            sc = "norm1"
            if t in FURNITURE:
                r.skip(t, pidx)
            elif t in ("doc_title", "paragraph_title", "title"):
                r.title(_v4_inline(f, blk.get("content"), f"{w}.content"), pidx, bbox, sc, blk.get("level"))
            elif t in ("text", "ref_text", "page_footnote"):
                text = _v4_inline(f, blk.get("content"), f"{w}.content")
                if not text.strip():
                    continue
                prev = r.blocks[-1] if r.blocks else None
                if blk.get("continues_prev") and prev is not None and prev.type == "text":
                    # A paragraph continued from the previous page: one node spanning both pages.
                    prev.content = prev.content.rstrip() + " " + text.lstrip()
                    prev.extra["page_end_idx"] = pidx
                    continue
                r.add("text", text, pidx, bbox, sc, page_footnote=True if t == "page_footnote" else None)
            elif t == "equation":
                latex = _strip_math(f.text(blk.get("content"), f"{w}.content"))
                r.add("equation", latex, pidx, bbox, sc, latex=latex,
                      image_path=r.image(f.text(blk.get("image_path"), f"{w}.image_path") or None, pidx))
            elif t in ("list", "index"):
                items = _v4_list_items(f, blk, w)
                if items:
                    r.add("list", "\n".join(items), pidx, bbox, sc, toc=True if t == "index" else None)
            elif t in ("image", "table", "chart", "code"):
                cap: list[str] = []
                foot: list[str] = []
                body: dict[str, Any] = {}
                for si, sub in enumerate(f.lst(blk.get("content"), f"{w}.content")):
                    sw = f"{w}.content[{si}]"
                    sub = f.obj(sub, sw)
                    st = f.text(sub.get("type"), f"{sw}.type")
                    if st.endswith("_caption"):
                        cap.append(_v4_inline(f, sub.get("content"), f"{sw}.content"))
                    elif st.endswith("_footnote"):
                        foot.append(_v4_inline(f, sub.get("content"), f"{sw}.content"))
                    elif st.endswith("_body"):
                        body = sub
                        body["_where"] = sw
                if not body:
                    raise f.fail(f"{w}.content", f"has no {t}_body block")
                bw = body.pop("_where")
                btext = _v4_inline(f, body.get("content"), f"{bw}.content")
                ref = f.text(body.get("image_path"), f"{bw}.image_path") or None
                if t == "table":
                    r.table(btext, pidx, bbox, sc, cap, foot, ref)
                elif t == "code":
                    r.add("code", btext, pidx, bbox, sc, caption="\n".join(cap), language=blk.get("guess_lang"))
                else:
                    r.picture(pidx, bbox, sc, cap, foot, ref, btext)
            else:
                text = _v4_inline(f, blk.get("content"), f"{w}.content") if not isinstance(blk.get("content"), dict) else ""
                r.warnings.append(f"{r.path}: block {w} has unknown type {t!r}; " + ("kept as text" if text.strip() else "skipped"))
                if text.strip():
                    r.add("text", text, pidx, bbox, sc)


def _v4_list_items(f: _Fields, blk: dict[str, Any], where: str) -> list[str]:
    out: list[str] = []
    for k, child in enumerate(f.lst(blk.get("content"), f"{where}.content")):
        cw = f"{where}.content[{k}]"
        child = f.obj(child, cw)
        if child.get("type") in ("list", "index"):
            out.extend("  " + x for x in _v4_list_items(f, child, cw))
        else:
            text = _v4_inline(f, child.get("content"), f"{cw}.content")
            if text.strip():
                out.append(text.strip())
    return out


def _strip_math(s: str) -> str:
    s = s.strip()
    for a, b in (("$$", "$$"), ("\\[", "\\]"), ("$", "$")):
        if s.startswith(a) and s.endswith(b) and len(s) >= len(a) + len(b):
            return s[len(a): len(s) - len(b)].strip()
    return s


# -- companions: page sizes and outline from the middle.json or PDF beside the file -------

def _companion_pdf(path: Path) -> Path | None:
    base = output_base(path)
    names = [f"{base}.pdf", f"{base}_origin.pdf", f"{base}_layout.pdf"] if base else []
    for d in (path.parent, path.parent.parent):
        for n in names:
            if (d / n).is_file():
                return d / n
    pdfs = [p for p in path.parent.glob("*.pdf") if not p.name.endswith(("_layout.pdf", "_span.pdf", "_model.pdf"))]
    return pdfs[0] if len(pdfs) == 1 else None


def _companion_middle(path: Path) -> Path | None:
    base = output_base(path)
    for p in sorted(path.parent.glob("*.json")):
        if p != path and output_base(p) == base and "middle" in p.stem:
            return p
    return None


def _pdf_info(pdf: Path) -> tuple[dict[int, tuple[float, float]], list[OutlineEntry], int]:
    """Page sizes (points), outline and page count of the PDF the output was made from."""
    pymupdf = import_pymupdf()  # PyMuPDF itself is imported only when a PDF is beside the JSON
    try:
        with pymupdf.open(pdf) as doc:
            sizes = {i: (float(p.rect.width), float(p.rect.height)) for i, p in enumerate(doc)}
            outline = read_outline(doc)  # same bookmarks (with target points) as the PDF parser
            return sizes, outline, doc.page_count
    except Exception as e:  # a broken companion PDF must not stop reading the JSON
        raise InputError(f"{pdf}: cannot read the PDF beside the MinerU output ({e})") from None


# -- public entry points ------------------------------------------------------------------

_READERS: dict[str, Callable[[_Reader, Any], None]] = {
    "content_list_v1": _read_content_list_v1,
    "content_list_v2": _read_content_list_v2,
    "middle_v1": _read_middle_v1,
    "middle_v4": _read_middle_v4,
}


def parse_mineru(path: str | Path, *, pdf_path: str | Path | None = None, image_dir: str | Path | None = None,
                 progress: bool = False, data: Any = None) -> ParsedDocument:
    """Read one MinerU output (a JSON file or an output folder) into a ParsedDocument.

    `pdf_path` is the source PDF when it is not beside the JSON; it supplies page sizes for
    content lists and the outline for section filtering. `image_dir`: copy referenced images
    there. `data`: already-decoded JSON (in-process MinerU runs).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_dir():
        outs = find_outputs(path)
        if not outs:
            raise InputError(f"{path}: folder holds no MinerU output (*_middle.json or *_content_list*.json)")
        path = outs[0]
    if data is None:
        data = load_json(path)
    fmt = detect_format(data)
    if fmt is None:
        raise InputError(f"{path}: not a MinerU output: expected a content list (list of items with "
                         f"'type' and 'page_idx'), content_list_v2 (list of pages) or middle.json "
                         f"(object with 'pdf_info' or schema 'docvortex.middle'); got {_tname(data)}"
                         + (f" with keys {sorted(data)[:6]}" if isinstance(data, dict) else ""))
    pdf = Path(pdf_path) if pdf_path else _companion_pdf(path)
    r = _Reader(path, pdf, Path(image_dir) if image_dir else None)
    outline: list[OutlineEntry] = []
    page_count = None
    if pdf is not None and pdf.is_file():
        sizes, outline, page_count = _pdf_info(pdf)
        r.page_sizes.update(sizes)
    elif fmt.startswith("content_list"):
        mid = _companion_middle(path)
        if mid is not None:
            mdata = load_json(mid)
            mfmt = detect_format(mdata)
            if mfmt in ("middle_v1", "middle_v4"):
                probe = _Reader(mid, None, None)
                _READERS[mfmt](probe, mdata)
                r.page_sizes.update(probe.page_sizes)
    _READERS[fmt](r, data)
    if fmt == "middle_v4" and isinstance(data.get("metadata"), dict):
        doc_meta = data["metadata"].get("document")
        if isinstance(doc_meta, dict) and isinstance(doc_meta.get("page_count"), int):
            page_count = max(page_count or 0, f_page_count(path, doc_meta["page_count"]))
    if fmt == "middle_v1":
        page_count = max(page_count or 0, len(data["pdf_info"]))
    if fmt == "content_list_v2":
        page_count = max(page_count or 0, len(data))
    return r.finish(fmt, page_count, outline)


def mineru_available() -> bool:
    try:
        return importlib.util.find_spec("mineru") is not None and importlib.util.find_spec("mineru.parser") is not None
    except (ImportError, ValueError):
        return False


HOW_TO_PRODUCE = (
    "install MinerU 4.x (`pip install 'mineru>=4'`) and rerun with --parser mineru, or produce the "
    "JSON yourself: python -c \"from mineru.parser import parse; "
    "open('OUT_middle.json','w').write(parse('FILE.pdf', tier='flash', ocr_mode='txt').to_json())\" "
    "and index OUT_middle.json (any MinerU content_list.json or middle.json works too)"
)


def run_mineru(pdf: str | Path, *, work_dir: str | Path, image_dir: str | Path | None = None,
               progress: bool = False) -> ParsedDocument:
    """Run MinerU 4.x in process on a PDF (flash tier, text layer only: no models, no downloads).

    The result is saved under `work_dir` (middle.json + images) and read back with the
    middle.json reader, so in-process and offline runs give identical trees.
    """
    pdf = Path(pdf)
    if not mineru_available():
        raise InputError(f"{pdf}: --parser mineru needs the `mineru` package, which is not installed: {HOW_TO_PRODUCE}")
    try:  # deferred: MinerU is an optional heavy dependency (the `mineru` extra)
        from mineru.parser import parse
        from mineru.parser.writer import FileBasedDataWriter
    except ImportError as e:
        raise InputError(f"{pdf}: the installed mineru package cannot be used in process ({e}); {HOW_TO_PRODUCE}") from None
    out = Path(work_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        result = parse(pdf, tier="flash", ocr_mode="txt")
        result.save(FileBasedDataWriter(str(out)))
    except ImportError as e:  # MinerU imports most of its dependencies lazily
        raise InputError(f"{pdf}: the installed mineru package is missing a dependency ({e}); "
                         f"reinstall it with its dependencies: pip install 'mineru>=4'") from None
    except Exception as e:  # MinerU raises many kinds; name the file and the cause
        raise InputError(f"{pdf}: MinerU failed ({type(e).__name__}: {e})") from None
    middle = out / "middle_json.json"
    if not middle.is_file():
        cands = sorted(out.glob("*middle*.json"))
        if not cands:
            raise InputError(f"{pdf}: MinerU wrote no middle.json under {out}")
        middle = cands[0]
    parsed = parse_mineru(middle, pdf_path=pdf, image_dir=image_dir, progress=progress)
    parsed.meta["mineru_in_process"] = True
    return parsed


__all__ = ["parse_mineru", "run_mineru", "detect_format", "is_mineru_json", "find_outputs",
           "output_base", "mineru_available", "load_json", "FORMATS"]

