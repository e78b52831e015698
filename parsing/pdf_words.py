"""Headings whose words come out split ("Consolidated Statement of Cash Flow s", "Incom e").

Some PDFs set a heading with letter spacing or a kerned space glyph inside a word, and the text
layer then holds a space where the reader sees none (or sees a gap no wider than the heading's
own letter spacing). Character geometry cannot settle it (such a gap can be as wide as a real
word space), but the document can: the joined word is one it prints elsewhere ("flows",
"income"), while one of the pieces is not a word it prints on its own ("incom", "s").
Only title blocks are rejoined: body text is not where a split costs a section its name.
"""

from __future__ import annotations

import re
from collections import Counter

from bookindex.core.model import Block

_EDGE = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)
_LETTERS = re.compile(r"^[^\W\d_]+$")
MIN_SEEN = 2  # the joined word must occur at least this often in the document
RARE = 10  # a piece is "not a word here" when the joined word occurs this many times more often


def document_words(blocks: list[Block]) -> Counter[str]:
    """Lower-cased whitespace tokens (edge punctuation removed) of the running text, lists and
    tables: the titles are left out, so a split title's pieces do not vouch for themselves."""
    words: Counter[str] = Counter()
    for b in blocks:
        if b.type in ("text", "list", "table"):
            for tok in b.content.split():
                core = _EDGE.match(tok)
                if core and core.group(2):
                    words[core.group(2).lower()] += 1
    return words


def rejoin_split_words(blocks: list[Block]) -> list[Block]:
    """Rejoin the split words of title blocks in place, judged against the document's words."""
    titles = [b for b in blocks if b.type == "title" and " " in b.content.strip()]
    if not titles:
        return blocks
    words = document_words(blocks)
    for b in titles:
        joined = rejoin(b.content, words)
        if joined != b.content:
            b.extra.setdefault("raw_title", b.content)
            b.content = joined
    return blocks


def rejoin(text: str, words: Counter[str]) -> str:
    """`text` with each split word joined: a run of two pieces (or of single letters spaced out)
    whose concatenation the document prints as a word, while a piece is not one it prints."""
    toks = text.split()
    out: list[str] = []
    i = 0
    while i < len(toks):
        end = _letter_run(toks, i, words)
        if end > i + 1:
            out.append("".join(toks[i:end]))
            i = end
            continue
        if i + 1 < len(toks) and _pair(toks[i], toks[i + 1], words):
            out.append(toks[i] + toks[i + 1])
            i += 2
            continue
        out.append(toks[i])
        i += 1
    return " ".join(out)


def _pair(a: str, b: str, words: Counter[str]) -> bool:
    ma, mb = _EDGE.match(a), _EDGE.match(b)
    if not ma or not mb or ma.group(3) or mb.group(1):
        return False  # punctuation between the pieces: two words
    left, right = ma.group(2), mb.group(2)
    if not _LETTERS.match(left) or not _LETTERS.match(right):
        return False
    if left[-1].islower() and right[0].isupper():
        return False  # "word Word": a new word starts
    seen = words[(left + right).lower()]
    if seen < MIN_SEEN:
        return False
    if len(right) == 1 and right.islower():
        return True  # a lone lower-case letter after a word is its last letter ("Flow s")
    return RARE * words[left.lower()] <= seen or RARE * words[right.lower()] <= seen


def _letter_run(toks: list[str], i: int, words: Counter[str]) -> int:
    """End of a run of three or more single letters from i ("C O N T E N T S") that spells a
    word of the document; i when there is none."""
    j = i
    while j < len(toks) and len(toks[j]) == 1 and toks[j].isalpha():
        j += 1
    while j - i >= 3:
        if words["".join(toks[i:j]).lower()] >= MIN_SEEN:
            return j
        j -= 1
    return i
