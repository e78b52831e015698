"""Heading numbering: "2.3.1", "Chapter 4", "Appendix B", "Part II", "A.2", roman numerals.

`parse_numbering` returns the label, its depth (how many levels it names) and the rest of
the title; `strip_numbering`/`norm_title` are what heading evaluation compares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ROMAN = r"(?:(?=[MDCLXVI])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))"
_WORD = re.compile(rf"^(part|chapter|appendix|section|book|lecture|unit)\s+({_ROMAN}|\d+|[A-Z])\b[.:]?\s*(.*)$", re.I)
_DOTTED = re.compile(r"^((?:[A-Z]|\d{1,3})(?:\.\d{1,3})+)\.?\s+(\S.*)$")
_SIMPLE = re.compile(r"^(\d{1,3})\.?\s+(\S.*)$")
_LETTER = re.compile(r"^([A-Z])\.?\s+([A-Z]\S*.*)$")
_ROMAN_LEAD = re.compile(rf"^({_ROMAN})\.?\s+(\S.*)$")
_LABEL_ONLY = re.compile(r"^(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?$|^[IVXLC]{2,7}\.?$")


@dataclass
class Numbering:
    label: str
    depth: int  # 1 for "3", "Chapter 3", "Part II", "Appendix B", "B"; 2 for "3.1" / "B.1"
    kind: str  # dotted | word | letter | roman
    rest: str


def parse_numbering(text: str) -> Numbering | None:
    t = text.strip()
    m = _WORD.match(t)
    if m:
        return Numbering(label=f"{m.group(1)} {m.group(2)}", depth=1, kind="word:" + m.group(1).lower(), rest=m.group(3))
    m = _DOTTED.match(t)
    if m:
        return Numbering(label=m.group(1), depth=m.group(1).count(".") + 1, kind="dotted", rest=m.group(2))
    m = _SIMPLE.match(t)
    if m and not re.match(r"^\d", m.group(2)):
        return Numbering(label=m.group(1), depth=1, kind="dotted", rest=m.group(2))
    m = _ROMAN_LEAD.match(t)
    if m and m.group(1) and (len(m.group(1)) > 1 or t[1:2] == "."):
        return Numbering(label=m.group(1), depth=1, kind="roman", rest=m.group(2))
    m = _LETTER.match(t)
    if m:
        return Numbering(label=m.group(1), depth=1, kind="letter", rest=m.group(2))
    return None


_STRIP = re.compile(rf"^\s*(?:(?:part|chapter|appendix|section)\s+(?:{_ROMAN}|\d+|[A-Z])\b[.:]?"
                    rf"|(?:[A-Z]|\d{{1,3}})(?:\.\d{{1,3}})+\.?|\d{{1,3}}\.?(?=\s)|{_ROMAN}\.?(?=\s)|[A-Z]\.?(?=\s))\s*", re.I)


def strip_numbering(text: str) -> str:
    """Drop a leading numbering label ("2.3", "Chapter 4:", "Part II", "B", "IV").

    Only while words remain: "1.1 Section 1.1" is "Section 1.1", not "1"."""
    prev = None
    t = text.strip()
    while prev != t:  # "Part I  1 Introduction"
        prev = t
        m = _STRIP.match(t)
        if m and m.end() < len(t) and any(c.isalpha() for c in t[m.end():]):
            t = t[m.end():]
    return t


def norm_title(text: str) -> str:
    """Lower-case words of a title without numbering or punctuation (for matching)."""
    t = strip_numbering(text)
    return " ".join(re.sub(r"[^0-9a-z]+", " ", t.lower()).split())


def is_number_label(text: str) -> bool:
    """Whether a text is a heading number and nothing else ("1.1", "5.10", "A.4", "3.", "IV")."""
    return bool(_LABEL_ONLY.match(text.strip()))


def section_number(title: str) -> str | None:
    """The number a heading prints, without its word: "5.10 package.init" -> "5.10",
    "Chapter 4: Usage" -> "4", "Appendix B" -> "B", "Part II Commands" -> "II", "3.4. /bin" -> "3.4".

    A lone capital letter before a word ("A Tale of Two Cities") reads the same as an appendix
    letter ("A Advanced packaging"): `number_headings` keeps such a letter only when the
    document's other headings confirm it."""
    nb = parse_numbering(title)
    if nb is None:
        return None
    if nb.kind.startswith("word:"):
        return nb.label.split()[-1]
    return nb.label
