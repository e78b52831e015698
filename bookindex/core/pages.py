"""How a page is named to a reader: the PDF's page and, beside it, the number the page prints.

A reader looks a citation up in the paper copy, whose numbering starts after a cover and the
front matter: the PDF's page 36 prints 30. A document folder keeps what each page prints in its
tree's meta `page_labels` (one string per page, "" where a page prints none; from the PDF's page
labels or read from the pages' text, `parsing.page_numbers`); a folder built before labels were
kept, or a document that prints no numbering of its own, has none. Every interface (CLI, JSON,
REST, MCP, inspector) names a page through `cite_page` / `cite_pages`, so all say it the same
way: "p. 36 (printed 30)", or "p. 36" where the page prints no other number.
"""

from __future__ import annotations

from collections.abc import Sequence


def printed_label(labels: Sequence[str] | None, page: int) -> str | None:
    """What 1-based `page` prints, from a document's `page_labels`; None when the document keeps
    no labels or the page prints none (a cover, a full-page figure)."""
    if not labels or not 1 <= page <= len(labels):
        return None
    label = str(labels[page - 1]).strip()
    return label or None


def differing(page: int, label: str | None) -> str | None:
    """`label` when it says something the physical number does not ("30" on page 36, "iv")."""
    return label if label and label != str(page) else None


def cite_page(page: int, label: str | None) -> str:
    """'p. 36 (printed 30)'; 'p. 36' when the page prints no number other than its own."""
    shown = differing(page, label)
    return f"p. {page} (printed {shown})" if shown else f"p. {page}"


def cite_pages(first: int, last: int, first_label: str | None, last_label: str | None) -> str:
    """A page range named the same way: 'pp. 36-37 (printed 30-31)'. Where only one end prints
    a number, that end is named ('pp. 4-5 (p. 5 printed 1)'); a single page is `cite_page`."""
    if first == last:
        return cite_page(first, first_label)
    pages = f"pp. {first}-{last}"
    if not (differing(first, first_label) or differing(last, last_label)):
        return pages
    if first_label and last_label:
        return f"{pages} (printed {first_label}-{last_label})"
    page, label = (first, first_label) if first_label else (last, last_label)
    return f"{pages} (p. {page} printed {label})"
