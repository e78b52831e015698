"""What an extractor returns per tree node, and the modality rules both extractors share.

BookRAG §4.3.1: every node yields a small subgraph g_i = (V_i, E_Ri) whose entities remember
their origin node. Table and equation nodes first get a *typed structural entity* (the table or
formula itself); a table's row and column headers become entities linked to it by "ContainedIn",
and the other entities of the node are linked to the structural entity. These rules need no LLM,
so they live here and both the LLM and the offline extractor apply them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from bookindex.core.model import SAID_META_KEYS, Node
from bookindex.core.pipe_tables import is_pipe_row, is_rule_row, row_cells
from bookindex.core.quantities import CURRENCY
from bookindex.parsing.htmltable import html_table_rows

CONTAINED_IN = "ContainedIn"
STRUCTURAL_TYPES = ("table", "formula", "image")


@dataclass
class RawEntity:
    """An entity as extracted from one node, before entity resolution."""

    name: str
    type: str = "concept"
    description: str = ""
    structural: bool = False  # the table/formula/image entity itself: never merged by ER


@dataclass
class RawRelation:
    """A relation between two entity *names* of the same node."""

    source: str
    target: str
    description: str = ""
    keywords: list[str] = field(default_factory=list)
    weight: float = 1.0


@dataclass
class NodeExtraction:
    """The subgraph g_i of one tree node; `error` is set when extraction failed."""

    node_id: str
    entities: list[RawEntity] = field(default_factory=list)
    relations: list[RawRelation] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


NodesDone = Callable[[int], None]  # n more nodes extracted (see Extractor)


class Extractor(Protocol):
    """What a graph build runs over the tree nodes: the LLM extractor or the offline one.

    The build report reads `calls` (LLM calls made) and `retried` (node ids extracted a second
    time); `fresh` makes a re-extraction bypass the completion cache, which would replay the
    answers that failed (the offline extractor makes no calls and ignores it).
    `on_done(n)` is called as nodes finish (n at a time, summing to the number of nodes), so a
    build can report graph nodes done while extraction runs (a server job's progress, the CLI's
    bar); retries of failed nodes are not counted again.
    """

    name: str
    calls: int
    retried: list[str]
    fresh: bool

    def extract(self, nodes: Iterable[Node], progress: bool = False,
                on_done: NodesDone | None = None) -> list[NodeExtraction]: ...


_STRIP = " \t\"'`.,;:()[]{}*#-–—|<>•·▪◦‣∙●○■□➢►✓→=+"
_QUOTES = re.compile(r"[\"“”„‟]")


def clean_name(name: str) -> str:
    """Collapse whitespace; strip bullets, pipes, quotes and punctuation around an entity name."""
    name = _QUOTES.sub("", " ".join(str(name).split()))
    return " ".join(name.strip(_STRIP).split())


def _singular(word: str) -> str:
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def name_key(name: str) -> str:
    """Normalized name for exact-name matching (the paper's "Basic" merging): case, spacing,
    separators, a leading article and a plural last word do not make a different entity."""
    s = clean_name(name).lower().replace("’", "'")
    s = re.sub(r"[\s_\-]+", " ", s).strip()
    s = re.sub(r"^(the|a|an)\s+", "", s)
    words = s.split(" ")
    words[-1] = _singular(words[-1])
    return " ".join(words)


# -- tables -------------------------------------------------------------------------------

def table_rows(node: Node) -> list[list[str]]:
    """The table's cells as rows of strings, from `meta.html`, `meta.markdown` or pipe text."""
    html = node.meta.get("html")
    if html:
        rows = [r for r in html_table_rows(str(html)) if any(r)]
        if rows:
            return rows
    md = node.meta.get("markdown") or node.text
    rows = [row_cells(ln) for ln in str(md).splitlines()
            if (is_pipe_row(ln) or ln.count("|") >= 2) and not is_rule_row(ln)]
    if rows:
        return rows
    # Plain text (a parser without table structure): whitespace-aligned columns
    for line in str(node.text).splitlines():
        cells = [c for c in re.split(r"\s{2,}|\t", line.strip()) if c]
        if cells:
            rows.append(cells)
    return rows


def _is_header_text(s: str) -> bool:
    s = s.strip()
    return bool(s) and len(s) <= 60 and not re.fullmatch(rf"[\d\s.,%{CURRENCY}+\-–()/:]+", s)


def table_headers(node: Node) -> tuple[list[str], list[str]]:
    """Column headers (first row) and row headers (first column below it) of a table node."""
    rows = table_rows(node)
    if not rows:
        return [], []
    cols = [clean_name(c) for c in rows[0] if _is_header_text(c)]
    rws = [clean_name(r[0]) for r in rows[1:] if r and _is_header_text(r[0])]
    # Row headers only when the first column is textual for most rows (a label column)
    if rows[1:] and len(rws) < 0.5 * len(rows[1:]):
        rws = []
    dedup = lambda xs: list(dict.fromkeys(x for x in xs if x))  # noqa: E731
    return dedup(cols), dedup(rws)


def structural_entity(node: Node) -> RawEntity | None:
    """The typed entity standing for a table, equation or image node itself (None for text)."""
    page = node.page_idx + 1
    caption = clean_name(node.meta.get("caption") or "")
    if node.type == "table":
        name = caption[:80] if caption else f"Table on page {page}"
        desc = caption or f"Table on page {page}: {' '.join(node.text.split())[:200]}"
        return RawEntity(name=name, type="table", description=desc, structural=True)
    if node.type == "equation":
        latex = str(node.meta.get("latex") or node.text).strip()
        short = " ".join(latex.split())[:60]
        return RawEntity(name=f"Formula on page {page}: {short}", type="formula",
                         description=latex[:500], structural=True)
    if node.type == "image":
        name = caption[:80] if caption else f"Figure on page {page}"
        return RawEntity(name=name, type="image", description=image_text(node)[:500] or name,
                         structural=True)
    return None


def image_text(node: Node) -> str:
    """What an image node says without a VLM: its caption, footnote, OCR text and chart rows."""
    parts = [node.text] + [str(node.meta.get(k) or "") for k in SAID_META_KEYS]
    seen: list[str] = []
    for p in parts:
        p = p.strip()
        if p and p not in seen:
            seen.append(p)
    return "\n".join(seen)


def extractor_text(node: Node) -> str:
    """The text an entity extractor reads for a node, by modality (a table's caption and markdown,
    an equation's LaTeX, an image's caption and OCR): not what the node is searched by, which is
    `bookindex.core.model.node_text`."""
    if node.type == "section":
        return node.title
    if node.type == "image":
        return image_text(node)
    if node.type == "table":
        md = node.meta.get("markdown")
        cap = node.meta.get("caption") or ""
        return "\n".join(x for x in (cap, md or node.text) if x)
    if node.type == "equation":
        return str(node.meta.get("latex") or node.text)
    return node.content


def add_structure(node: Node, ex: NodeExtraction) -> NodeExtraction:
    """Apply §4.3.1's modality rules to an extraction: typed entity, headers, links to it."""
    struct = structural_entity(node)
    if struct is None:
        return ex
    names = {name_key(e.name) for e in ex.entities}
    others = [e for e in ex.entities if name_key(e.name) != name_key(struct.name)]
    headers: list[RawEntity] = []
    rels = list(ex.relations)
    if node.type == "table":
        cols, rws = table_headers(node)
        for h, kind in [(c, "column") for c in cols] + [(r, "row") for r in rws]:
            if name_key(h) not in names:
                headers.append(RawEntity(name=h, type="table header",
                                         description=f"{kind.capitalize()} header of {struct.name}"))
                names.add(name_key(h))
            rels.append(RawRelation(source=h, target=struct.name, description=f"{kind} header of the table",
                                    keywords=[CONTAINED_IN], weight=1.0))
    linked = {name_key(r.source) for r in rels if name_key(r.target) == name_key(struct.name)}
    for e in others:
        if name_key(e.name) not in linked:
            rels.append(RawRelation(source=e.name, target=struct.name,
                                    description=f"appears in the {struct.type}",
                                    keywords=[CONTAINED_IN], weight=1.0))
    return NodeExtraction(node.id, [struct] + others + headers, rels, ex.error)
