"""Evidence as readable passages: what a reader (an LLM or a person) gets for one ranked node.

A ranked node alone is often a fragment: the parameter list of a reference entry, the second
half of a paragraph split by a page break, a table without the sentence that introduces it. A
passage is the ranked node with its title path (which names the entry or section it belongs to)
and the adjacent blocks of the same entry or paragraph, within a character budget, so the reader
sees what the node means. Context blocks already shown by an earlier passage are not repeated.
Citations still point at the ranked node itself (its page and box); `node_ids` lists every node
whose text a passage shows, for interfaces that highlight them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from bookindex.core.model import LEAF_TYPES, DocumentTree, Node
from bookindex.providers.lexical import TABLE_RULE, tokenize

ITEM_CHARS = 1200  # the most one passage shows when the budget allows
MIN_ITEM_CHARS = 400  # the least, however many items share the budget
BUDGET_CHARS = 7000  # all passages of one prompt together (about 1,800 tokens)
_CONTEXT_TYPES = ("text", "equation", "table")
# packing into a token budget (pack_passages): an item's room in characters is its share of the
# tokens left times CHARS_PER_TOKEN (Qwen2.5's tokenizer: 2.0 on gnuplot to 3.6 on libtasn1);
# what it costs is then counted with estimate_tokens
CHARS_PER_TOKEN = 3
MIN_PACK_CHARS = 200  # an item with less room than this is not worth its place in the prompt
# the most one packed item shows: at 1,200 about four passages filled 1,000 tokens and the block
# that prints the answer was often a neighbour left out on a page the reader was shown; at 500-800
# more ranked nodes reach the prompt and more answers with them (docs/benchmarks.md, "Answer in
# evidence")
PACK_ITEM_CHARS = 600


@dataclass(frozen=True)
class Passage:
    """One evidence item as a reader sees it."""

    node_id: str  # the ranked node: citations point here
    title_path: tuple[str, ...]  # enclosing section titles, outermost first (an entry's name last)
    text: str
    node_ids: tuple[str, ...]  # every node shown, in document order
    first_page: int  # 1-based pages the shown nodes span
    last_page: int
    # (offset in `text`, 1-based page) where each shown node's text starts: the page of a sentence
    page_starts: tuple[tuple[int, int], ...] = ()

    def page_at(self, offset: int) -> int:
        """The 1-based page of the text at `offset` (the first page when unknown)."""
        page = self.first_page
        for start, pg in self.page_starts:
            if start > offset:
                break
            page = pg
        return page

    @property
    def where(self) -> str:
        pages = f"p. {self.first_page}" if self.first_page == self.last_page else f"pp. {self.first_page}-{self.last_page}"
        return pages + (f" · {' > '.join(self.title_path)}" if self.title_path else "")

    def render(self) -> str:
        """Where it is, then what it says: the text a reader is shown for this item."""
        return f"({self.where})\n{self.text}"

    @property
    def name(self) -> str:
        """The entry or section the passage comes from: the innermost title ('' at top level)."""
        return self.title_path[-1] if self.title_path else ""


def title_path(tree: DocumentTree, node: Node) -> tuple[str, ...]:
    """Titles of the sections enclosing `node` (itself included when it is a section)."""
    chain = [*tree.parent_path(node), node] if node.type == "section" else tree.parent_path(node)
    return tuple(" ".join(n.title.split())[:100] for n in chain if n.type == "section" and n.title.strip())


# each tree's nodes as shown in a passage: every question's context walk measures the same
# siblings again (a section of a reference manual has hundreds), and a served tree is long-lived
_FLAT: WeakKeyDictionary[DocumentTree, dict[str, str]] = WeakKeyDictionary()


def _flat(tree: DocumentTree, node: Node) -> str:
    """The node's text as a passage shows it: tables keep their line structure (Markdown/HTML
    rows); prose is one line."""
    known = _FLAT.setdefault(tree, {})
    text = known.get(node.id)
    if text is None:
        text = node.content.strip() if node.type == "table" else " ".join(node.content.split())
        known[node.id] = text
    return text


def _section_leaves(tree: DocumentTree, section: Node) -> list[Node]:
    return [tree.nodes[c] for c in section.children if tree.nodes[c].type in LEAF_TYPES]


def _context(tree: DocumentTree, node: Node, room: int, shown: set[str]) -> list[Node]:
    """The ranked node and the neighbours of the same entry or paragraph that fit in `room`.

    A section node shows its own leading blocks. A small enclosing section (a reference entry, a
    short subsection) is shown whole; otherwise siblings are added outwards, the following block
    first (a paragraph cut by a page or column break continues there), then the preceding one.
    """
    if node.type == "section":
        picked: list[Node] = []
        used = len(node.title)
        for leaf in _section_leaves(tree, node):
            if leaf.id in shown:
                continue
            if used + len(_flat(tree, leaf)) > room and picked:
                break
            picked.append(leaf)
            used += len(_flat(tree, leaf))
        return picked
    parent = tree.nodes[node.parent] if node.parent is not None else None
    if parent is None:
        return [node]
    siblings = _section_leaves(tree, parent) if parent.type in ("section", "document") else []
    sibling_ids = [s.id for s in siblings]
    if node.id not in sibling_ids:
        return [node]
    whole = sum(len(_flat(tree, s)) for s in siblings)
    if parent.type == "section" and whole <= room:
        return [s for s in siblings if s.id == node.id or s.id not in shown]
    pos = sibling_ids.index(node.id)
    lo, hi = pos, pos
    used = len(_flat(tree, node))
    grew = True
    while grew:
        grew = False
        for step in (1, -1):
            j = hi + 1 if step == 1 else lo - 1
            if not 0 <= j < len(siblings):
                continue
            cand = siblings[j]
            if cand.type not in _CONTEXT_TYPES or cand.id in shown or used + len(_flat(tree, cand)) > room:
                continue
            used += len(_flat(tree, cand))
            lo, hi = min(lo, j), max(hi, j)
            grew = True
    return siblings[lo:hi + 1]


OMITTED = "| … |"  # where a focused table leaves rows out


def focused_table(text: str, room: int, terms: Sequence[str]) -> str:
    """A Markdown table too long for `room` characters as its header rows (through the separator
    line) and the body rows that hold most of the question's `terms`, in the table's order, with
    `OMITTED` where rows are left out. A row's score sums, over the terms it holds, their inverse
    frequency among the table's rows ("liabilities" in one row counts more than "total" in ten):
    the question names a row ("total liabilities") and the table names its columns in its header.
    A table that fits, that is not Markdown, or without any term in a row: returned whole. The
    room the rows do not fill is left to the next passages (filling it with the table's first
    rows showed financebench's gold page for 0.48 of short-answer questions instead of 0.56, and
    no more answers: docs/benchmarks.md, "Tables focused on the question")."""
    if len(text) <= room:
        return text
    lines = text.splitlines()
    rule = next((i for i, ln in enumerate(lines[:4]) if TABLE_RULE.match(ln)), None)
    if rule is None or not terms:
        return text
    head, body = lines[:rule + 1], lines[rule + 1:]
    wanted = set(terms)
    row_terms = [wanted.intersection(tokenize(ln)) for ln in body]
    df = {t: sum(t in rt for rt in row_terms) for t in wanted}
    scores = [sum(math.log(1 + len(body) / df[t]) for t in rt) for rt in row_terms]
    if not any(scores):
        return text
    used = sum(len(ln) + 1 for ln in head) + len(OMITTED) + 1
    keep: set[int] = set()
    for i in sorted(range(len(body)), key=lambda i: (-scores[i], i)):
        if scores[i] <= 0 or used + len(body[i]) + len(OMITTED) + 2 > room:
            break
        keep.add(i)
        used += len(body[i]) + len(OMITTED) + 2
    if not keep:
        return text
    out, gap = list(head), False
    for i, ln in enumerate(body):
        if i in keep:
            out.append(ln)
            gap = False
        elif not gap:
            out.append(OMITTED)
            gap = True
    return "\n".join(out)


def _passage(tree: DocumentTree, nid: str, room: int, shown: set[str], terms: Sequence[str] = ()) -> Passage:
    """The passage of one ranked node in at most `room` characters, skipping context in `shown`.
    A ranked table longer than `room` shows the rows holding the question's `terms`
    (`focused_table`) instead of its first rows."""
    node = tree.nodes[nid]
    nodes = _context(tree, node, room, shown)
    parts = [(node.title, node.page_idx)] if node.type == "section" and node.title else []
    parts += [(focused_table(_flat(tree, n), room, terms) if n.id == nid and n.type == "table" else _flat(tree, n),
               n.page_idx) for n in nodes]
    parts = [(t, pg) for t, pg in parts if t]
    text = "\n".join(t for t, _ in parts)
    starts, pos = [], 0
    for t, pg in parts:
        starts.append((pos, pg + 1))
        pos += len(t) + 1
    if len(text) > room:  # a single long block: keep the start (where its topic is stated)
        text = text[:room - 2].rsplit(" ", 1)[0] + " …"
    pages = [n.page_idx for n in nodes] or [node.page_idx]
    return Passage(node_id=nid, title_path=title_path(tree, node), text=text,
                   node_ids=tuple(n.id for n in nodes) or (nid,),
                   first_page=min(pages) + 1, last_page=max(pages) + 1, page_starts=tuple(starts))


def build_passages(tree: DocumentTree, ids: list[str], *, budget_chars: int = BUDGET_CHARS,
                   item_chars: int = ITEM_CHARS, question: str = "") -> list[Passage]:
    """One passage per ranked id (same order). Each gets an equal share of `budget_chars`
    (between MIN_ITEM_CHARS and `item_chars`); context shown by an earlier passage is skipped.
    A long table shows the rows that hold the `question`'s terms (`focused_table`)."""
    room = max(MIN_ITEM_CHARS, min(item_chars, budget_chars // max(1, len(ids))))
    terms = tokenize(question) if question else []
    shown: set[str] = set()
    out = []
    for nid in ids:
        p = _passage(tree, nid, room, shown, terms)
        shown.update(p.node_ids)
        shown.add(nid)
        out.append(p)
    return out


_TOKENISH = re.compile(r"[A-Za-z]+|\d|[^\sA-Za-z\d]")


def estimate_tokens(text: str) -> int:
    """Prompt tokens of `text` without a tokenizer: letter runs, digits and symbols, times 1.1.
    Measured against Qwen2.5's tokenizer on passages of four documents (libtasn1, gnuplot, two
    MMLongBench PDFs) the count is 1.02-1.15x the real one, where characters/4 or /3 are off by
    up to 1.8x (gnuplot runs 2.0 characters per token, libtasn1 3.6)."""
    return int(len(_TOKENISH.findall(text)) * 1.1) + 1


def pack_passages(tree: DocumentTree, ids: list[str], budget_tokens: int, *,
                  item_chars: int = PACK_ITEM_CHARS, question: str = "") -> list[Passage]:
    """Passages best-ranked first until `budget_tokens` of prompt are spent.

    Each item may take up to `item_chars`, or what is left of the budget; an item that would get
    less than MIN_PACK_CHARS is not shown, nor is anything after it, so the prompt holds the top of
    the ranking in full rather than a slice of everything. The first item is always shown. Every
    prompt token costs the reader time (about 14 s per 1,000 on a 2-core CPU with the 1.5B
    model), and the ranked list's tail rarely holds the answer (docs/benchmarks.md, "Answer
    latency"). A long table shows the rows that hold the `question`'s terms (`focused_table`):
    a statement's first 600 characters are its first rows, rarely the row asked for."""
    left = max(0, budget_tokens)
    terms = tokenize(question) if question else []
    shown: set[str] = set()
    out: list[Passage] = []
    for nid in ids:
        room = min(item_chars, left * CHARS_PER_TOKEN)
        if out and room < MIN_PACK_CHARS:
            break
        p = _passage(tree, nid, max(room, MIN_PACK_CHARS), shown, terms)
        cost = estimate_tokens(p.render()) + 4  # "[k] " and the blank line between items
        if out and cost > left:
            break
        shown.update(p.node_ids)
        shown.add(nid)
        out.append(p)
        left -= cost
    return out


def format_passages(passages: list[Passage], numbers: list[int] | None = None) -> str:
    """Numbered passages for a prompt; `numbers` keeps citation numbers global across sub-questions."""
    nums = numbers or list(range(1, len(passages) + 1))
    return "\n\n".join(f"[{k}] {p.render()}" for k, p in zip(nums, passages))


def passage_sources(passages: list[Passage], numbers: list[int] | None = None) -> dict[int, str]:
    """Citation number -> everything the reader was shown for it (title path and text)."""
    nums = numbers or list(range(1, len(passages) + 1))
    return {k: p.render() for k, p in zip(nums, passages)}
