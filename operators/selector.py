"""Selector operators (BookRAG §5.2, eqs. 4–5): narrow N to the patches worth reading.

Filter_Modal and Filter_Range apply explicit constraints C(n); Select_by_Entity and
Select_by_Section pick whole section subtrees at a chosen depth. Selectors compose: each one
intersects with the current candidate set, so filters nest as in eq. (12).
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np

from bookindex.core.model import LEAF_TYPES, DocumentTree, Node, is_entry
from bookindex.operators import prompts
from bookindex.operators.base import Operator, Params, State, top_items
from bookindex.operators.context import IndexContext
from bookindex.operators.structure import doc_structure
from bookindex.operators.textscore import get_text_index, hybrid_scores
from bookindex.providers.lexical import tokenize

MODAL_ALIASES = {
    "image": ("image",), "figure": ("image",), "figures": ("image",), "picture": ("image",),
    "chart": ("image",), "plot": ("image",), "images": ("image",), "photo": ("image",),
    "table": ("table",), "tables": ("table",), "equation": ("equation",), "formula": ("equation",),
    "code": ("code",), "list": ("list",), "text": ("text",), "paragraph": ("text",),
    "section": ("section",), "sections": ("section",), "chapter": ("section",),
}


def _intersect(state: State, nodes: list[str]) -> list[str]:
    if state.candidates is None:
        return nodes
    keep = set(state.candidates)
    return [n for n in nodes if n in keep]


def _narrow(state: State, nodes: list[str], op: Operator) -> list[str]:
    """Selectors after a filter: intersect, but never select nothing out of a non-empty filter."""
    out = _intersect(state, nodes)
    if not out and state.candidates:
        op.note(kept_filter="selection does not overlap the earlier filter; kept the filtered nodes")
        return list(state.candidates)
    return out


class FilterModalParams(Params):
    modal_types: list[str] = ["table"]
    section_level: int | None = None  # with "section": only sections at this level (chapters = 1)


class FilterModal(Operator[FilterModalParams]):
    """N_f = {n | type(n) ∈ modal_types} (eq. 4). Figure/chart/picture mean image nodes."""

    name = "Filter_Modal"
    kind = "selector"

    Params = FilterModalParams

    def apply(self, state: State) -> State:
        want: set[str] = set()
        for t in self.params.modal_types:
            want.update(MODAL_ALIASES.get(t.lower(), (t.lower(),)))
        lvl = self.params.section_level
        nodes = [n.id for n in self.ctx.tree.walk()
                 if n.type in want and (n.type != "section" or lvl is None or n.level == lvl)]
        state.candidates = _intersect(state, nodes)
        self.note(types=sorted(want), outputs={"nodes": len(state.candidates),
                                               "first": state.candidates[:10]})
        return state


def parse_page_range(value: str, page_count: int | None = None) -> tuple[int, int]:
    """'3-10' / '5' / 'first 10' / 'last 3' (1-based, inclusive) → 0-based (first, last)."""
    v = value.strip().lower()
    m = re.match(r"^(?:pages?\s*)?(\d+)\s*(?:-|–|to|through)\s*(\d+)$", v)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        return min(a, b) - 1, max(a, b) - 1
    m = re.match(r"^(?:pages?\s*)?(\d+)$", v)
    if m:
        return int(m.group(1)) - 1, int(m.group(1)) - 1
    m = re.match(r"^first\s+(\d+)", v)
    if m:
        return 0, int(m.group(1)) - 1
    m = re.match(r"^last\s+(\d+)", v)
    if m and page_count:
        return max(page_count - int(m.group(1)), 0), page_count - 1
    raise ValueError(f"cannot read page range {value!r}; use e.g. '3-10' or '5'")


def labelled_pages(value: str, labels: list[str] | None, most: int = 50) -> set[int]:
    """The 0-based pages that print the numbers of a numeric range ("9", "3-5"): a reader quotes
    the number printed on the page, which runs behind the physical one after a cover and front
    matter (`page_labels`). Empty without labels or for "first N" / "last N"."""
    if not labels:
        return set()
    try:
        a, b = parse_page_range(value)
    except ValueError:
        return set()
    if not re.match(r"^(?:pages?\s*)?\d", value.strip().lower()) or b - a >= most:
        return set()
    wanted = {str(n + 1) for n in range(a, b + 1)}
    return {i for i, lab in enumerate(labels) if lab.strip().lower() in wanted}


def _descendants(tree: DocumentTree, node: Node) -> list[str]:
    return [n.id for n in tree.walk(node)][1:]


class FilterRangeParams(Params):
    range_type: Literal["page", "section"] = "page"
    value: str = "1"


class FilterRange(Operator[FilterRangeParams]):
    """Nodes inside a page range (1-based, inclusive) or a section (title or number).

    Page ranges keep leaves whose content lies on those pages and sections whose heading does;
    a section range keeps every descendant of the matching section.
    """

    name = "Filter_Range"
    kind = "selector"

    Params = FilterRangeParams

    def apply(self, state: State) -> State:
        tree = self.ctx.tree
        p = self.params
        if p.range_type == "page":
            first, last = parse_page_range(p.value, tree.page_count)
            # the pages printing the range's numbers too (a reader quotes printed numbers)
            printed = sorted(q for q in labelled_pages(p.value, self.ctx.page_labels) if not first <= q <= last)
            leaves = {n.id for n in tree.nodes_on_pages(first, last)}
            for q in printed:
                leaves.update(n.id for n in tree.nodes_on_pages(q))
            nodes = [n.id for n in tree.walk() if n.id in leaves or
                     (n.type == "section" and (first <= (h := n.meta.get("heading_page", _heading_page(n))) <= last
                                               or h in printed))]
            self.note(pages=[first + 1, last + 1])
            if printed:
                self.note(printed_pages=[q + 1 for q in printed])
        else:
            sec = tree.find_section(p.value)
            if sec is None:
                nodes = []
                self.note(warning=f"no section matches {p.value!r}")
            else:
                nodes = _descendants(tree, sec)
                self.note(section={"id": sec.id, "title": sec.title})
        state.candidates = _intersect(state, nodes)
        self.note(outputs={"nodes": len(state.candidates), "first": state.candidates[:10]})
        return state


def _heading_page(n: Node) -> int:
    """A section's own heading page (page_idx is widened to its descendants' span only at the low end
    when a child starts earlier, which never happens in reading order)."""
    return n.page_idx


def unit_of(ctx: IndexContext, depth: int) -> dict[str, str]:
    """Each node → the section at `depth` containing it (or the deepest shallower section; or the
    node itself for content directly under the document). Cached per depth."""
    if depth in ctx.views.units:
        return ctx.views.units[depth]
    tree = ctx.tree
    out: dict[str, str] = {}
    stack: list[tuple[str, str | None]] = [(tree.root_id, None)]
    while stack:
        nid, unit = stack.pop()
        n = tree.nodes[nid]
        if n.type == "section" and n.level <= depth:
            unit = nid
        if n.type != "document":
            out[nid] = unit if unit is not None else nid
        stack.extend((c, unit) for c in n.children)
    ctx.views.units[depth] = out
    return out


def _subtrees(ctx: IndexContext, units: list[str]) -> list[str]:
    """The nodes of the sections `units` and their descendants, in order, without repeats."""
    s = doc_structure(ctx)
    seen: dict[str, None] = {}
    for u in units:
        seen.update(dict.fromkeys(s.subtree(ctx.tree, u)))
    return list(seen)


def _text_guard_units(ctx: IndexContext, state: State, units: dict[str, str], k: int) -> list[str]:
    """Units holding the question's k best text matches: a missing GT-link or a weak section title
    cannot hide the best passage from the reasoners."""
    if k <= 0:
        return []
    scores = hybrid_scores(ctx, state.question)
    ids = list(scores)
    best = doc_structure(ctx).ranked(ids, np.fromiter(scores.values(), dtype=np.float64, count=len(ids)), k)
    out: list[str] = []
    for nid in best:
        u = units.get(nid, nid)
        if u not in out:
            out.append(u)
    return out


class SelectByEntityParams(Params):
    depth: int = 2
    max_sections: int = 8
    text_guard: int = 20
    entity_ids: list[str] | None = None  # override the extracted entities


class SelectByEntity(Operator[SelectByEntityParams]):
    """Eq. (5): sections at `depth` linked to the query entities through M, then all descendants.

    When no query entity is linked the step reports that and the executor runs its fallback
    (Select_by_Section), as in eq. (9).
    """

    name = "Select_by_Entity"
    kind = "selector"

    Params = SelectByEntityParams

    fallback_needed: bool = False

    def apply(self, state: State) -> State:
        tree, graph = self.ctx.tree, self.ctx.graph
        ents = [e for e in (self.params.entity_ids or state.entity_ids) if e in graph.entities]
        self.fallback_needed = not ents
        if not ents:
            self.note(skipped="no query entity linked to the graph")
            return state
        units = unit_of(self.ctx, self.params.depth)
        weight: dict[str, float] = {}
        for rank, eid in enumerate(ents):
            for nid in graph.nodes_of(eid):
                if nid in tree.nodes and nid in units:
                    u = units[nid]
                    weight[u] = weight.get(u, 0.0) + 1.0 / (1 + rank)
        chosen = [u for u, _ in sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))[: self.params.max_sections]]
        if not chosen:
            self.fallback_needed = True
            self.note(skipped="linked entities have no GT-links into the tree")
            return state
        guard = [u for u in _text_guard_units(self.ctx, state, units, self.params.text_guard) if u not in chosen]
        nodes = _subtrees(self.ctx, chosen + guard)
        state.candidates = _narrow(state, nodes, self)
        self.note(sections=[[u, tree.nodes[u].title or tree.nodes[u].label, round(weight[u], 3)] for u in chosen],
                  text_guard_sections=guard,
                  outputs={"nodes": len(state.candidates)})
        return state


class SelectBySectionParams(Params):
    depth: int = 2
    max_sections: int = 5
    use_llm: bool = True
    title_weight: float = 0.3
    text_guard: int = 20
    section_ids: list[str] | None = None  # fixed choice (an edited plan)


class SelectBySection(Operator[SelectBySectionParams]):
    """Sections chosen from the table of contents, then all their descendants.

    With an LLM: the model picks from the TOC (the paper's method). Without one (or when it
    fails): sections scored by the similarity of the query to their title and their content.
    """

    name = "Select_by_Section"
    kind = "selector"

    Params = SelectBySectionParams

    def apply(self, state: State) -> State:
        tree = self.ctx.tree
        p = self.params
        units = unit_of(self.ctx, p.depth)
        how = "given"
        chosen = [s for s in (p.section_ids or []) if s in tree.nodes]
        if not chosen and p.use_llm and self.ctx.llm_available:
            try:
                chosen = self._llm_choice(state, units)
                how = "llm"
            except Exception as exc:  # noqa: BLE001
                self.note(fallback=self.llm_failed(exc))
                chosen = []
        if not chosen:
            how = "similarity"
            scored = self._similarity(state, units)
            chosen = [u for u, _ in scored[: p.max_sections]]
            self.note(section_scores=top_items(dict(scored), p.max_sections))
        guard = [u for u in _text_guard_units(self.ctx, state, units, p.text_guard) if u not in chosen]
        nodes = _subtrees(self.ctx, chosen + guard)
        state.candidates = _narrow(state, nodes, self)
        self.note(source=how, sections=[[u, tree.nodes[u].title or tree.nodes[u].label] for u in chosen],
                  text_guard_sections=guard, outputs={"nodes": len(state.candidates)})
        return state

    def _similarity(self, state: State, units: dict[str, str]) -> list[tuple[str, float]]:
        tree = self.ctx.tree
        leaf_scores = hybrid_scores(self.ctx, state.question)
        best: dict[str, float] = {}
        for nid, s in leaf_scores.items():
            u = units.get(nid, nid)
            best[u] = max(best.get(u, 0.0), s)
        q = set(tokenize(state.question))
        out = []
        for u, s in best.items():
            node = tree.nodes[u]
            title = set(tokenize(node.title)) if node.type == "section" else set()
            tsim = len(q & title) / max(len(q), 1)
            out.append((u, (1 - self.params.title_weight) * s + self.params.title_weight * tsim))
        out.sort(key=lambda kv: (-kv[1], kv[0]))
        return out

    def _llm_choice(self, state: State, units: dict[str, str]) -> list[str]:
        tree = self.ctx.tree
        unit_ids = list(dict.fromkeys(u for u in units.values() if tree.nodes[u].type == "section"))
        if not unit_ids:
            return []
        unit_ids = unit_ids[:300]
        toc = "\n".join(f"[{i}] {'  ' * (tree.nodes[u].level - 1)}{tree.nodes[u].title[:100]} "
                        f"(p. {tree.nodes[u].page_idx + 1}-{tree.nodes[u].page_end_idx + 1})"
                        for i, u in enumerate(unit_ids))
        res = self.ctx.active_llm.complete(prompts.SELECT_SECTIONS.format(toc=toc, query=state.question,
                                                                   max_sections=self.params.max_sections),
                                    schema=prompts.SectionChoice, stage="select_section")
        return [unit_ids[i] for i in res.sections if 0 <= i < len(unit_ids)][: self.params.max_sections]


def leaves_of(tree: DocumentTree, ids: list[str] | None) -> list[str]:
    """The units reasoners score among `ids` (None = the whole document): content leaves, and
    reference entries (parsing.entries), whose name and description are one unit."""
    if ids is None:
        return [n.id for n in tree.walk() if is_unit(n)]
    return [i for i in ids if is_unit(tree.nodes[i])]


def is_unit(node: Node) -> bool:
    return node.type in LEAF_TYPES or is_entry(node)


__all__ = ["FilterModal", "FilterRange", "SelectByEntity", "SelectBySection", "labelled_pages", "parse_page_range",
           "leaves_of", "is_unit", "unit_of", "get_text_index"]
