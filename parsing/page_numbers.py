"""The numbers a document prints on its pages, read from its text when the PDF has no page labels.

Readers quote the printed number ("the figure on page 17"), and a report with a cover and a
contents page, or a hearing transcript with front matter, prints numbers that run a few behind
the physical ones. PDFs rarely carry a page-label tree that says so; the number is in the text,
as the first or last line of the page (a header or footer holding only the number, "Page 9",
"- 9 -"). One stray number proves nothing, so a printed numbering is accepted only when the
same offset from the physical page holds on many pages: the pages where it holds are labelled
with their printed number, and so are the pages between the first and the last of them (a
full-page figure prints no number but is counted); pages outside that run keep no label.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

# a line that is only a page number: "9", "Page 9", "- 9 -", "9 of 40", "9/40"
PAGE_NUMBER_LINE = re.compile(r"^\s*(?:page\s+)?[-–]?\s*(\d{1,4})\s*[-–]?\s*(?:(?:of|/)\s*\d{1,4})?\s*$", re.I)
_LEADING = re.compile(r"^\s*(\d{1,4})\s+\S")  # "10  Alibaba Cloud | ..."
_TRAILING = re.compile(r"\S\s+(?:page\s+)?(\d{1,4})\s*$", re.I)  # "Version 1.3   9", "... Ltd.  9"
MIN_PAGES = 3  # pages on which one offset must hold before the document's numbering is believed
MIN_SHARE = 0.5  # of the pages printing a lone number, the share that must agree on the offset

BBox = tuple[float, float, float, float]


def page_number_candidates(lines: Iterable[tuple[BBox, str]], height: float, margin: float) -> set[int]:
    """The numbers a page may print as its own, from its header and footer lines: its topmost
    and bottommost lines and those in its top or bottom `margin` (a share of `height`). Such a
    line may be only the number ("9", "Page 9 of 40") or end or start with it ("Version 1.3   9",
    "10  Alibaba Cloud | Introducing Alibaba Cloud"); a number that is not the page's (a year, a
    version) does not keep one offset from page to page (`printed_page_labels`)."""
    lines = [(bbox, text) for bbox, text in lines if text.strip()]
    if not lines:
        return set()
    top = min(bbox[1] for bbox, _ in lines)
    bottom = max(bbox[3] for bbox, _ in lines)
    out: set[int] = set()
    for bbox, text in lines:
        cy = (bbox[1] + bbox[3]) / 2
        edge = bbox[1] <= top + 0.5 or bbox[3] >= bottom - 0.5
        if not (edge or cy < margin * height or cy > (1 - margin) * height):
            continue
        m = PAGE_NUMBER_LINE.match(text)
        if m is not None:
            out.add(int(m.group(1)))
            continue
        for rx in (_LEADING, _TRAILING):
            m = rx.search(text)
            if m is not None:
                out.add(int(m.group(1)))
    return out


def printed_page_labels(candidates: Mapping[int, set[int]], page_count: int) -> list[str] | None:
    """Labels (what each 0-based page prints) from each page's `page_number_candidates`, or None
    when the document shows no consistent numbering other than the physical one (module
    docstring). The numbering is the offset from the physical page that the most pages agree
    on; the run of pages from the first to the last where it holds is labelled (a cover before it
prints none)."""
    offsets: Counter[int] = Counter()
    for pno, numbers in candidates.items():
        for n in numbers:
            offsets[n - (pno + 1)] += 1
    if not offsets:
        return None
    offset, support = offsets.most_common(1)[0]
    numbered = sum(1 for numbers in candidates.values() if numbers)
    if offset == 0 or support < MIN_PAGES or support < MIN_SHARE * numbered:
        return None
    agree = [pno for pno, numbers in candidates.items() if 0 <= pno < page_count and pno + 1 + offset in numbers]
    labels = [""] * page_count
    for pno in range(min(agree), max(agree) + 1):  # a full-page figure between them prints none, yet is counted
        if pno + 1 + offset >= 1:
            labels[pno] = str(pno + 1 + offset)
    return labels
