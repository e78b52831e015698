"""The parts a document numbers itself: "Figure 3", "Fig. 3", "Table 2", "Appendix B", "Chapter 4".

A count of figures by image nodes counts what the parser cut out (logos, decorations, a chart
split in two) and misses charts drawn as vectors; the document's own numbering does not. A part
is labelled where a block, a caption or a section title *begins* with the label word and its
number or letter ("see Figure 3" in a sentence is a reference to a part, not the part). The label
word is the one the question uses, or its abbreviation ("Fig." for figure, "Eq." for equation),
or "figure" for what documents caption as figures (charts, plots, images, photos, diagrams).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from bookindex.core.model import FIGURE_KINDS, DocumentTree, Node
from bookindex.providers.nlp import english_if_installed

# what the question may call a part that documents caption as a figure (the planner's modal nouns)
FIGURE_NOUNS = ("figure", "image", "picture", "photo", "photograph", "chart", "plot", "graph", "diagram",
                "illustration")
MARGIN_SHARE = 0.1  # top and bottom share of a page holding running headers, footers and banners


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
    """The tree's node type of a labelled part: image for figures, section for appendices,
    chapters and subsections, else the word itself (table, equation)."""
    word = label_word(unit)
    return "image" if word == "figure" else "section" if word in ("appendix", "chapter", "section", "subsection") else word


@functools.lru_cache(maxsize=32)
def _pattern(word: str) -> re.Pattern[str]:
    """'figure' -> Figure 3 / Fig. 3 / FIGURE 3-1 / Figure A.2 at the start of a text."""
    abbrev = re.escape(word[:3]) + r"\."
    # a number, or a capital letter or Roman numeral after a space ("Appendix B", "Chapter IV")
    return re.compile(rf"^\s*(?:{re.escape(word)}|{abbrev})\s*((?:\d+|(?<=\s)(?-i:[A-Z]|[IVXL]+))(?:[.\-–]\d+)*)\b"
                      rf"(?!\s*(?:and|,|–|-)\s*\d)", re.I)


# a contents entry: the label's line runs into dot leaders and a page number ("Appendix A:
# Participants ....... 4"), a reference to the part printed before it
_CONTENTS_ENTRY = re.compile(r"^[^\n]{0,160}?(?:\.\s?){4,}\s*\d")


# the number a displayed equation carries at its right: "E = mc^2 (3)", "… , (2.1)"
_EQ_NUMBER = re.compile(r"\((\d+(?:\.\d+)*[a-z]?)\)\s*[.,;]?\s*$")


def labelled_parts(tree: DocumentTree, unit: str, scope: set[str] | None = None) -> list[Labelled]:
    """The parts labelled with `unit`'s word, one per distinct label, in document order (its first
    occurrence: a caption repeated on a continued table counts once); equations also by the
    number an equation node carries at its end. `scope`: node ids to look in (None: the whole
    document)."""
    word = label_word(unit)
    rx = _pattern(word)
    seen: dict[str, Labelled] = {}
    listed: dict[str, Labelled] = {}  # parts seen only as a contents entry so far
    order: dict[str, int] = {}  # node id -> position in document order
    for n in tree.walk():
        order[n.id] = len(order)
        if n.type == "document" or (scope is not None and n.id not in scope):
            continue
        if word == "equation" and n.type == "equation":
            m = _EQ_NUMBER.search(n.text)
            if m:  # an equation numbered the way papers do, "(3)" at its end
                seen.setdefault(m.group(1), Labelled(f"Equation ({m.group(1)})", n.id, n.page_idx + 1))
                continue
        texts = [n.title] if n.type == "section" else [n.text[:200], str(n.meta.get("caption") or "")[:200]]
        for text in texts:
            m = rx.match(text)
            if m:
                key = m.group(1).upper().rstrip(".")
                part = Labelled(f"{word.capitalize()} {m.group(1)}", n.id, n.page_idx + 1)
                if _CONTENTS_ENTRY.match(text[m.end():]):
                    listed.setdefault(key, part)
                elif key not in seen:
                    seen[key] = part
                break
    # a part the contents lists but the body never labels is still a part (found where listed)
    for key, part in listed.items():
        seen.setdefault(key, part)
    return sorted(seen.values(), key=lambda p: order[p.node_id])


def label_at_start(text: str, unit: str) -> str | None:
    """The number or letter of the part a text labels with `unit`'s word where it begins ("Table
    3: Statistics …" -> "3" for "table"; "Fig. 2" -> "2" for "figure"), else None."""
    m = _pattern(label_word(unit)).match(text)
    return m.group(1) if m else None


def find_labelled(tree: DocumentTree, unit: str, key: str) -> Labelled | None:
    """The part labelled `unit`'s word and `key` ("table", "5" -> Table 5), None when the
    document labels no such part."""
    want = key.upper().rstrip(".")
    return next((p for p in labelled_parts(tree, unit) if p.label.split(" ", 1)[1].upper().rstrip(".") == want), None)


def caption_of(tree: DocumentTree, part: Labelled) -> str:
    """What the document calls a labelled part: its caption (or title) without the label itself
    ("Table 5: Citation quality ..." -> "Citation quality ...")."""
    n = tree.nodes[part.node_id]
    texts = [n.title] if n.type == "section" else [str(n.meta.get("caption") or ""), n.text]
    rx = _pattern(label_word(part.label.split(" ", 1)[0]))
    for text in texts:
        m = rx.match(text)
        if m:
            return " ".join(text[m.end():].lstrip(" .:–—-").split())[:300]
    return ""


def part_text(tree: DocumentTree, node_id: str) -> str:
    """The text a labelled part holds for a content condition: its caption and its content."""
    n = tree.nodes[node_id]
    return f"{n.meta.get('caption') or ''}\n{n.content}"


def qualifiers(question: str, unit: str) -> list[str]:
    """The words that narrow the counted unit ("pie" in "how many pie charts", "exterior" in
    "how many exterior photos"): its compound and adjective modifiers in spaCy's parse. A count
    of all figures does not answer a question about one kind of them."""
    nlp = english_if_installed()
    if nlp is None:
        return []
    head = unit.lower().split()[-1]
    for tok in nlp(question):
        if tok.lower_ == head and tok.pos_ in ("NOUN", "PROPN"):
            return [c.lower_ for c in tok.children
                    if c.dep_ in ("compound", "amod") and c.i < tok.i and c.is_alpha and not c.is_stop]
    return []


def asked_figure_kind(unit: str, quals: list[str]) -> str | None:
    """The kind of figure a count asks for, one of FIGURE_KINDS: "pie" of "pie charts" -> "pie
    chart", "line" of "line plots" -> "line chart", "photos" -> "photo"; None when the unit is not
    a figure or no word names a kind."""
    if label_word(unit) != "figure":
        return None
    words = {re.sub(r"s$", "", w.lower().strip()) for w in [*quals, unit.split()[-1] if unit.split() else ""]}
    words = {"photo" if w == "photograph" else w for w in words}
    return next((k for k in FIGURE_KINDS if k.split()[0] in words), None)


def recurring_images(tree: DocumentTree, min_pages: int = 3) -> frozenset[str]:
    """Image nodes drawn in the same box in the top or bottom band of `min_pages` or more pages
    (MARGIN_SHARE of the page's height, where running headers live): a banner or a logo, the
    pictures' running header, not a figure of the document. Figures in the body of the page at
    the same place on several pages (a manual's screenshots) stay figures."""
    sizes = tree.meta.get("page_sizes") or []

    def in_margin(n: Node) -> bool:
        if not n.bbox or n.page_idx >= len(sizes):
            return False
        height = float(sizes[n.page_idx][1])
        centre = (n.bbox[1] + n.bbox[3]) / 2
        return centre <= MARGIN_SHARE * height or centre >= (1 - MARGIN_SHARE) * height

    pages: dict[tuple[int, ...], set[int]] = {}
    images = [n for n in tree.walk() if n.type == "image" and in_margin(n)]
    for n in images:
        pages.setdefault(tuple(round(v) for v in n.bbox or ()), set()).add(n.page_idx)
    common = {box for box, ps in pages.items() if len(ps) >= min_pages}
    return frozenset(n.id for n in images if tuple(round(v) for v in n.bbox or ()) in common)


def kind_parts(tree: DocumentTree, kind: str, scope: set[str] | None = None) -> tuple[list[Labelled], int]:
    """The image nodes whose figure kind (meta["figure_kind"], told by the parser from the figure's
    pixels) is `kind`, in document order, each named by the label it is captioned with ("Figure
    4") or by its kind; and how many other image nodes have no known kind. A sub-figure counts on
    its own: "how many pie charts" counts the two pies of "Figure 6: Left ... Right ...". A picture
    repeated on every page (`recurring_images`) is no figure and not counted either way."""
    labels = {x.node_id: x.label for x in labelled_parts(tree, "figure", scope)}
    decoration = recurring_images(tree)
    found: list[Labelled] = []
    unknown = 0
    for n in tree.walk():
        if n.type != "image" or n.meta.get("scanned_page") or n.id in decoration \
                or (scope is not None and n.id not in scope):
            continue
        have = n.meta.get("figure_kind")
        if have == kind:
            name = f"{labels[n.id]} ({kind})" if n.id in labels else kind.capitalize()
            found.append(Labelled(name, n.id, n.page_idx + 1))
        elif not have:
            unknown += 1
    return found, unknown


def outline_parts(tree: DocumentTree, unit: str, scope: set[str] | None = None) -> list[Labelled]:
    """Sections, chapters and subsections from the tree's own outline when the document does not
    label them with the word ("1 Introduction", not "Section 1"): the sections of the outline's
    top level in `scope` (one level down for subsections; in a section's scope, its child
    sections), each named by its title."""
    secs = [n for n in tree.walk() if n.type == "section" and n.title.strip()
            and (scope is None or n.id in scope)]
    if not secs:
        return []
    level = min(n.level for n in secs)
    enclosing = sum(n.level == level for n in secs) == 1 and len(secs) > 1
    if enclosing:
        # one section enclosing the rest is the title of the document (or the section the question
        # names), not one of its parts: the parts are its children
        level = min(n.level for n in secs if n.level > level)
    if label_word(unit) == "subsection" and not (enclosing and scope is not None):
        level = min((n.level for n in secs if n.level > level), default=level + 1)
    return [Labelled(" ".join(n.title.split())[:100], n.id, n.page_idx + 1) for n in secs if n.level == level]
