"""`get_pages(doc, "3-7")`: a document's text on a page range, for an agent at a document skill.

Pages are 1-based as people and benchmarks count them; a range outside the document or a
malformed one is an InputError naming what was asked, so a tool call can be refused clearly.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from bookindex.core.errors import InputError
from bookindex.core.model import DocumentTree

MAX_PAGES = 20          # pages one call may return
PAGE_CHARS = 4000       # text per page returned


class PageText(BaseModel):
    page: int           # 1-based
    text: str
    node_ids: list[str]


def parse_pages(spec: str, page_count: int) -> tuple[int, int]:
    """"3-7", "5" or "5-5" as 1-based (first, last); InputError when malformed or out of range."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:[-–]\s*(\d+))?\s*", spec or "")
    if m is None:
        raise InputError(f"pages {spec!r}: give a page or a range, e.g. \"3-7\"")
    first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    if first < 1 or last < first:
        raise InputError(f"pages {spec!r}: pages count from 1 and a range runs forwards")
    if page_count and first > page_count:
        raise InputError(f"pages {spec!r}: the document has {page_count} pages")
    if last - first + 1 > MAX_PAGES:
        raise InputError(f"pages {spec!r}: at most {MAX_PAGES} pages per call")
    return first, min(last, page_count) if page_count else last


def pages_text(tree: DocumentTree, first: int, last: int) -> list[PageText]:
    """The blocks on each page first..last (1-based), in reading order."""
    out = []
    for page in range(first, last + 1):
        nodes = tree.nodes_on_pages(page - 1)
        text = "\n\n".join(n.content.strip() for n in nodes if n.content.strip())
        out.append(PageText(page=page, text=text[:PAGE_CHARS], node_ids=[n.id for n in nodes]))
    return out
