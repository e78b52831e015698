"""Section filtering (BookRAG §4.2.2): which title candidates are real sections, at which level.

Three sources, best first: the PDF outline (bookmarks) matched to blocks by page ±1 and fuzzy
text; otherwise layout rules (font-size rank, bold, numbering depth, and filters for
table-of-contents pages, running heads, index letters, labels smaller than the body text, cover
pages, paper titles and author names, minor run-in headings); and,
when an LLM is available, the paper's batched LLM pass over the candidates, which sees the
rule levels as hints and the higher-level sections found so far (parsing.sections_llm).
Title blocks left with level None are demoted to text by build_tree.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace
from typing import Any

from rapidfuzz import fuzz

from bookindex.core.model import Block
from bookindex.core.protocols import LLM
from bookindex.parsing.base import OutlineEntry, ParsedDocument
from bookindex.parsing.numbering import norm_title, parse_numbering
from bookindex.parsing.sections_llm import llm_levels

_LEADER = re.compile(r"(?:\.\s*){4,}\s*\S{0,6}\s*$|\s\d{1,4}\s*$")
_TOC_HEAD = re.compile(r"^\s*(table of )?contents\s*$|^\s*inhaltsverzeichnis\s*$|^\s*sommaire\s*$", re.I)
OUTLINE_MATCH = 85.0


def assign_levels(parsed: ParsedDocument, *, use_outline: bool = True,
                  llm: LLM | None = None) -> list[Block]:
    """Return copies of the blocks with `level` set on real headings (others keep level None)."""
    blocks = [replace(b, features=dict(b.features), extra=dict(b.extra)) for b in parsed.blocks]
    if parsed.levels_final:
        return blocks
    for b in blocks:
        if b.type == "title":
            b.level = None
    if use_outline and parsed.outline:
        return apply_outline(blocks, parsed.outline)
    cands = filter_candidates(blocks, parsed.page_count)
    rule_levels(blocks, cands)
    if llm is not None and llm.available:
        llm_levels(blocks, cands, llm)
    return blocks


# -- outline ------------------------------------------------------------------------------

def apply_outline(blocks: list[Block], outline: list[OutlineEntry]) -> list[Block]:
    """Levels from the bookmarks: each entry claims the best-matching block on its page ±1
    (not on a neighbouring page of the printed contents: `toc_pages`).

    An entry that matches no block still opens its section: a title block is inserted where
    the outline order and the bookmark's target point say it belongs (see _insert_missing).
    """
    by_page: dict[int, list[int]] = defaultdict(list)
    for i, b in enumerate(blocks):
        if b.type in ("title", "text") and len(b.content) <= 250:
            by_page[b.page_idx].append(i)
    norms = {i: norm_title(blocks[i].content) for ids in by_page.values() for i in ids}
    # a line of the printed contents names the section too, a page before it: only a bookmark
    # that points at the contents page itself ("Contents") may claim a block there
    tocs = toc_pages(blocks)
    claimed: dict[int, OutlineEntry] = {}
    placed: list[int | None] = []  # per outline entry: its claimed block, None when missing/no page
    last = -1
    for e in outline:
        if e.page_idx is None:
            placed.append(None)
            continue
        want = norm_title(e.title)
        best, best_key = None, None
        for p in (e.page_idx, e.page_idx + 1, e.page_idx - 1):
            if p != e.page_idx and p in tocs:
                continue
            for i in by_page.get(p, ()):
                if i in claimed:
                    continue
                s = 100.0 if norms[i] == want else fuzz.ratio(norms[i], want)
                if s < OUTLINE_MATCH and blocks[i].type == "title" and want and len(want) >= 4:
                    s = max(s, fuzz.partial_ratio(norms[i], want) - 5 if len(norms[i]) >= len(want) - 2 else 0)
                if s < OUTLINE_MATCH:
                    continue
                key = (s, blocks[i].type == "title", i > last, p == e.page_idx)
                if best_key is None or key > best_key:
                    best, best_key = i, key
        placed.append(best)
        if best is None:
            continue
        claimed[best] = e
        last = best
    for i, b in enumerate(blocks):
        if i in claimed:
            b.type = "title"
            b.level = claimed[i].level
            b.extra["outline_title"] = claimed[i].title
        elif b.type == "title":
            b.level = None
    if any(p is None and e.page_idx is not None for e, p in zip(outline, placed)):
        blocks = _insert_missing(blocks, outline, placed)
    return blocks


def _insert_missing(blocks: list[Block], outline: list[OutlineEntry], placed: list[int | None]) -> list[Block]:
    """Insert a title for each outline entry that matched no block, keeping the outline order.

    The title goes after the block claimed by the nearest preceding entry and before the one
    claimed by the nearest following entry (when those are in order); within that span, on its
    page, before the first block below the bookmark's target point when one is known, else at
    the start of its page (or of the next page that has blocks)."""
    first_on_page: dict[int, int] = {}
    for i, b in enumerate(blocks):
        first_on_page.setdefault(b.page_idx, i)
    inserts: dict[int, list[Block]] = defaultdict(list)
    lo = 0
    for k, e in enumerate(outline):
        if e.page_idx is None:
            continue
        claimed_at = placed[k]
        if claimed_at is not None:
            lo = claimed_at + 1
            continue
        hi = next((p for p in placed[k + 1:] if p is not None), len(blocks))
        if hi < lo:  # the claimed blocks are out of outline order: only the lower bound holds
            hi = len(blocks)
        pos = _position_on_page(blocks, e, lo, hi)
        if pos is None:
            pos = first_on_page.get(e.page_idx)
            if pos is None:
                later = [i for p, i in first_on_page.items() if p > e.page_idx]
                pos = min(later) if later else len(blocks)
        pos = min(max(pos, lo), hi)
        extra: dict[str, Any] = {"from_outline": True}
        if e.y is not None:
            extra["outline_y"] = e.y
        inserts[pos].append(Block(type="title", content=e.title, page_idx=e.page_idx, level=e.level, extra=extra))
        lo = pos  # a later missing entry goes at or after this one (same position keeps order)
    out: list[Block] = []
    for i, b in enumerate(blocks):
        out.extend(inserts.get(i, ()))
        out.append(b)
    out.extend(inserts.get(len(blocks), ()))
    return out


def _position_on_page(blocks: list[Block], e: OutlineEntry, lo: int, hi: int) -> int | None:
    """Before the first block of e's page in [lo, hi) whose middle lies below the target point
    (skipping blocks wholly left of it: another column); after the last such block when the
    target is below them all. None when the point or the blocks' boxes are unknown."""
    if e.y is None:
        return None
    span = [(i, bbox) for i in range(lo, min(hi, len(blocks)))
            if blocks[i].page_idx == e.page_idx and (bbox := blocks[i].bbox)]
    if not span:
        return None
    for i, (_x0, y0, x1, y1) in span:
        if (y0 + y1) / 2 > e.y and (e.x is None or x1 > e.x):
            return i
    return span[-1][0] + 1


# -- candidates ---------------------------------------------------------------------------

def toc_pages(blocks: list[Block]) -> set[int]:
    """Pages of a printed table of contents: many lines ending in leaders/page numbers, in the
    front of the document (an index at the back looks the same but has real headings)."""
    last = max((b.page_idx for b in blocks), default=0)
    front = max(12, int(0.25 * (last + 1)))
    per_page: dict[int, list[Block]] = defaultdict(list)
    for b in blocks:
        if b.type in ("title", "text", "list", "equation") and b.page_idx < front:
            per_page[b.page_idx].append(b)
    out = set()
    weak = set()
    for p, bs in per_page.items():
        lines = [ln for b in bs for ln in _lines_of(b)]
        hits = sum(1 for ln in lines if _LEADER.search(ln) and re.search(r"[A-Za-z]", ln))
        dots = sum(1 for ln in lines if re.search(r"(?:\.\s*){4,}", ln))
        if (dots >= 3 and dots >= 0.3 * len(lines)) or (hits >= 5 and hits >= 0.6 * len(lines)):
            out.add(p)
        elif any(_TOC_HEAD.match(b.content) for b in bs) and hits >= 3:
            out.add(p)
        elif hits >= 2 and hits >= 0.6 * len(lines):
            weak.add(p)
    # the last page of a contents listing may hold only a few entries
    grown = True
    while grown:
        grown = False
        for p in sorted(weak - out):
            if p - 1 in out or p + 1 in out:
                out.add(p)
                grown = True
    return out


def _lines_of(b: Block) -> list[str]:
    # blocks join wrapped lines; leaders separate entries well enough for counting
    parts = re.split(r"(?<=\d)\s+(?=[A-Z0-9])", b.content) if re.search(r"(?:\.\s*){4,}", b.content) else [b.content]
    return [p for p in parts if p.strip()]


def _index_letter(t: str) -> bool:
    """A lone letter or number ("A", "B", "12", "3.4"): an index/glossary letter or a stray label,
    never a heading. Judged on the raw text, so a numbered heading whose words repeat its
    number ("1.1 Section 1.1") is kept; one CJK character is a word, not a letter."""
    letters = [c for c in t if c.isalpha()]
    if not letters:
        return True
    return len(letters) == 1 and ord(letters[0]) < 0x2E80


def _margin_key(t: str) -> str:
    """Running heads differ by their page numbers only."""
    return " ".join(re.sub(r"[\d\W_]+", " ", t.lower()).split())


def _running(pages: set[int]) -> bool:
    """A running head or foot recurs on neighbouring pages (every page or every other one); the
    same title at the top of two pages far apart (two sets of statements) is not one."""
    pg = sorted(pages)
    return any(b - a <= 2 for a, b in zip(pg, pg[1:]))


def _below_body(b: Block, t: str, body: float) -> bool:
    """A title candidate set smaller than the running text is a label, not a section heading
    (on the MMLongBench outlined PDFs: 311 such candidates, none of them an outline entry);
    a deep dotted number ("2.3.1 ...") still marks a heading."""
    fs = float(b.features.get("font_size") or 0)
    if not fs or fs >= body - 0.75:
        return False
    nb = parse_numbering(t)
    return not (nb and nb.kind == "dotted" and nb.depth >= 2)


LOCAL_PAGES = 5  # pages either side whose running text sets a page's body size
LOCAL_CHARS = 5000  # text a stretch of pages needs before its own body size counts


def _text_sizes(blocks: list[Block]) -> dict[int, Counter]:
    """Per page, the running text's characters by font size (to the half point)."""
    per_page: dict[int, Counter] = defaultdict(Counter)
    for b in blocks:
        if b.type == "text" and b.features.get("font_size"):
            per_page[b.page_idx][round(float(b.features["font_size"]) * 2) / 2] += len(b.content)
    return per_page


def _local_body(per_page: dict[int, Counter], pages: set[int], body: float) -> dict[int, float]:
    """Per page, the running text's size around it (`per_page`: `_text_sizes`) when that text
    is set smaller than the document's body (a report in 9 pt followed by exhibits in 11 pt): a
    heading of that stretch is not "smaller than the body" there. Never larger than the
    document's body size."""
    out: dict[int, float] = {}
    for p in pages:
        near: Counter = Counter()
        for q in range(p - LOCAL_PAGES, p + LOCAL_PAGES + 1):
            near.update(per_page.get(q, Counter()))
        if sum(near.values()) >= LOCAL_CHARS:
            size = near.most_common(1)[0][0]
            if size < body:
                out[p] = size
    return out


def filter_candidates(blocks: list[Block], page_count: int) -> list[int]:
    """Indices of title blocks that can be headings; demote TOC entries, margins, index letters."""
    tocs = toc_pages(blocks)
    per_page = _text_sizes(blocks)
    sizes_w: Counter = Counter()
    for on_page in per_page.values():
        sizes_w.update(on_page)
    body = sizes_w.most_common(1)[0][0] if sizes_w else 10.0
    local_body = _local_body(per_page, {b.page_idx for b in blocks}, body)
    # A cover page holds little running text; a paper's first page holds a lot and is content.
    first_text = sum(len(b.content) for b in blocks if b.page_idx == 0 and b.type in ("text", "list"))
    cover = page_count > 10 and first_text < 500
    sizes = [float(b.features.get("font_size", 0)) for b in blocks if b.type == "title"]
    top = max(sizes, default=0.0)
    title_only_first = top > 0 and page_count >= 3 and all(b.page_idx == 0 for b in blocks
                                       if b.type == "title" and float(b.features.get("font_size", 0)) >= top - 0.3)
    # Below a paper's title, author names: a regular (not bold) title style used several times on
    # the first page and nowhere else, never numbered; it would outrank the real sections.
    style_pages: dict[tuple, Counter] = defaultdict(Counter)
    numbered_styles = set()
    for b in blocks:
        if b.type == "title":
            style_pages[_style(b)[:2]][b.page_idx] += 1
            if parse_numbering(b.content):
                numbered_styles.add(_style(b)[:2])
    byline = {st for st, pg in style_pages.items() if title_only_first and not st[1] and set(pg) == {0}
              and pg[0] >= 2 and st not in numbered_styles}
    margin_pages: dict[str, set[int]] = defaultdict(set)
    for b in blocks:
        if b.extra.get("margin"):
            margin_pages[_margin_key(b.content)].add(b.page_idx)
    repeated = {k for k, pg in margin_pages.items() if _running(pg)}
    out = []
    for i, b in enumerate(blocks):
        if b.type != "title":
            continue
        t = b.content.strip()
        reason = None
        if b.page_idx in tocs:
            reason = "toc page"
        elif b.extra.get("margin") and float(b.features.get("font_size", 0)) < 1.12 * body and _margin_key(t) in repeated:
            # small text in the header/footer zone on two pages or more: a running head (the parser
            # drops those on three); a title there on one page only starts a section at the page top
            reason = "page margin"
        elif _index_letter(t):
            reason = "index letter or number"
        elif _below_body(b, t, local_body.get(b.page_idx, body)):
            reason = "smaller than body text"  # bold table headers, chart labels, fine print
        elif cover and b.page_idx == 0:
            reason = "cover page"
        elif b.page_idx == 0 and title_only_first and float(b.features.get("font_size", 0)) >= top - 0.3:
            reason = "document title"
        elif b.page_idx == 0 and _style(b)[:2] in byline:
            reason = "front matter"
        elif _LEADER.search(t) and re.search(r"(?:\.\s*){4,}", t):
            reason = "toc entry"
        elif _column_header(blocks, i):
            reason = "table column header"
        if reason:
            b.extra["not_heading"] = reason
            continue
        out.append(i)
    return _bodiless_pages(blocks, out)


# a page is "without body" when its text, list and table blocks hold no more than this many
# characters together: a cover, a title page, a brochure page of product names, a map
_BODY_CHARS = 40
_BODILESS_TITLES = 3  # ... and it holds at least this many heading candidates


def _bodiless_pages(blocks: list[Block], cands: list[int]) -> list[int]:
    """A page of heading candidates and no body (a cover: "Version 1.3", "Revised May 2016",
    "Produced by:", the publisher's address; a brochure page naming each wheel under "WHEELS")
    is the page's content set large: only its largest candidates head a section, the others are
    its text. As headings they were sections without a block, which no search can return."""
    body: Counter = Counter()
    for b in blocks:
        if b.type in ("text", "list", "table"):
            body[b.page_idx] += len(b.content.strip())
    body_pages = {p for p, n in body.items() if n > _BODY_CHARS}
    by_page: dict[int, list[int]] = defaultdict(list)
    for i in cands:
        by_page[blocks[i].page_idx].append(i)
    keep = []
    for page, idx in by_page.items():
        if page in body_pages or len(idx) < _BODILESS_TITLES:
            keep += idx
            continue
        top = max(float(blocks[i].features.get("font_size", 0)) for i in idx)
        for i in idx:
            if float(blocks[i].features.get("font_size", 0)) >= top - 0.3:
                keep.append(i)
            else:
                blocks[i].extra["not_heading"] = "page without body text"
    return sorted(keep)


def _column_header(blocks: list[Block], i: int) -> bool:
    """A line set just above a table, over its right-hand columns ("Fiscal Year 2022 2021",
    "December 31, 2020 2019"), heads the table's value columns, not a section: a section
    heading starts at the text's left edge or is centred over what it heads."""
    b = blocks[i]
    if b.bbox is None:
        return False
    low = b.bbox[3]
    for nxt in blocks[i + 1:i + 4]:
        if nxt.page_idx != b.page_idx or nxt.bbox is None:
            return False
        if nxt.type != "table":
            if len(nxt.content) > 60:
                return False
            low = max(low, nxt.bbox[3])  # a second header line ("2016 2015") between it and the table
            continue
        x0, y0, x1, _ = nxt.bbox
        size = float(b.features.get("font_size") or 10.0)
        width = x1 - x0
        near = -1.0 <= y0 - low <= 2.5 * size
        over = b.bbox[0] >= x0 + 0.25 * width and b.bbox[2] <= x1 + 2.0
        right = (b.bbox[0] + b.bbox[2]) / 2 > (x0 + x1) / 2 + 0.1 * width
        return near and over and right
    return False


# -- rules --------------------------------------------------------------------------------

def _style(b: Block) -> tuple[float, bool, bool]:
    """(size, bold, display): a run-in heading ranks below a display heading of the same font."""
    return (round(float(b.features.get("font_size", 0.0)) * 2) / 2, bool(b.features.get("bold")),
            not b.features.get("run_in"))


def rule_levels(blocks: list[Block], cands: list[int]) -> None:
    """Font-size rank (bold before regular at equal size), corrected by dotted numbering."""
    if not cands:
        return
    styles = Counter(_style(blocks[i]) for i in cands)
    # Merge sizes within 0.6pt (the same style rendered at slightly different sizes).
    canon: dict[tuple, tuple] = {}
    for st in sorted(styles, key=lambda s: -styles[s]):
        for c in list(set(canon.values())):
            if c[1:] == st[1:] and abs(c[0] - st[0]) <= 0.6:
                canon[st] = c
                break
        else:
            canon[st] = st
    # Numbering: depth-d dotted labels tell which style is level d.
    num_depth: dict[tuple, Counter] = defaultdict(Counter)
    for i in cands:
        nb = parse_numbering(blocks[i].content)
        if nb and nb.kind == "dotted" and nb.depth >= 1:
            num_depth[canon[_style(blocks[i])]][nb.depth] += 1
    numbered = sum(sum(c.values()) for c in num_depth.values()) >= 3 and any(
        d >= 2 for c in num_depth.values() for d in c)
    ranked = sorted(set(canon.values()), key=lambda s: (-s[0], not s[1], not s[2]))
    level_of: dict[tuple, int | None] = {}
    if numbered:
        numbered_level: dict[tuple, int] = {}
        for st, depths in num_depth.items():
            d, cnt = depths.most_common(1)[0]
            if cnt >= 2 or sum(depths.values()) == 1:
                numbered_level[st] = d
        level_of.update(numbered_level)
        known = sorted(numbered_level.items(), key=lambda kv: (-kv[0][0], not kv[0][1], not kv[0][2]))
        smallest = min(known, key=lambda kv: kv[0])[0] if known else None
        inside = _inside_numbered(blocks, cands, canon, set(numbered_level))
        below = max((lv for _, lv in known), default=0)
        for st in ranked:
            if st in level_of:
                continue
            # Unnumbered style: same level as the numbered style of equal or nearest larger size;
            # smaller than every numbered style → a minor run-in heading inside the numbered
            # sections, not a section. A style used mostly outside the stretch the numbered
            # headings cover (a report followed by numbered exhibits) heads its own part of the
            # document: it ranks by size below the numbered levels.
            if smallest is not None and st < smallest:
                if inside.get(st, 1.0) >= 0.5:
                    level_of[st] = None
                else:
                    below += 1
                    level_of[st] = below
                continue
            above = [lv for s, lv in known if s >= st]
            level_of[st] = max(above) if above else 1
    else:
        for r, st in enumerate(ranked):
            level_of[st] = r + 1
    for i in cands:
        b = blocks[i]
        lv = level_of.get(canon[_style(b)])
        b.level = lv
        b.extra["rule_level"] = lv
    _close_gaps(blocks, cands)


def _inside_numbered(blocks: list[Block], cands: list[int], canon: dict[tuple, tuple],
                     numbered: set[tuple]) -> dict[tuple, float]:
    """Per style, the share of its candidates that lie between the first and the last numbered
    heading (of a style whose level its numbers set): only those can be minor headings inside
    numbered sections."""
    marks = [i for i in cands if canon[_style(blocks[i])] in numbered and parse_numbering(blocks[i].content)]
    if not marks:
        return {}
    lo, hi = min(marks), max(marks)
    total: Counter = Counter()
    within: Counter = Counter()
    for i in cands:
        st = canon[_style(blocks[i])]
        total[st] += 1
        if lo <= i <= hi:
            within[st] += 1
    return {st: within[st] / n for st, n in total.items()}


def _close_gaps(blocks: list[Block], cands: list[int]) -> None:
    """Renumber used levels 1..k so no level is skipped document-wide."""
    used = sorted({lv for lv in (blocks[i].level for i in cands) if lv is not None})
    remap = {lv: k + 1 for k, lv in enumerate(used)}
    for i in cands:
        lv = blocks[i].level
        if lv is not None:
            blocks[i].level = remap[lv]
