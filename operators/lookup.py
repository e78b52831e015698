"""Where a numbered part is and what it is called, read from the tree: "On which page is
Table 3?", "What is the title of Figure 2?", "Which section is Table 5 in?".

Retrieval ranks the sentences that *mention* "Table 3" ("we present the results in Table 3"),
which sit on another page than the table; the tree knows the part itself (`operators.labels`:
the block, caption or section title that begins with the label). A question that names one
labelled part and asks for its page, section or title is answered from that node, exactly, and
cited by it. The page is the PDF page, with the page number the document prints where the PDF
labels its pages differently ("iv", "287").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bookindex.core.model import DocumentTree
from bookindex.core.pages import differing, printed_label
from bookindex.operators.labels import Labelled, caption_of, find_labelled

# a part the question names by its label: "Table 3", "Fig. 2", "Appendix B", "Section 4.2"
_PART = (r"(?:figure|fig\.|table|appendix|chapter|section|equation|eq\.|listing|algorithm)\s*"
         r"(?:\d+|(?-i:[A-Z])|(?-i:[IVXL]+))(?:[.\-–]\d+)*")
_NAMED = re.compile(r"\b(figure|fig\.|table|appendix|chapter|section|equation|eq\.|listing|algorithm)\s*"
                    r"((?:\d+|(?-i:[A-Z])|(?-i:[IVXL]+))(?:[.\-–]\d+)*)\b", re.I)
_END = r"(?:\s+(?:on|in|at|located|found|shown|placed|printed|appear|appears|start|starts|begin|begins))*\s*[?.]?\s*$"
# the question is the lookup and nothing else: "On which page (of the report) is Table 3 (on)?"
_ASKS = {
    "page": [re.compile(rf"^\s*(?:on\s+|at\s+)?(?:which|what)\s+page(?:\s+\w+){{0,4}}?\s+(?:is|are|was|does|do|can\s+I\s+find)"
                        rf"\s+(?:the\s+)?{_PART}\b{_END}", re.I),
             re.compile(rf"^\s*(?:what\s+is\s+)?the\s+page(?:\s+number)?\s+of\s+(?:the\s+)?{_PART}\b\s*[?.]?\s*$", re.I),
             re.compile(rf"^\s*where\s+(?:is|are|can\s+I\s+find)\s+(?:the\s+)?{_PART}\b{_END}", re.I)],
    "title": [re.compile(rf"\b(?:title|caption|heading)\s+of\s+(?:the\s+)?{_PART}\b\s*[?.]?\s*$", re.I),
              re.compile(rf"^\s*(?:what|how)\s+is\s+(?:the\s+)?{_PART}\s+(?:titled|captioned|called)\s*[?.]?\s*$", re.I)],
    "section": [re.compile(rf"^\s*(?:in\s+)?(?:which|what)\s+(?:section|chapter|part)(?:\s+\w+){{0,4}}?\s+"
                           rf"(?:is|are|was|does|do)\s+(?:the\s+)?{_PART}\b{_END}", re.I)],
}


@dataclass(frozen=True)
class Lookup:
    """A structure answer: its text (the asked value first) and the node it is read from."""

    answer: str
    node_id: str
    asked: str  # page | section | title


def asks_where(question: str) -> str | None:
    """What a structure lookup asks for: 'page', 'section' or 'title' (None: something else)."""
    return next((kind for kind, rxs in _ASKS.items() if any(rx.search(question) for rx in rxs)), None)


def named_part(tree: DocumentTree, question: str) -> Labelled | None:
    """The one labelled part the question names and the document has (None: none, or several)."""
    found = named_parts(tree, question)
    return found[0] if len(found) == 1 else None


def named_parts(tree: DocumentTree, question: str) -> list[Labelled]:
    """The labelled parts the question names and the document has, in the question's order."""
    found: dict[str, Labelled] = {}
    for m in _NAMED.finditer(question):
        word = m.group(1).lower().rstrip(".")
        word = {"fig": "figure", "eq": "equation"}.get(word, word)
        part = find_labelled(tree, word, m.group(2))
        if part is None and word in ("section", "chapter", "appendix"):
            sec = tree.find_section(m.group(2)) if re.match(r"\d", m.group(2)) else None
            if sec is not None:
                part = Labelled(" ".join(sec.title.split())[:100], sec.id, sec.page_idx + 1)
        if part is not None:
            found.setdefault(part.node_id, part)
    return list(found.values())


def named_evidence(tree: DocumentTree, question: str, scores: dict[str, float],
                   units: set[str] | frozenset[str]) -> list[str]:
    """The node that stands for each part the question names ("In Figure 5, ...", "in Appendix
    E"): a figure's, table's or equation's own node; for a section, its best-scoring unit of
    content (its first when none scored). Retrieval ranks the sentences that mention a part; the
    part is what the question is about."""
    out: list[str] = []
    for part in named_parts(tree, question)[:3]:
        node = tree.nodes[part.node_id]
        if node.type != "section":
            out.append(part.node_id)
            continue
        inside = [n.id for n in tree.walk(node) if n.id in units]
        if inside:
            out.append(max(inside, key=lambda i: scores.get(i, 0.0)))  # max keeps the first of ties
    return list(dict.fromkeys(out))


def printed_page(page: int, labels: list[str] | None) -> str:
    """The number the document prints on 1-based PDF `page`, when it differs from `page` (`core.pages`)."""
    return differing(page, printed_label(labels, page)) or ""


def lookup(tree: DocumentTree, question: str, page_labels: list[str] | None = None) -> Lookup | None:
    """The page, enclosing section or title of the labelled part the question names; None when
    the question asks none of these or names no part the document labels."""
    asked = asks_where(question)
    if asked is None:
        return None
    part = named_part(tree, question)
    if part is None:
        return None
    node = tree.nodes[part.node_id]
    caption = caption_of(tree, part)
    about = f"{part.label}: {caption}" if caption else part.label
    if asked == "page":
        printed = printed_page(part.page, page_labels)
        shown = f" (printed page {printed})" if printed else ""
        return Lookup(f"Page {part.page}{shown} [1] ({about[:300]})", part.node_id, asked)
    if asked == "title":
        if node.type == "section":
            return Lookup(f"{caption or part.label} [1] ({part.label}, p. {part.page})", part.node_id, asked)
        if not caption:
            return None
        return Lookup(f"{caption} [1] ({part.label}, p. {part.page})", part.node_id, asked)
    chain = [n for n in [*tree.parent_path(node), node] if n.type == "section" and n.title.strip()]
    if node.type == "section":
        chain = chain[:-1]  # the section a section is in: its parent
    if not chain:
        return None
    title = " ".join(chain[-1].title.split())[:100]
    return Lookup(f"{title} [1] ({about[:300]}, p. {part.page})", part.node_id, asked)
