"""Markdown markup out of the text an agent reads in a listing (titles, one-line summaries).

A Markdown document keeps its markup in the document store (it is the document), but a listing
line is a label: `# Wix Payments` or `**Note**` there is noise an agent pays tokens for and that
repeats the title when the one-line summary is taken from the text's first line. Only inline and
line-start markup is removed; words are never changed (`snake_case`, `C#`, `a*b` stay).
"""

from __future__ import annotations

import re

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()]|\([^)]*\))*\)")
_RULE = re.compile(r"^\s{0,3}(?:[-*_]\s*){3,}$", re.M)
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s+|$)", re.M)
_CLOSING_HASHES = re.compile(r"\s+#+\s*$", re.M)
_LINE_MARK = re.compile(r"^\s{0,3}(?:>\s?|[-*+]\s+|\d+[.)]\s+)", re.M)
_EMPHASIS = re.compile(r"(?<![\w*_~`])(\*\*|__|\*|_|~~)(\S(?:.*?\S)?)\1(?![\w*_~`])")
_CODE = re.compile(r"(`+)(.+?)\1")
_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")


def plain(text: str) -> str:
    """`text` without Markdown markup (headings, emphasis, code ticks, links, images, quotes,
    list markers, rules, HTML tags), line structure kept."""
    out = _IMAGE.sub(r"\1", text)
    out = _LINK.sub(r"\1", out)
    out = _RULE.sub("", out)
    out = _HEADING.sub("", out)
    out = _CLOSING_HASHES.sub("", out)
    out = _LINE_MARK.sub("", out)
    out = _CODE.sub(r"\2", out)
    for _ in range(2):  # nested emphasis: ***x*** or **_x_**
        out = _EMPHASIS.sub(r"\2", out)
    return _TAG.sub("", out)


def plain_line(text: str) -> str:
    """`plain` on one line: whitespace runs collapsed."""
    return " ".join(plain(text).split())
