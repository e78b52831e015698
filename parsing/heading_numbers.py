"""A heading's printed number, read into a field and, where the page lost it, taken from the contents.

Why: sections kept their numbers in some titles ("4.1 control") and not in others
("package.init and package.default", printed as 5.10): a reader looking a section up by its
number found nothing. The PDF parser now keeps a bold number and the heading words a quad to its
right on one line (parsing.pdf_lines: the number is no run-in heading); this module, after
section filtering, does the rest from the document itself:

- each heading's number goes into `extra["number"]` (the tree's `Node.number`): "5.10", "4" for
  "Chapter 4", "B" for "Appendix B"; a lone capital letter ("A Tale of ...") counts only when
  another heading confirms it ("A.1 ...", or a neighbouring letter "B ...");
- a heading without a number that the printed table of contents lists with one (parsing.matter
  marked the contents' blocks) gets it, in the title as the page prints it and in the field
  (an outline entry matched to no block is inserted with the bookmark's words, which often
  leave the number out).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace

from bookindex.core.model import MATTER_HEAD_KEY, MATTER_KEY, NUMBER_KEY, Block
from bookindex.parsing.matter import entry_lines
from bookindex.parsing.numbering import norm_title, parse_numbering, section_number

_TRAILING_PAGE = re.compile(r"(?:(?:\s*\.){3,}\s*|\s*…+\s*|\s+)(?:\d{1,4}|[ivxlc]{1,7})\s*$", re.I)


def _headings(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if b.type == "title" and b.level is not None and not b.extra.get("entry")]


def contents_numbers(blocks: list[Block]) -> dict[str, str]:
    """Title words -> number, for every entry of the printed contents that prints a number
    ("5.10 package.init and package.default . . . 32"); titles listed twice are left out."""
    seen: dict[str, set[str]] = defaultdict(set)
    for b in blocks:
        if b.extra.get(MATTER_KEY) != "contents" or b.extra.get(MATTER_HEAD_KEY):
            continue
        for line in entry_lines(b.content):
            text = _TRAILING_PAGE.sub("", line).strip()
            num = section_number(text)
            words = norm_title(text)
            if words:
                seen[words].add(num or "")
    return {w: next(iter(n)) for w, n in seen.items() if len(n) == 1 and "" not in n}


def number_headings(blocks: list[Block], *, from_contents: bool = True) -> list[Block]:
    """Set `extra["number"]` on every heading that prints a number, adding (with
    `from_contents`) the number the contents gives a heading that prints none (see the module
    doc). Returns copies of the blocks (the caller's stay as they were)."""
    blocks = [replace(b, features=dict(b.features), extra={k: v for k, v in b.extra.items() if k != NUMBER_KEY})
              for b in blocks]  # a stored tree's numbers give way to this pass's
    heads = _headings(blocks)
    listed = contents_numbers(blocks) if from_contents else {}
    words: dict[str, int] = defaultdict(int)
    for b in heads:
        words[norm_title(b.content)] += 1
    for b in heads:
        if section_number(b.content) is None and not b.extra.get(MATTER_HEAD_KEY):  # "Index" is listed unnumbered
            key = norm_title(b.content)
            num = listed.get(key)
            if num and words[key] == 1:
                b.content = f"{num} {b.content.strip()}"
                b.extra["number_from"] = "contents"
    letters = _confirmed_letters(heads)
    for b in heads:
        nb = parse_numbering(b.content)
        num = section_number(b.content)
        if num and (nb is None or nb.kind != "letter" or num in letters):
            b.extra[NUMBER_KEY] = num
    return blocks


def _confirmed_letters(heads: list[Block]) -> set[str]:
    """Lone heading letters that the other headings confirm: a heading numbered under it
    ("A.1") or a neighbouring letter ("B" beside "A")."""
    letters = set()
    dotted = []
    for b in heads:
        nb = parse_numbering(b.content)
        if nb is None:
            continue
        if nb.kind == "letter":
            letters.add(nb.label)
        elif nb.kind == "dotted":
            dotted.append(nb.label)
    return {c for c in letters if any(d.startswith(c + ".") for d in dotted)
            or chr(ord(c) + 1) in letters or chr(ord(c) - 1) in letters}


__all__ = ["number_headings", "contents_numbers"]
