"""Markdown and plain-text documents to blocks with final heading levels.

Help-center corpora and converted manuals arrive as Markdown: ATX (`## x`) and Setext (underlined)
headings become sections, pipe tables table nodes, fenced code code nodes, lists list nodes,
paragraphs text nodes. Parsing uses markdown-it-py (CommonMark + GFM tables), which is already a
dependency of rich. Heading levels are known, so `levels_final=True` and section filtering keeps
them; levels are compressed to 1..k so `#` then `###` nests as two levels, not three.
Markdown has no pages: every block is on page 0 and carries its source line span in
`extra["lines"]` (1-based, inclusive). Plain text splits pages on form feeds.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bookindex.core.errors import InputError
from bookindex.core.model import Block
from bookindex.parsing.base import ParsedDocument
from bookindex.parsing.htmltable import html_table_rows, html_table_to_markdown, rows_to_markdown
from bookindex.parsing.textdecode import decode_text

_TABLE_CAP = re.compile(r"^\s*(?:\*\*|_)?(Table|Tab\.)\s+[\w.\-]+\s*[:.]", re.I)
_FIG_CAP = re.compile(r"^\s*(?:\*\*|_)?(Figure|Fig\.)\s+[\w.\-]+\s*[:.]", re.I)
_IMG_ONLY = re.compile(r"^\s*!\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)\s*$")


def _read(path_or_text: str | Path, kind: str) -> tuple[str, Path | None]:
    if isinstance(path_or_text, Path) or ("\n" not in str(path_or_text) and len(str(path_or_text)) < 4096
                                          and Path(str(path_or_text)).suffix):
        p = Path(path_or_text)
        if not p.exists():
            raise InputError(f"{p}: no such file")
        if p.is_dir():
            raise InputError(f"{p}: is a folder, not a {kind} file")
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise InputError(f"{p}: cannot read ({e.strerror})") from None
        text = decode_text(raw, p, kind)
        return (text[1:] if text.startswith("\ufeff") else text), p
    return str(path_or_text), None


def _strip_front_matter(text: str) -> tuple[str, dict[str, str]]:
    """Blank out a leading YAML front matter block (keeping line numbers) and read simple keys."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return text, {}
    for i in range(1, min(len(lines), 200)):
        if lines[i].strip() in ("---", "..."):
            meta = {}
            for ln in lines[1:i]:
                m = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", ln)
                if m:
                    meta[m.group(1).lower()] = m.group(2).strip().strip("\"'")
            return "\n" * (i + 1) + "\n".join(lines[i + 1:]), meta
    return text, {}


def _plain(inline: Any) -> str:
    """Inline tokens to readable text: emphasis dropped, links by their text, code kept."""
    out: list[str] = []
    for t in inline.children or []:
        if t.type in ("text", "code_inline"):
            out.append(t.content)
        elif t.type in ("softbreak", "hardbreak"):
            out.append("\n" if t.type == "hardbreak" else " ")
        elif t.type == "image":
            out.append(t.content or "")
        elif t.type == "html_inline":
            continue
    return "".join(out).strip()


def _dense_levels(blocks: list[Block]) -> None:
    used = sorted({b.level for b in blocks if b.type == "title" and b.level})
    rank = {lv: i + 1 for i, lv in enumerate(used)}
    for b in blocks:
        if b.type == "title" and b.level:
            b.level = rank[b.level]


def _resolve_image(src: str, base: Path | None) -> str | None:
    if re.match(r"^[a-z]+://", src) or base is None:
        return None
    p = (base / src).resolve()
    return str(p) if p.is_file() else None


def parse_markdown(path_or_text: str | Path, *, name: str | None = None, image_dir: str | Path | None = None,
                   progress: bool = False) -> ParsedDocument:
    """Parse Markdown (a file path or the text itself) into blocks with final levels."""
    from markdown_it import MarkdownIt  # deferred: ~75 ms to import, and only Markdown input needs it

    text, path = _read(path_or_text, "Markdown")
    text, front = _strip_front_matter(text.replace("\r\n", "\n").replace("\r", "\n"))
    src_lines = text.split("\n")
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    tokens = md.parse(text)
    base = path.parent if path else None
    blocks: list[Block] = []
    warnings: list[str] = []

    def source(mp: list[int] | None) -> str:
        return "\n".join(src_lines[mp[0]:mp[1]]).strip("\n") if mp else ""

    def add(btype: str, content: str, mp: list[int] | None, level: int | None = None, **extra: Any) -> Block:
        ex = {k: v for k, v in extra.items() if v not in (None, "")}
        if mp:
            ex["lines"] = [mp[0] + 1, mp[1]]
        b = Block(type=btype, content=content, page_idx=0, level=level, extra=ex)
        blocks.append(b)
        return b

    i = 0
    n = len(tokens)
    while i < n:
        t = tokens[i]
        if t.level != 0:
            i += 1
            continue
        j = i + 1
        if t.nesting == 1:  # find the matching close token
            depth = 1
            while j < n and depth:
                depth += tokens[j].nesting
                j += 1
        tt = t.type
        if tt == "heading_open":
            title = _plain(tokens[i + 1])
            if title:
                add("title", title, t.map, level=int(t.tag[1]),
                    style="setext" if t.markup in ("=", "-") else "atx")
        elif tt == "paragraph_open":
            inline = tokens[i + 1]
            raw = inline.content
            m = _IMG_ONLY.match(raw)
            if m:
                alt, ref = m.group(1).strip(), m.group(2)
                add("image", alt, t.map, caption=alt, image_path=_resolve_image(ref, base), image_ref=ref)
            elif raw.strip().startswith("$$") and raw.strip().endswith("$$") and len(raw.strip()) > 4:
                latex = raw.strip()[2:-2].strip()
                add("equation", latex, t.map, latex=latex)
            else:
                para = _plain(inline)
                prev = blocks[-1] if blocks else None
                if prev is not None and prev.type == "table" and _TABLE_CAP.match(para) and not prev.extra.get("caption"):
                    _set_caption(prev, para)
                elif prev is not None and prev.type == "image" and _FIG_CAP.match(para):
                    _set_caption(prev, para, replace_alt=True)
                elif para:
                    add("text", para, t.map)
        elif tt in ("bullet_list_open", "ordered_list_open"):
            add("list", source(t.map), t.map, ordered=True if tt == "ordered_list_open" else None)
        elif tt == "table_open":
            rows: list[list[str]] = []
            for k in range(i, j):
                if tokens[k].type == "tr_open":
                    rows.append([])
                elif tokens[k].type == "inline" and rows:
                    rows[-1].append(_plain(tokens[k]))
            mdsrc = source(t.map)
            b = add("table", mdsrc, t.map, markdown=mdsrc, html=md.renderer.render(tokens[i:j], md.options, {}).strip())
            prev = blocks[-2] if len(blocks) > 1 else None
            if prev is not None and prev.type == "text" and _TABLE_CAP.match(prev.content):
                blocks.pop(-2)
                _set_caption(b, prev.content)
            b.extra["rows"] = len(rows)
        elif tt in ("fence", "code_block"):
            add("code", t.content.rstrip("\n"), t.map, language=(t.info or "").strip() or None)
        elif tt == "blockquote_open":
            quote = "\n".join(re.sub(r"^\s*>\s?", "", ln) for ln in source(t.map).split("\n")).strip()
            if quote:
                add("text", quote, t.map, blockquote=True)
        elif tt == "html_block":
            html = t.content.strip()
            if re.match(r"(?is)^<table\b", html):
                rows = html_table_rows(html)
                add("table", html_table_to_markdown(html), t.map, markdown=rows_to_markdown(rows), html=html)
            else:
                plain = re.sub(r"<[^>]+>", " ", html)
                plain = " ".join(plain.split())
                if plain:
                    add("text", plain, t.map, html=html)
        # hr and anything else: no content
        i = j
    _dense_levels(blocks)
    meta: dict[str, Any] = {"format": "markdown"}
    if front:
        meta["front_matter"] = front
    if name:
        meta["name"] = name
    return ParsedDocument(blocks=blocks, page_count=1, parser="markdown", warnings=warnings, meta=meta,
                          levels_final=True)


def _set_caption(b: Block, caption: str, replace_alt: bool = False) -> None:
    b.extra["caption"] = caption
    if b.type == "image" and (replace_alt or not b.content):
        if b.content and b.content != caption:
            b.extra["alt"] = b.content
        b.content = caption


# -- plain text ---------------------------------------------------------------------------

_NUM_HEAD = re.compile(r"^(\d{1,3}(?:\.\d{1,3})*)\.?\s+([A-Z][^\n]{0,78})$")
_WORD_HEAD = re.compile(r"^(Chapter|Part|Appendix)\s+([0-9IVXLC]+|[A-Z])\b[:.]?\s*(.{0,70})$", re.I)
_LIST_LINE = re.compile(r"^\s*(?:[-*\u2022+]|\d{1,3}[.)])\s+\S")


def parse_text(path_or_text: str | Path, *, name: str | None = None, image_dir: str | Path | None = None,
               progress: bool = False) -> ParsedDocument:
    """Plain text: paragraphs split on blank lines, pages on form feeds; numbered
    ("2.3 Title"), "Chapter N"/"Appendix B" and underlined lines become headings."""
    text, _path = _read(path_or_text, "text")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    blocks: list[Block] = []
    pages = text.split("\f")
    line_no = 0
    for pidx, page in enumerate(pages):
        paras: list[tuple[int, list[str]]] = []
        cur: list[str] = []
        start = line_no
        for k, ln in enumerate(page.split("\n")):
            if ln.strip():
                if not cur:
                    start = line_no + k
                cur.append(ln.rstrip())
            elif cur:
                paras.append((start, cur))
                cur = []
        if cur:
            paras.append((start, cur))
        line_no += page.count("\n")
        for start, lines in paras:
            _text_para(blocks, lines, pidx, start)
    _dense_levels(blocks)
    return ParsedDocument(blocks=blocks, page_count=max(1, len(pages)), parser="text",
                          meta={"format": "text", **({"name": name} if name else {})}, levels_final=True)


def _text_para(blocks: list[Block], lines: list[str], page: int, start: int) -> None:
    span = [start + 1, start + len(lines)]
    # Setext-style underline: "Title\n=====".
    if len(lines) >= 2 and re.fullmatch(r"\s*(=+|-+)\s*", lines[1]) and len(lines[0].strip()) <= 100:
        level = 1 if "=" in lines[1] else 2
        blocks.append(Block(type="title", content=lines[0].strip(), page_idx=page, level=level,
                            extra={"lines": [span[0], span[0] + 1]}))
        rest = lines[2:]
        if rest:
            _text_para(blocks, rest, page, start + 2)
        return
    if len(lines) == 1:
        s = lines[0].strip()
        if not s.endswith((".", ",", ";")) or _WORD_HEAD.match(s):
            m = _NUM_HEAD.match(s)
            w = _WORD_HEAD.match(s)
            if m:
                blocks.append(Block(type="title", content=s, page_idx=page, level=m.group(1).count(".") + 1,
                                    extra={"lines": span}))
                return
            if w:
                blocks.append(Block(type="title", content=s, page_idx=page, level=1, extra={"lines": span}))
                return
    if all(_LIST_LINE.match(ln) or ln.startswith((" ", "\t")) for ln in lines) and _LIST_LINE.match(lines[0]):
        blocks.append(Block(type="list", content="\n".join(lines), page_idx=page, extra={"lines": span}))
        return
    blocks.append(Block(type="text", content=" ".join(ln.strip() for ln in lines), page_idx=page,
                        extra={"lines": span}))


__all__ = ["parse_markdown", "parse_text"]
