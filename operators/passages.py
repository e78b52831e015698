"""Evidence as readable passages: what a reader (an LLM or a person) gets for one ranked node.

A ranked node alone is often a fragment: the parameter list of a reference entry, the second
half of a paragraph split by a page break, a table without the sentence that introduces it. A
passage is the ranked node with its title path (which names the entry or section it belongs to)
and the adjacent blocks of the same entry or paragraph, within a character budget, so the reader
sees what the node means. Context blocks already shown by an earlier passage are not repeated.
Packed into a prompt's token budget (`pack_passages`), the best-ranked item also shows the blocks
next to it on its page beyond its section, passing over one too long for its room: a page is the
layout's unit where a section is the writer's, and the answer to a question whose words rank one
block is often in the next subsection, in the table rows above a ranked caption or in the lines
that head the page.
Citations still point at the ranked node itself (its page and box); `node_ids` lists every node
whose text a passage shows, for interfaces that highlight them.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple
from weakref import WeakKeyDictionary

from bookindex.core.model import LEAF_TYPES, DocumentTree, Node
from bookindex.core.pipe_tables import TABLE_RULE, is_pipe_row, row_cells
from bookindex.core.quantities import DIGITS
from bookindex.operators.glossary import expansion
from bookindex.operators.labels import label_at_start
from bookindex.providers.lexical import joined_words, tokenize
from bookindex.providers.nlp import parsed_question

ITEM_CHARS = 1200  # the most one passage shows when the budget allows
MIN_ITEM_CHARS = 400  # the least, however many items share the budget
BUDGET_CHARS = 7000  # all passages of one prompt together (about 1,800 tokens)
# the blocks a ranked block's neighbours may be; code too: a section small enough is shown whole
# with its code anyway, and the text layer OCR adds to a scanned page (a monospaced glyphless font)
# is parsed as code blocks, one per line
_CONTEXT_TYPES = ("text", "equation", "table", "code")
_PAGE_TYPES = (*_CONTEXT_TYPES, "list")  # what the best-ranked item may show of its page beyond its section
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
# an item that does not fit in what is left of the budget is cut to its share of it up to this many
# times (its cost in tokens is measured, not known in advance) rather than left out with the
# budget's last tokens
SHRINK_TRIES = 3
# the best-ranked item's room, and the room of every item from the TAIL_FROM-th on: the first item
# holds the answer most often, and when it does not, the block that does is often elsewhere on its
# page (the next subsection, the caption's table rows); the ranking's tail holds it least often
# (docs/benchmarks.md, "Answer in evidence"; the variants measured: docs/benchmarks-log.md, "The
# page of the best-ranked item")
HEAD_ITEM_CHARS = 900
TAIL_ITEM_CHARS = 450
TAIL_FROM = 4


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
    # the title path as the prompt shows it when that differs from `title_path` (`pack_passages`:
    # outer titles an earlier item already showed are "…")
    shown_path: tuple[str, ...] | None = None

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
        path = self.title_path if self.shown_path is None else self.shown_path
        return pages + (f" · {' > '.join(path)}" if path else "")

    def render(self) -> str:
        """Where it is, then what it says: the text a reader is shown for this item."""
        return f"({self.where})\n{self.text}"

    @property
    def name(self) -> str:
        """The entry or section the passage comes from: the innermost title ('' at top level)."""
        return self.title_path[-1] if self.title_path else ""


def _path_sections(tree: DocumentTree, node: Node) -> list[Node]:
    """The titled sections enclosing `node` (itself included when it is a section), outermost first."""
    chain = [*tree.parent_path(node), node] if node.type == "section" else tree.parent_path(node)
    return [n for n in chain if n.type == "section" and n.title.strip()]


def _title(section: Node) -> str:
    return " ".join(section.title.split())[:100]


def title_path(tree: DocumentTree, node: Node) -> tuple[str, ...]:
    """Titles of the sections enclosing `node` (itself included when it is a section)."""
    return tuple(_title(n) for n in _path_sections(tree, node))


# runs of one punctuation mark (dot leaders of a table of contents, rules of underscores or
# dashes, spaced dots): characters that cost prompt tokens and say nothing
_LEADERS = re.compile(r"(?:([^\w\s|])\1{3,}|(?:[^\w\s|] ){4,})[^\w\s|]?")

# each tree's nodes as shown in a passage: every question's context walk measures the same
# siblings again (a section of a reference manual has hundreds), and a served tree is long-lived
_FLAT: WeakKeyDictionary[DocumentTree, dict[str, str]] = WeakKeyDictionary()


def _flat(tree: DocumentTree, node: Node, tidy: bool = False) -> str:
    """The node's text as a passage shows it: tables keep their line structure (Markdown/HTML
    rows); prose is one line. With `tidy`, runs of one punctuation mark (`_LEADERS`) are "…"."""
    known = _FLAT.setdefault(tree, {})
    key = node.id + "\0" if tidy else node.id
    text = known.get(key)
    if text is None:
        rows = _in_rows(node)
        text = node.content.strip() if rows else " ".join(node.content.split())
        if tidy:
            text = _LEADERS.sub(" … ", text)
            text = text if rows else " ".join(text.split())
        known[key] = text
    return text


def _in_rows(node: Node) -> bool:
    """Whether a block reads in rows, one per line: a table, or a chart whose labels and values
    the parser read from the text layer (`meta["chart_text"]`, parsing.pdf_labelled_charts)."""
    return node.type == "table" or (node.type == "image" and bool(node.meta.get("chart_text")))


def _shown_beside(node: Node, types: tuple[str, ...]) -> bool:
    """Whether a block may be shown next to a ranked one: one of `types`, or a chart read in rows
    (other figures are passed over: OCR's reading of a picture is rarely worth its room)."""
    return node.type in types or _in_rows(node)


def _section_leaves(tree: DocumentTree, section: Node) -> list[Node]:
    return [tree.nodes[c] for c in section.children if tree.nodes[c].type in LEAF_TYPES]


def _context(tree: DocumentTree, node: Node, room: int, shown: set[str], tidy: bool = False,
             lead: bool = False) -> list[Node]:
    """The ranked node and the neighbours of the same entry or paragraph that fit in `room`.

    A section node shows its own leading blocks. A small enclosing section (a reference entry, a
    short subsection) is shown whole; otherwise siblings are added outwards one at a time, the
    shorter of the next following and the next preceding block first (the following one on a
    tie: a paragraph cut by a page or column break continues there), so that one long block on
    one side does not crowd out the short ones on the other (a label and its value, a table's
    total under it); a term or a label (`_introduces`) takes what follows it first. Each block
    costs its length and the line break that joins it. With `lead` (the section is titled with
    the question's words: a FAQ's question, a topic's name), the section's first blocks up to the
    ranked one come first when they fit: a section opens with what it is about ("The
    Comprehensive R Archive Network (CRAN) is ..."), and a block deeper in it that repeats the
    question's word (a URL, a closing remark) is a detail of that answer.
    """
    if node.type == "section":
        picked: list[Node] = []
        used = len(node.title)
        for leaf in _section_leaves(tree, node):
            if leaf.id in shown:
                continue
            if used + len(_flat(tree, leaf, tidy)) + 1 > room and picked:
                break
            picked.append(leaf)
            used += len(_flat(tree, leaf, tidy)) + 1
        return picked
    parent = tree.nodes[node.parent] if node.parent is not None else None
    if parent is None:
        return [node]
    siblings = _section_leaves(tree, parent) if parent.type in ("section", "document") else []
    sibling_ids = [s.id for s in siblings]
    if node.id not in sibling_ids:
        return [node]
    whole = sum(len(_flat(tree, s, tidy)) + 1 for s in siblings) - 1
    if parent.type == "section" and whole <= room:
        return [s for s in siblings if s.id == node.id or s.id not in shown]
    pos = sibling_ids.index(node.id)
    lo, hi = pos, pos
    flat = _flat(tree, node, tidy)
    used = len(flat)
    open_sides = {1, -1}
    opening = siblings[:pos + 1]
    if lead and pos > 0 and not any(s.id in shown or not _shown_beside(s, _CONTEXT_TYPES) for s in opening[:-1]):
        cost = sum(len(_flat(tree, s, tidy)) + 1 for s in opening) - 1
        if cost <= room:
            lo, used, open_sides = 0, cost, {1}
    # a term or a label ("umask" over its synopsis and description) introduces what follows it, as
    # does a block ending in a colon ("Two multithread interfaces are supported:" over its list)
    colon = flat.rstrip().endswith(":")
    leads = (node.type == "code" and _introduces(flat)) or colon
    while open_sides:
        nxt = {step: (hi + 1 if step == 1 else lo - 1) for step in open_sides}
        step = 1 if leads and 1 in open_sides else min(
            open_sides, key=lambda st: (len(_flat(tree, siblings[nxt[st]], tidy)) if 0 <= nxt[st] < len(siblings)
                                        else math.inf, -st))
        j = nxt[step]
        if not 0 <= j < len(siblings):
            open_sides.discard(step)
            continue
        cand = siblings[j]
        cost = len(_flat(tree, cand, tidy)) + 1
        introduced = colon and j == pos + 1 and cand.type == "list"  # the list the colon announces
        if (not _shown_beside(cand, _CONTEXT_TYPES) and not introduced) or cand.id in shown or used + cost > room:
            open_sides.discard(step)
            continue
        used += cost
        lo, hi = min(lo, j), max(hi, j)
    return siblings[lo:hi + 1]


INTRO_CHARS = 40  # a block this short that ends no sentence names what follows it (`_introduces`)


def _introduces(text: str) -> bool:
    """Whether a code block is the term of what follows it: one short line that ends no sentence
    ("umask", "PS2", "--login"), as a manual types a command, an option or a variable over its
    description. Its neighbours after it are what it names. (A short line of prose is not: a
    map's or a chart's labels are short lines whose context is on both sides.)"""
    t = text.strip()
    return bool(t) and "\n" not in t and len(t) <= INTRO_CHARS and t[-1] not in ".!?"


OMITTED = "| … |"  # where a focused table leaves rows out


_YEARS_ROW = re.compile(r"\|(?:\s*(?:(?:FY\s?|fiscal\s+)?(?:19|20)\d\d)?\s*\|)+", re.I)  # cells empty or a year


def focused_table(text: str, room: int, terms: Sequence[str]) -> str:
    """A Markdown table too long for `room` characters as its header rows (through the separator
    line) and the body rows that hold most of the question's `terms`, in the table's order, with
    `OMITTED` where rows are left out. A row's score sums, over the terms it holds, their inverse
    frequency among the table's rows ("liabilities" in one row counts more than "total" in ten):
    the question names a row ("total liabilities") and the table names its columns in its header
    (with the rows of years right below the separator line, where the parser often puts them).
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
    # the columns' years the parser set below the rule ("|  | 2018 |  | 2017 |") head the table too:
    # without them a statement's columns are not told apart
    while body and _YEARS_ROW.fullmatch(body[0].strip()) and re.search(r"\b(?:19|20)\d\d\b", body[0]):
        head, body = [*head, body[0]], body[1:]
    return _kept_rows(head, body, room, terms) or text


CHART_HEAD_LINES = 2  # a chart's first lines: its title or its legend, what its rows' values are


def focused_rows(text: str, room: int, terms: Sequence[str]) -> str:
    """A chart read in rows (parsing.pdf_labelled_charts) too long for `room` characters as its
    first CHART_HEAD_LINES lines (its title, its legend) and the rows that hold most of the
    question's `terms`, "…" where rows are left out, as `focused_table` shows a table; returned
    whole when it fits or when no row holds a term."""
    if len(text) <= room or not terms:
        return text
    return _chart_rows(text, room, terms) or text


def _chart_rows(text: str, room: int, terms: Sequence[str]) -> str | None:
    """A chart's head lines and the rows holding `terms` (`focused_rows`); None when no row does."""
    lines = text.splitlines()
    return _kept_rows(lines[:CHART_HEAD_LINES], lines[CHART_HEAD_LINES:], room, terms, "…")


def _kept_rows(head: list[str], body: list[str], room: int, terms: Sequence[str],
               omitted: str = OMITTED) -> str | None:
    """`head` and the `body` rows that hold most of `terms` within `room` characters, in their
    order, `omitted` where rows are left out (`focused_table`); None when no row holds a term
    or none fits. When the question asks for an extreme (`Terms.extreme`), a row holding a
    column's largest or smallest number scores as if it held one more term, one no other row
    holds (`_extreme_rows`): both ends, since which end the superlative means is in its word."""
    row_words = [set(tokenize(ln)) for ln in body]
    wanted = set(terms).union(joined_words(terms, set().union(*row_words)))  # "urlcolor": URL, color
    row_terms = [wanted.intersection(w) for w in row_words]
    df = {t: sum(t in rt for rt in row_terms) for t in wanted}
    scores = [sum(math.log(1 + len(body) / df[t]) for t in rt) for rt in row_terms]
    if isinstance(terms, Terms) and terms.extreme:  # a column's extreme counts as one term held by one row
        for i in _extreme_rows(body):
            scores[i] += math.log(1 + len(body))
    if not any(scores):
        return None
    used = sum(len(ln) + 1 for ln in head) + len(omitted) + 1
    keep: set[int] = set()
    for i in sorted(range(len(body)), key=lambda i: (-scores[i], i)):
        if scores[i] <= 0:
            break
        if used + len(body[i]) + len(omitted) + 2 > room:
            continue  # a row too long for what is left (a paragraph the parser ran into the table) gives way
        keep.add(i)
        used += len(body[i]) + len(omitted) + 2
    if not keep:
        return None
    out, gap = list(head), False
    for i, ln in enumerate(body):
        if i in keep:
            out.append(ln)
            gap = False
        elif not gap:
            out.append(omitted)
            gap = True
    return "\n".join(out)


_CELL_NUMBER = re.compile(rf"(?<![\w.])[-+(]?\$?({DIGITS})\)?%?(?![\w.])")


def _row_values(line: str) -> list[float | None]:
    """A row's numbers: one per cell of a Markdown table row (None for a cell without one), else
    every number of the line in order (a chart read in rows)."""
    def num(t: str) -> float | None:
        m = _CELL_NUMBER.search(t)
        if not m:
            return None
        v = float(m.group(1).replace(",", ""))
        return -v if m.group(0).startswith(("-", "(")) else v
    s = line.strip()
    if is_pipe_row(s):
        return [num(c) for c in row_cells(s)]
    return [num(m.group(0)) for m in _CELL_NUMBER.finditer(s)]


def _extreme_rows(body: list[str]) -> set[int]:
    """The rows holding a column's largest or smallest number: for a question that asks for an
    extreme ("which subgroup gained most"), the row it names is the one whose number stands out,
    not one that shares its words. Columns are a table's cells; a chart's rows are lined up by
    the position of their numbers among the rows with the most common count of them."""
    values = [_row_values(ln) for ln in body]
    counts: dict[int, int] = {}
    for v in values:
        if sum(x is not None for x in v):
            counts[len(v)] = counts.get(len(v), 0) + 1
    if not counts:
        return set()
    width = max(counts, key=lambda w: (counts[w], w))
    rows = [i for i, v in enumerate(values) if len(v) == width]
    out: set[int] = set()
    for j in range(width):
        col = [(values[i][j], i) for i in rows if values[i][j] is not None]
        if len(col) < 3 or len({x for x, _ in col}) < 2:
            continue
        out.add(max(col, key=lambda c: (c[0], -c[1]))[1])
        out.add(min(col)[1])
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_WORD = re.compile(r"\S+")


def focused_text(text: str, room: int, terms: Sequence[str]) -> str:
    """A block too long for `room` characters as the stretch of it that holds most of the
    question's `terms`, marked "…" where it is cut. A stretch starts at a sentence (or, within a
    long sentence, at a word about every quarter of `room`); it scores the inverse frequency,
    among the block's sentences, of each question term it holds, so a term of every sentence
    counts little; the earliest best stretch wins, and the block's start when no term occurs (the
    start is where its topic is stated)."""
    if len(text) <= room:
        return text
    wanted = set(terms).union(joined_words(terms, set(tokenize(text))))
    starts = sorted({0} | {m.end() for m in _SENTENCE_END.finditer(text)}
                    | {m.start() for m in _WORD.finditer(text) if m.start() % max(1, room // 4) < 8})
    sentences = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    found = [wanted.intersection(tokenize(x)) for x in sentences]
    df = {t: sum(t in f for f in found) for t in wanted}
    weight = {t: math.log(1 + len(sentences) / df[t]) for t in wanted if df[t]}
    best, best_score = 0, 0.0
    for st in starts:
        score = sum(weight.get(t, 0.0) for t in set(tokenize(text[st:st + room])))
        if score > best_score + 1e-9:
            best, best_score = st, score
    head = "… " if best else ""
    cut = text[best:best + room - len(head) - 2]
    return head + (cut if best + len(cut) >= len(text) else cut.rsplit(" ", 1)[0] + " …")


# each tree's headings and blocks by the page they start on, in document order
_PAGE_SEQ: WeakKeyDictionary[DocumentTree, dict[int, list[Node]]] = WeakKeyDictionary()


def _page_sequence(tree: DocumentTree, page: int) -> list[Node]:
    pages = _PAGE_SEQ.get(tree)
    if pages is None:
        pages = {}
        for n in tree.walk():
            if n.type != "document":
                pages.setdefault(n.page_idx, []).append(n)
        _PAGE_SEQ[tree] = pages
    return pages.get(page, [])


TAIL_CHARS = 240  # the most of the next page a sentence broken by the page break is shown with
# a prose block that stops mid-sentence: no full stop, colon or closing bracket after its last word
_OPEN_END = re.compile(r"(?:[^\W_]|,)\s*$")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_BARE_NUMBER = re.compile(r"\s*(?:\d{1,4}|[ivxlc]{1,6})\s*", re.I)  # a page number left in the text


def _font_size(node: Node) -> float | None:
    size = (node.meta.get("features") or {}).get("font_size")
    return float(size) if size else None


def _aside(node: Node, size: float) -> bool:
    """Whether a block between a page's last line and the next page's first is not the body's
    text: a footnote (a smaller font), a page number, a run of leader dots."""
    text = node.content.strip()
    letters = sum(c.isalpha() for c in text)
    own = _font_size(node)
    return node.type != "section" and (
        (own is not None and own < size - 0.6) or bool(_BARE_NUMBER.fullmatch(text))
        or letters < 0.3 * max(1, len(text.replace(" ", ""))))


def page_break_tail(tree: DocumentTree, node: Node) -> tuple[str, str]:
    """The rest of a sentence a page break cuts: (the id of the block it goes on in, its text up
    to the sentence's end, `TAIL_CHARS` at most); ("", "") when `node` ends no sentence so. The
    node is a prose block that stops mid-sentence and is its page's last body text (footnotes,
    a page number or leader dots may follow); the next page's first body block, in the same
    font, opens in lower case. A passage shows the whole sentence where the parser kept one
    block per page ("So if you need to obey spaces" / "you can say \\usepackage[obeyspaces]{url}")."""
    size = _font_size(node)
    if node.type != "text" or size is None or not _OPEN_END.search(node.content):
        return "", ""
    at = _place(tree, node)
    if at < 0 or not all(_aside(n, size) for n in _page_sequence(tree, node.page_idx)[at + 1:]):
        return "", ""
    after = next((n for n in _page_sequence(tree, node.page_end_idx + 1) if not _aside(n, size)), None)
    own = _font_size(after) if after is not None else None
    if after is None or after.type != "text" or own is None or abs(own - size) > 0.6 \
            or not after.content.lstrip()[:1].islower():
        return "", ""
    text = " ".join(after.content.split())
    end = _SENTENCE_END.search(text)
    if end is not None and end.end() <= TAIL_CHARS:
        return after.id, text[:end.end()]
    return after.id, text[:TAIL_CHARS - 2].rsplit(" ", 1)[0] + " …"


def _shown_text(tree: DocumentTree, node: Node, tidy: bool = False) -> str:
    """What a block adds to a passage beyond its section: a heading its title, a leaf its text."""
    return " ".join(node.title.split()) if node.type == "section" else _flat(tree, node, tidy)


# the least room worth showing the start of a block too long to show whole (about 20 words)
PART_MIN_CHARS = 80


class _PageWalk(NamedTuple):
    """What `_on_its_page` adds: the nodes in page order, the text shown of a block shown in part
    (id -> text), and the nodes preceded by a block passed over (a "…" line marks the gap)."""

    nodes: list[Node]
    parts: dict[str, str]
    gaps: set[str]


def _start_of(tree: DocumentTree, node: Node, room: int, terms: Sequence[str], tidy: bool) -> str:
    """A block too long for `room` as its start, marked "…" where it is cut; a Markdown table as
    its header rows and the rows holding the question's `terms` when they fit (`focused_table`)."""
    text = _shown_text(tree, node, tidy)
    if _in_rows(node):
        rows = focused_table(text, room, terms) if node.type == "table" else focused_rows(text, room, terms)
        if len(rows) <= room:
            return rows
    return text[:room - 2].rsplit(" ", 1)[0] + " …"


def _on_its_page(tree: DocumentTree, node: Node, nodes: list[Node], room: int, shown: set[str],
                 tidy: bool = False, terms: Sequence[str] = (), cut: dict[str, str] | None = None) -> _PageWalk:
    """`nodes` (the passage of the ranked `node`) and, while they fit in `room`, the blocks next to
    them on `node`'s page beyond its section, headings included (a heading names what its blocks
    are about); figures are passed over, but for a chart read in rows (`_shown_beside`). A
    section is a unit of the writer's, a page one of the layout: the answer to a question whose
    words rank one block is often in the next subsection, in the table rows above a ranked
    caption, or in the lines that head the page.

    The next block on either side is taken shorter one first (the following one on a tie), as
    `_context` takes a block's neighbours; a block too long for what is left is passed over and
    the walk goes on past it (a short caption or heading beyond one long paragraph still fits),
    a "…" line marking the gap. The room then left shows the start of the first following block
    passed over (`_start_of`): the first bullets of the next subsection's list, a table's header
    and the rows holding the question's words. `cut`: what `nodes` show of a block shown in part."""
    parts: dict[str, str] = dict(cut or {})
    used = sum(len(parts.get(n.id) or _shown_text(tree, n, tidy)) + 1 for n in nodes) - 1
    seq = _page_sequence(tree, node.page_idx)
    at = {n.id: i for i, n in enumerate(seq)}
    idx = [at[n.id] for n in nodes if n.id in at]
    if not idx:
        return _PageWalk(nodes, {}, set())
    picked = {n.id: n for n in nodes}
    above = {n.id for n in tree.parent_path(node)}  # shown as the passage's title path

    def candidates(run: Sequence[Node]) -> list[Node]:
        return [c for c in run if c.id not in shown and c.id not in picked and c.id not in above
                and (c.type == "section" or _shown_beside(c, _PAGE_TYPES))]

    after = deque(candidates(seq[max(idx) + 1:]))
    before = deque(candidates(seq[:min(idx)][::-1]))
    passed: list[Node] = []
    first_passed: Node | None = None  # the first following block too long to show whole
    while after or before:
        forward = bool(after) and (not before or len(_shown_text(tree, after[0], tidy))
                                   <= len(_shown_text(tree, before[0], tidy)))
        cand = (after if forward else before).popleft()
        cost = len(_shown_text(tree, cand, tidy)) + 1
        if used + cost > room:
            passed.append(cand)
            used += 2  # the "…" line its gap may need
            if forward and first_passed is None and cand.type != "section":
                first_passed = cand
            continue
        picked[cand.id] = cand
        used += cost
    if first_passed is not None and room - used - 1 >= PART_MIN_CHARS:
        parts[first_passed.id] = _start_of(tree, first_passed, room - used - 1, terms, tidy)
        picked[first_passed.id] = first_passed
    order = {n.id: i for i, n in enumerate(seq)}
    ordered = sorted(picked.values(), key=lambda n: order.get(n.id, -1))
    skipped = sorted(order[n.id] for n in passed if n.id not in picked)
    gaps = {b.id for a, b in zip(ordered, ordered[1:]) if a.id in order and b.id in order
            and bisect_left(skipped, order[b.id]) > bisect_right(skipped, order[a.id])}
    return _PageWalk(ordered, parts, gaps)


def _table_below(tree: DocumentTree, nodes: list[Node], room: int, shown: set[str], tidy: bool,
                 terms: Sequence[str], cut: dict[str, str] | None = None) -> _PageWalk:
    """`nodes` and, when the block after the last of them on its page is a table they leave out,
    the start of that table in the room left (its header rows and the rows holding the question's
    `terms`, `focused_table`): a caption, a table's column-heading line the parser set apart, or
    "the following table presents …" ranks, and its table holds the answer. `cut`: what `nodes`
    show of a block shown in part."""
    parts: dict[str, str] = dict(cut or {})
    last = nodes[-1]
    seq = _page_sequence(tree, last.page_idx)
    at = next((k for k, n in enumerate(seq) if n.id == last.id), None)
    if at is None or at + 1 >= len(seq):
        return _PageWalk(nodes, parts, set())
    table = seq[at + 1]
    left = room - sum(len(parts.get(n.id) or _shown_text(tree, n, tidy)) + 1 for n in nodes) - 1
    if not _in_rows(table) or table.id in shown or any(n.id == table.id for n in nodes) or left < PART_MIN_CHARS:
        return _PageWalk(nodes, parts, set())
    parts[table.id] = _start_of(tree, table, left, terms, tidy)
    return _PageWalk([*nodes, table], parts, set())


def _chart_asked(tree: DocumentTree, node: Node, room: int, shown: set[str], terms: Sequence[str],
                 tidy: bool) -> tuple[Node, str] | None:
    """The first chart read in rows on `node`'s page (not `node`, not shown already) with a row
    that holds one of the question's `terms`, and its legend and those rows in `room` characters
    (`focused_rows`). Retrieval keeps one block per page, and a report's page pairs a paragraph
    with a chart: the paragraph ranks ("… little or no confidence in Trump to handle an
    international crisis"), and the chart's row holds the number asked for ("Handle an
    international crisis 54 35 25 43")."""
    if not terms or _in_rows(node):
        return None
    for c in _page_sequence(tree, node.page_idx):
        if c.id == node.id or c.id in shown or c.type != "image" or not _in_rows(c):
            continue
        rows = _chart_rows(_flat(tree, c, tidy), room, terms)
        if rows is not None:
            return c, rows
    return None


# "Table 3 shows …", "(see Figure 2)": a block citing a numbered table or figure by its label
_CITES = re.compile(r"\b(Table|Figure|Fig\.)\s*(\d+(?:\.\d+)?)\b")


def _cited_part(tree: DocumentTree, node: Node, shown: set[str]) -> Node | None:
    """The table or the chart read in rows on `node`'s page that `node` cites by its label
    ("Table 3 shows the statistics after the filtration."), not shown already: the label is
    the start of the part's caption, or of the text block right above or below it. A paragraph
    that points to a table on its page says where its numbers are; the table is often too long
    to come along as a neighbour, and the paragraph alone does not hold the number asked."""
    if _in_rows(node):
        return None
    cited = {(m.group(1)[:3].lower(), m.group(2)) for m in _CITES.finditer(_flat(tree, node))}
    if not cited:
        return None
    seq = _page_sequence(tree, node.page_idx)
    for k, c in enumerate(seq):
        if c.id == node.id or c.id in shown or not _in_rows(c):
            continue
        beside = [seq[j] for j in (k - 1, k + 1) if 0 <= j < len(seq) and seq[j].type == "text"]
        labels = {_label_at_start(str(c.meta.get("caption") or ""))} | {_label_at_start(b.text or "") for b in beside}
        if cited & labels:
            return c
    return None


def _label_at_start(text: str) -> tuple[str, str] | None:
    """("tab", "3") for a text that begins "Table 3: …" (a caption), ("fig", "2") for "Fig. 2 …",
    else None: the label as `labels` reads a part's own, in the form `_CITES` reads a citation."""
    for word in ("table", "figure"):
        key = label_at_start(text, word)
        if key is not None:
            return word[:3], key
    return None


def _place(tree: DocumentTree, node: Node) -> int:
    """Where `node` stands in its page's sequence of headings and blocks (-1: not in it)."""
    return next((i for i, n in enumerate(_page_sequence(tree, node.page_idx)) if n.id == node.id), -1)


def _in_page_order(tree: DocumentTree, nodes: list[Node]) -> list[Node]:
    """`nodes`, each once, in document order (by page, then by place on its page)."""
    unique = list({n.id: n for n in nodes}.values())
    return sorted(unique, key=lambda n: (n.page_idx, _place(tree, n)))


def _gaps(tree: DocumentTree, nodes: list[Node]) -> set[str]:
    """The ids of `nodes` that do not follow the one before them on their page (a "…" goes
    before each)."""
    gaps: set[str] = set()
    for a, b in zip(nodes, nodes[1:]):
        at, bt = _place(tree, a), _place(tree, b)
        if a.page_idx == b.page_idx and at >= 0 and bt >= 0 and bt != at + 1:
            gaps.add(b.id)
    return gaps


def _passage(tree: DocumentTree, nid: str, room: int, shown: set[str], terms: Sequence[str] = (),
             page: bool = False, tidy: bool = False, focus_blocks: bool = True) -> Passage:
    """The passage of one ranked node in at most `room` characters, skipping context in `shown`.
    A ranked table longer than `room` shows the rows holding the question's `terms`
    (`focused_table`), a longer block the stretch of it that holds them (`focused_text`). With
    `page`, what room its section leaves goes to the blocks next to it on its page
    (`_on_its_page`). With `tidy`, runs of one punctuation mark are shortened to "…". Without
    `focus_blocks`, only tables are focused on the terms: a long block shows its start."""
    node = tree.nodes[nid]
    long_block = (focus_blocks and node.type != "section" and not _in_rows(node) and bool(terms)
                  and len(_flat(tree, node, tidy)) > room)
    section = tree.nodes[node.parent] if node.parent is not None else None
    lead = bool(terms) and section is not None and section.type == "section" \
        and set(terms) <= set(tokenize(section.title))
    chart = _chart_asked(tree, node, room // 2, shown, terms, tidy) if node.type != "section" else None
    cites = _cited_part(tree, node, shown) if node.type != "section" else None
    if cites is not None and (chart is None or chart[0].id != cites.id):
        chart = (cites, _start_of(tree, cites, room // 2, terms, tidy))
    cut = {chart[0].id: chart[1]} if chart else {}
    left = room - len(chart[1]) - 3 if chart else room  # its rows, a line break and a "…" line
    nodes = [node] if long_block else _context(tree, node, left, shown, tidy, lead)
    if chart:
        nodes = _in_page_order(tree, [*nodes, chart[0]])
    walk = _PageWalk(nodes, cut, set())
    if page and node.type != "section" and nodes:
        walk = _on_its_page(tree, node, nodes, room, shown, tidy, terms, cut)
        nodes = walk.nodes
    elif node.type != "section" and nodes:
        walk = _table_below(tree, nodes, room, shown, tidy, terms, cut)
        nodes = walk.nodes
    if chart:
        walk = walk._replace(gaps=walk.gaps | _gaps(tree, nodes))
    parts = [(node.title, node.page_idx)] if node.type == "section" and node.title else []
    shown_ids = {n.id for n in nodes}
    for n in nodes:
        if n.id in walk.gaps:
            parts.append(("…", n.page_idx))
        if n.id in walk.parts:
            t = walk.parts[n.id]
        elif n.id == nid and n.type == "table":
            t = focused_table(_flat(tree, n, tidy), room, terms)
        elif n.id == nid and _in_rows(n):
            t = focused_rows(_flat(tree, n, tidy), room, terms)
        elif n.id == nid and long_block:
            t = focused_text(_flat(tree, n, tidy), room, terms)
        else:
            t = _shown_text(tree, n, tidy)
        tail_id, tail = page_break_tail(tree, n)
        if tail and tail_id not in shown_ids:
            t = f"{t} {tail}"  # the sentence the page break cut, whole
        parts.append((t, n.page_idx))
    parts = [(t, pg) for t, pg in parts if t]
    text = "\n".join(t for t, _ in parts)
    starts, pos = [], 0
    for t, pg in parts:
        starts.append((pos, pg + 1))
        pos += len(t) + 1
    if len(text) > room:  # a single long block: keep the start (where its topic is stated)
        text = text[:room - 2].rsplit(" ", 1)[0] + " …"
    leaves = [n for n in nodes if n.type != "section"]
    pages = [n.page_idx for n in leaves] or [node.page_idx]
    return Passage(node_id=nid, title_path=title_path(tree, node), text=text,
                   node_ids=tuple(n.id for n in leaves) or (nid,),
                   first_page=min(pages) + 1, last_page=max(pages) + 1, page_starts=tuple(starts))


class Terms(tuple[str, ...]):
    """The words a passage's focus looks for (`question_terms`), and whether the question asks
    for an extreme (a superlative: "which group gained most", "the highest hit rate"). Such a
    question names the row it wants by its number, not its words: a focused table or chart then
    also keeps the rows holding a column's largest or smallest number (`_extreme_rows`)."""

    extreme: bool

    def __new__(cls, words: Sequence[str] = (), extreme: bool = False) -> Terms:
        out = super().__new__(cls, words)
        out.extreme = extreme
        return out


def question_terms(question: str) -> Terms:
    """The words a passage's focus looks for: the question's, and the line items of the financial
    terms it names ("capital expenditure": purchases of property and equipment), the same
    expansion the lexical query gets (`operators.glossary`). A statement prints the line item,
    not the name the question gives it. Whether the question asks for an extreme is read from
    spaCy's tags (JJS, RBS: "most", "highest", "least"), not from a word list."""
    if not question:
        return Terms()
    return Terms(tokenize(f"{question} {expansion(question)}"), _asks_extreme(question))


def _asks_extreme(question: str) -> bool:
    """Whether spaCy tags a word of the question as a superlative (the parse the reader reads
    the question from: `parsed_question` parses each question once)."""
    doc = parsed_question(question)
    return doc is not None and any(t.tag_ in ("JJS", "RBS") for t in doc)


def build_passages(tree: DocumentTree, ids: list[str], *, budget_chars: int = BUDGET_CHARS,
                   item_chars: int = ITEM_CHARS, question: str = "", focus_blocks: bool = True) -> list[Passage]:
    """One passage per ranked id (same order). Each gets an equal share of `budget_chars`
    (between MIN_ITEM_CHARS and `item_chars`); context shown by an earlier passage is skipped.
    A long table shows the rows that hold the `question`'s terms (`focused_table`), and, with
    `focus_blocks`, a long text block the stretch that holds them (`focused_text`)."""
    room = max(MIN_ITEM_CHARS, min(item_chars, budget_chars // max(1, len(ids))))
    terms = question_terms(question)
    shown: set[str] = set()
    out = []
    for nid in ids:
        p = _passage(tree, nid, room, shown, terms, focus_blocks=focus_blocks)
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
                  item_chars: int = PACK_ITEM_CHARS, question: str = "", head_chars: int = HEAD_ITEM_CHARS,
                  tail_chars: int = TAIL_ITEM_CHARS) -> list[Passage]:
    """Passages best-ranked first until `budget_tokens` of prompt are spent.

    Each item may take up to `item_chars` (the first `head_chars`, those from the TAIL_FROM-th on
    `tail_chars`), or what is left of the budget; an item that would get less than MIN_PACK_CHARS
    is not shown, nor is anything after it, so the prompt holds the top of the ranking in full
    rather than a slice of everything. An item whose cost in tokens exceeds what is left (figures,
    short lines and table cells cost more tokens per character than prose) is cut to its share of
    it (SHRINK_TRIES) rather than left out. The first item is always shown, with the blocks next
    to it on its page beyond its section where its section leaves room (`_on_its_page`). An
    item's title path leaves out the outer titles an earlier item showed (`_packed`). Every prompt
    token costs the reader time (about 14 s per 1,000 on a 2-core CPU with the 1.5B model), and
    the ranked list's tail rarely holds the answer (docs/benchmarks.md, "Answer latency" and
    "Answer in evidence"). A long table shows the rows that hold the `question`'s terms
    (`focused_table`): a statement's first 600 characters are its first rows, rarely the row
    asked for; a long text block the stretch that holds them (`focused_text`). Runs of one
    punctuation mark (dot leaders) are shown as "…"."""
    left = max(0, budget_tokens)
    terms = question_terms(question)
    shown: set[str] = set()
    titled: set[str] = set()  # sections whose titles an earlier item's path showed
    out: list[Passage] = []
    for k, nid in enumerate(ids):
        cap = head_chars if k == 0 else tail_chars if k >= TAIL_FROM - 1 else item_chars
        room = min(cap, left * CHARS_PER_TOKEN)
        if out and room < MIN_PACK_CHARS:
            break
        sections = _path_sections(tree, tree.nodes[nid])
        p, cost = _packed(tree, nid, max(room, MIN_PACK_CHARS), shown, terms, k == 0, sections, titled)
        for _ in range(SHRINK_TRIES):
            if not out or cost <= left:
                break
            room = int(room * left / cost * 0.95)  # the room its cost says would fit, less a margin
            if room < MIN_PACK_CHARS:
                break
            p, cost = _packed(tree, nid, room, shown, terms, k == 0, sections, titled)
        if out and cost > left:
            break
        shown.update(p.node_ids)
        shown.add(nid)
        titled.update(n.id for n in sections)
        out.append(p)
        left -= cost
    return out


def _packed(tree: DocumentTree, nid: str, room: int, shown: set[str], terms: Sequence[str], first: bool,
            sections: list[Node], titled: set[str]) -> tuple[Passage, int]:
    """One packed item in `room` characters and its cost in prompt tokens. Its title path leaves
    out, as "…", the outer titles an earlier item showed (`titled`): the reader has them, and a
    filing's or a report's title repeated on every item is prompt tokens that say nothing new
    (docs/benchmarks.md, "Answer in evidence"). Its own section's title is always shown."""
    p = _passage(tree, nid, room, shown, terms, page=first, tidy=True)
    outer, own = sections[:-1], sections[-1:]
    if any(n.id in titled for n in outer):
        p = replace(p, shown_path=("…", *(_title(n) for n in outer if n.id not in titled), *map(_title, own)))
    return p, estimate_tokens(p.render()) + 4  # "[k] " and the blank line between items


def format_passages(passages: list[Passage], numbers: list[int] | None = None) -> str:
    """Numbered passages for a prompt; `numbers` keeps citation numbers global across sub-questions."""
    nums = numbers or list(range(1, len(passages) + 1))
    return "\n\n".join(f"[{k}] {p.render()}" for k, p in zip(nums, passages))


def passage_sources(passages: list[Passage], numbers: list[int] | None = None) -> dict[int, str]:
    """Citation number -> everything the reader was shown for it (title path and text)."""
    nums = numbers or list(range(1, len(passages) + 1))
    return {k: p.render() for k, p in zip(nums, passages)}
