"""The parts a document numbers itself: "Figure 3", "Fig. 3", "Table 2", "Appendix B", "Chapter 4".

A count of figures by image nodes counts what the parser cut out (logos, decorations, a chart
split in two) and misses charts drawn as vectors; the document's own numbering does not. A part
is labelled where a block, a caption or a section title *begins* with the label word and its
number or letter ("see Figure 3" in a sentence is a reference to a part, not the part). The label
word is the one the question uses, or its abbreviation ("Fig." for figure, "Eq." for equation),
or "figure" for what documents caption as figures (charts, plots, images, photos, diagrams).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bookindex.core.model import DocumentTree

# what the question may call a part that documents caption as a figure (the planner's modal nouns)
FIGURE_NOUNS = ("figure", "image", "picture", "photo", "photograph", "chart", "plot", "graph", "diagram",
                "illustration")


@dataclass(frozen=True)
class Labelled:
    """One numbered part: its label ("Figure 3") and the node where the label begins."""

    label: str
    node_id: str
    page: int  # 1-based


def label_word(unit: str) -> str:
    """The word documents label `unit` with: 'charts' -> 'figure', 'appendices' -> 'appendix'."""
    u = unit.lower().strip()
    u = re.sub(r"ices$", "ix", u) if u.endswith("ices") else re.sub(r"s$", "", u)
    return "figure" if u in FIGURE_NOUNS else u


def node_type(unit: str) -> str:
    """The tree's node type of a labelled part: image for figures, section for appendices and
    chapters, else the word itself (table, equation)."""
    word = label_word(unit)
    return "image" if word == "figure" else "section" if word in ("appendix", "chapter", "section") else word


def _pattern(word: str) -> re.Pattern[str]:
    """'figure' -> Figure 3 / Fig. 3 / FIGURE 3-1 / Figure A.2 at the start of a text."""
    abbrev = re.escape(word[:3]) + r"\."
    # a number, or a capital letter or Roman numeral after a space ("Appendix B", "Chapter IV")
    return re.compile(rf"^\s*(?:{re.escape(word)}|{abbrev})\s*((?:\d+|(?<=\s)(?-i:[A-Z]|[IVXL]+))(?:[.\-–]\d+)*)\b"
                      rf"(?!\s*(?:and|,|–|-)\s*\d)", re.I)


def labelled_parts(tree: DocumentTree, unit: str, scope: set[str] | None = None) -> list[Labelled]:
    """The parts labelled with `unit`'s word, one per distinct label, in document order (its first
    occurrence: a caption repeated on a continued table counts once). `scope`: node ids to look in
    (None: the whole document)."""
    word = label_word(unit)
    rx = _pattern(word)
    seen: dict[str, Labelled] = {}
    for n in tree.walk():
        if n.type == "document" or (scope is not None and n.id not in scope):
            continue
        texts = [n.title] if n.type == "section" else [n.text[:200], str(n.meta.get("caption") or "")[:200]]
        for text in texts:
            m = rx.match(text)
            if m:
                key = m.group(1).upper().rstrip(".")
                if key not in seen:
                    seen[key] = Labelled(f"{word.capitalize()} {m.group(1)}", n.id, n.page_idx + 1)
                break
    return list(seen.values())
