"""A printed table of contents, a list of figures or tables, an index: each one section of its kind.

Why: left to section filtering, the lines of a contents page are demoted title candidates and
loose text, so the tree held a hundred leaves under the root where a reader sees one
"Contents" (a Debian manual of 63 pages: 115). The inspector folded them by the tree's shape,
but `bookindex tree`, MCP `get_structure`, REST and the navigators read the tree, not the
inspector. Marked here, at parse time, every reader sees the same node: a section whose `role`
names its kind ("contents", "figures", "tables", "index") and whose children are its lines.

Read from the layout, never from a benchmark's words:
- an *entry line* ends in a page reference: after dot leaders or not ("4.1 control . . . 17",
  "Getting started 1"), or a term followed by its pages ("abs, 37, 112");
- a *head* is a short block whose words, numbering stripped, are the part's usual name
  ("Contents", "Table of Contents", "List of Figures", "Concept Index", "Part VI Index"),
  followed by entry lines; an index counts only in the back half of the document;
- the part runs from its head over the following entry pages and stops at the next real
  heading (a block section filtering gave a level), at the next part's head, or at the first
  paragraph of running text; it ends with its last entry line;
- pages section filtering reads as a table of contents (`sections.toc_pages`: leader-dense
  pages in the front) without such a head are a contents part too, under a made "Contents" head.

The head and the part's entry lines carry `extra["matter"]` (a footnote or a running head on the
page is a child of the part, not one of its entries). Retrieval ranks the lines as before: put
after the document's own text they gave a page more to the gold pages on MMLongBench dev but took
from the reader the one passage that printed a section's number and title together (an answer).
`mark_matter` changes no block's text and, with `insert=False`, adds none: node ids (a block's
position) stay, which lets `bookindex refresh` group a stored tree without parsing it again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from bookindex.core.model import AFTER_MATTER_KEY, MATTER_HEAD_KEY, MATTER_KEY, Block
from bookindex.parsing.numbering import norm_title
from bookindex.parsing.sections import toc_pages

# Block.extra keys (core.model reads them in build_tree): MATTER_KEY the part's kind on its head
# and its members, MATTER_HEAD_KEY on the head, AFTER_MATTER_KEY on the first block after it
_MARKS = (MATTER_KEY, MATTER_HEAD_KEY, AFTER_MATTER_KEY)
MADE_KEY = "matter_made"  # Block.extra: a head this pass made (no block of the page says it)

_HEADS = {
    "contents": re.compile(r"^(?:table of |brief |detailed |short )?contents(?: at a glance| in brief)?$"
                           r"|^inhaltsverzeichnis$|^sommaire$|^table des mati[eè]res$"),
    "figures": re.compile(r"^list of (?:figures|illustrations|charts|exhibits|plates|diagrams)$"),
    "tables": re.compile(r"^list of tables$"),
    "index": re.compile(r"^(?:[a-z]+ ){0,4}index$|^index of(?: [a-z]+){1,3}$"),
}
DEFAULT_TITLES = {"contents": "Contents", "figures": "List of Figures", "tables": "List of Tables", "index": "Index"}
_LEADERS = re.compile(r"(?:\.\s?){3,}|…{2,}")
_BREAK = re.compile(r"(?:(?:\.\s?){3,}|…{2,})\s*\S{1,7}(?=\s|$)|(?<=\s)(?:\d{1,4}|[ivxlc]{1,7})(?=\s+[A-Z])")
_PAGE_REF = re.compile(r"(?:\d{1,4}(?:[-–]\d{1,4})?|[ivxlcdm]{1,7}),?", re.I)
_CAPTION_ENTRY = {"figures": re.compile(r"^\s*(?:figure|fig\.|chart|exhibit|plate)\s*\S", re.I),
                  "tables": re.compile(r"^\s*(?:table|tab\.)\s*\S", re.I)}
MAX_HEAD_CHARS = 60
MIN_ENTRY_LINES = 2  # a head needs at least this many entry lines after it
BODY_CHARS = 200  # a block this long without an entry line is running text: the part ended before it
ENTRY_SHARE = 0.5  # of a part's (or an entry page's) text, at least this share is entry lines
_TEXTISH = ("title", "text", "list", "code", "equation")


@dataclass
class _Part:
    kind: str
    head: int | None  # index of the head block; None: the part has no head on the page
    start: int  # first block of the part (the head, when it has one)
    end: int  # one past its last block


def entry_lines(text: str) -> list[str]:
    """The entry-sized pieces of a block: its lines, a joined line split after every leader and
    page reference ("1.1 Purpose ..... 1 1.2 Conventions ..... 1"), and after a page reference
    that a capitalised word follows ("Objectives 23 Methodology 23")."""
    out: list[str] = []
    for line in text.split("\n"):
        start = 0
        for m in _BREAK.finditer(line):
            out.append(line[start:m.end()])
            start = m.end()
        out.append(line[start:])
    return [s.strip() for s in out if s.strip()]


def is_entry_line(line: str) -> bool:
    """A line a contents, list or index prints: it ends in a page reference, after leaders or
    in a short line ("Getting started 1"), or most of its words are page references ("abs, 37
    acos, 37"). A sentence that ends in a number ("... released in 2019") is none."""
    words = [w for w in line.split() if not _LEADERS.fullmatch(w) and w != "."]
    if not words:
        return False
    refs = sum(1 for w in words if _PAGE_REF.fullmatch(w))
    if refs == len(words):
        return False  # a lone number is no entry
    last = _PAGE_REF.fullmatch(words[-1].rstrip(".")) is not None
    if last and (_LEADERS.search(line) or len(words) <= 12):
        return True
    return refs >= 2 and refs >= 0.25 * len(words)


def _entry_chars(b: Block) -> tuple[int, int, int]:
    """(characters in entry lines, all characters, entry lines) of a block."""
    if b.extra.get("toc"):  # MinerU typed it as a table of contents
        return len(b.content), len(b.content), max(1, b.content.count("\n") + 1)
    pieces = entry_lines(b.content)
    hits = [p for p in pieces if is_entry_line(p)]
    return sum(len(p) for p in hits), sum(len(p) for p in pieces), len(hits)


def _is_entry_block(b: Block) -> bool:
    """A block of entry lines (at least half its text)."""
    if b.type not in _TEXTISH:
        return False
    e, t, _ = _entry_chars(b)
    return e > 0 and e >= ENTRY_SHARE * t


def head_kind(b: Block) -> str | None:
    """The kind of part a block's words name ("Contents", "Function Index", "List of Tables")."""
    if (b.type not in ("title", "text") or len(b.content) > MAX_HEAD_CHARS or b.features.get("lines", 1) > 2
            or is_entry_line(b.content)):  # "Concept Index . . . 35" is a line of the contents
        return None
    words = norm_title(b.content)
    for kind, pat in _HEADS.items():
        if pat.match(words):
            return kind
    return None


def _entry_pages(blocks: list[Block]) -> set[int]:
    """Pages whose text is mostly entry lines (short blocks, an index letter, left out)."""
    hit: dict[int, int] = {}
    tot: dict[int, int] = {}
    for b in blocks:
        if b.type not in _TEXTISH or len(b.content.strip()) <= 2:
            continue
        e, t, _ = _entry_chars(b)
        hit[b.page_idx] = hit.get(b.page_idx, 0) + e
        tot[b.page_idx] = tot.get(b.page_idx, 0) + t
    return {p for p, t in tot.items() if t and hit[p] >= ENTRY_SHARE * t}


def _is_heading(b: Block) -> bool:
    return b.type == "title" and b.level is not None


def _extent(blocks: list[Block], i: int, pages: set[int]) -> int:
    """One past the last block of the part that blocks[i] heads (or starts): over its page and the entry pages that follow it without a gap,
    up to the next real heading, the next part's head (a list of figures below the contents) or
    the first paragraph of running text (a paper's first page holds its contents and then its
    introduction); the part ends with its last entry line."""
    allowed = {blocks[i].page_idx}
    p = blocks[i].page_idx + 1
    while p in pages:
        allowed.add(p)
        p += 1
    last = i
    for j in range(i + 1, len(blocks)):
        b = blocks[j]
        if b.page_idx not in allowed or _is_heading(b) or head_kind(b) is not None:
            break
        if _is_entry_block(b):
            last = j
        elif b.type in _TEXTISH and len(b.content) > BODY_CHARS:
            break
    return last + 1


def _mostly_entries(blocks: list[Block]) -> bool:
    """Whether a part's members read as entries: enough entry lines, most of the text."""
    hit = tot = lines = 0
    for b in blocks:
        if b.type not in _TEXTISH or len(b.content.strip()) <= 2:
            continue
        e, t, n = _entry_chars(b)
        hit, tot, lines = hit + e, tot + t, lines + n
    return lines >= MIN_ENTRY_LINES and tot > 0 and hit >= ENTRY_SHARE * tot


def find_parts(blocks: list[Block]) -> list[_Part]:
    """The matter parts of a document, in order, not overlapping."""
    if not blocks:
        return []
    last = max(b.page_idx for b in blocks)
    pages = _entry_pages(blocks)
    toc = toc_pages(blocks)
    parts: list[_Part] = []
    i = 0
    while i < len(blocks):
        kind = head_kind(blocks[i])
        if kind == "index" and blocks[i].page_idx < last / 2:
            kind = None
        if kind is not None:
            end = _extent(blocks, i, pages | (toc if kind != "index" else set()))
            if _mostly_entries(blocks[i + 1:end]):
                parts.append(_Part(kind, i, i, end))
                i = end
                continue
        i += 1
    return parts + _headless(blocks, toc, parts)


def _headless(blocks: list[Block], toc: set[int], parts: list[_Part]) -> list[_Part]:
    """Contents pages without a head: from an entry line on a `toc` page outside the parts found,
    as far as `_extent` reaches."""
    taken = {k for p in parts for k in range(p.start, p.end)}
    out: list[_Part] = []
    i = 0
    while i < len(blocks):
        b = blocks[i]
        if i in taken or b.page_idx not in toc or _is_heading(b) or b.type not in _TEXTISH or not _entry_chars(b)[0]:
            i += 1
            continue
        end = _extent(blocks, i, toc)
        end = next((k for k in range(i, end) if k in taken), end)
        if _mostly_entries(blocks[i:end]):
            out.append(_Part(_list_kind(blocks[i:end]), None, i, end))
        i = max(end, i + 1)
    return out


def _list_kind(blocks: list[Block]) -> str:
    """A headless listing whose entries are mostly captions is a list of figures or tables."""
    lines = [ln for b in blocks if b.type in _TEXTISH for ln in entry_lines(b.content) if is_entry_line(ln)]
    for kind, pat in _CAPTION_ENTRY.items():
        if lines and sum(1 for ln in lines if pat.match(ln)) >= 0.6 * len(lines):
            return kind
    return "contents"


def mark_matter(blocks: list[Block], *, insert: bool = True) -> list[Block]:
    """The blocks with every matter part marked (see the module doc); a headless part gets a
    made head block before it when `insert`, and stays unmarked otherwise."""
    # copies: the caller's blocks stay as they were (a parsed document may be built twice); the
    # marks of an earlier pass (a stored tree's blocks) give way to this one's
    blocks = [replace(b, features=dict(b.features), extra={k: v for k, v in b.extra.items() if k not in _MARKS})
              for b in blocks]
    parts = sorted(find_parts(blocks), key=lambda p: p.start)
    made: dict[int, Block] = {}
    for part in parts:
        if part.head is None and not insert:
            continue
        if part.head is not None:
            head = blocks[part.head]
            head.type = "title"
            head.extra.pop("not_heading", None)
        else:
            first = blocks[part.start]
            head = Block(type="title", content=DEFAULT_TITLES[part.kind], page_idx=first.page_idx,
                         extra={MADE_KEY: True})
            made[part.start] = head
        if head.level is None:
            head.level = 1  # front and back matter belong to the document, not to a chapter
        head.extra[MATTER_KEY] = part.kind
        head.extra[MATTER_HEAD_KEY] = True
        for b in blocks[part.start + (part.head is not None):part.end]:
            if _is_entry_block(b):  # a footnote or a running head on the page is in the part, no entry of it
                b.extra[MATTER_KEY] = part.kind
        if part.end < len(blocks) and not _is_heading(blocks[part.end]):
            blocks[part.end].extra[AFTER_MATTER_KEY] = True
    if not made:
        return blocks
    out: list[Block] = []
    for i, b in enumerate(blocks):
        if i in made:
            out.append(made[i])
        out.append(b)
    return out


__all__ = ["MADE_KEY", "mark_matter", "find_parts", "head_kind",
           "is_entry_line", "entry_lines"]
