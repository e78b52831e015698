"""The units a prompt's evidence is chosen from, and the declared features each is scored by.

`pack_passages` decides by hand-written rules which neighbours, rows and stretches of a ranked
node a reader is shown. Measured on MMLongBench, the packed evidence showed a gold page far more
often than it held the answer: the ranking found the page and the rules showed another part of
it. Here the choice is a ranking over small units instead: the sentences of a ranked node's
text blocks, the rows of its tables and charts, the headings around it, taken from the node
itself, its section's blocks next to it and its page's blocks next to it (`candidate_blocks`).
Each unit gets one feature record (`FEATURES`, computed by `unit_features`) whose weights are
fitted on whether a unit holds a gold answer (`scripts/fit_evidence.py`), and
`operators.evidence_select` fills the token budget with the best-scored units.

The features are what a reader would look at: how much of the question's vocabulary (weighted
by its rarity among the candidate units) the unit, its neighbours, its block and its table's
header hold; how far the unit is from the question's words in its block; the rank of the node
it came with and whether it is that node, its section's neighbour or its page's; its kind and
place in its block; its length and its share of digits.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import numpy as np

from bookindex.core.model import LEAF_TYPES, DocumentTree, Node
from bookindex.core.pipe_tables import TABLE_RULE
from bookindex.operators.passages import (
    _PAGE_TYPES,
    CHART_HEAD_LINES,
    _flat,
    _in_rows,
    _page_sequence,
    _shown_beside,
    estimate_tokens,
)
from bookindex.providers.lexical import ANALYSER

# Hand-set bounds of the candidate pool (no data decides them; they bound the query's cost): how
# many blocks on each side of a ranked node in its section and on its page are candidates, how
# many leading blocks a ranked section offers, and the length at which a sentence is cut in parts
SECTION_WINDOW = 4
PAGE_WINDOW = 12
SECTION_LEADS = 8
PART_CHARS = 300
MIN_SENTENCE = 40  # a shorter piece ("4.", "Fig. 2", "v.") is joined to the sentence after it
DISTANCE_CAP = 5  # unit and block distances are counted up to this many steps

KINDS = ("text", "row", "chart_row", "heading", "code", "list", "equation")
FEATURES = (
    "idf_overlap", "overlap_share", "neighbour_overlap", "block_overlap", "head_overlap",
    "term_distance", "owner_rank", "owner_first", "is_owner", "same_section", "same_page",
    "block_distance", "position", "first_unit", "log_chars", "digit_share", "has_number",
    "owner_overlap", "rules_shown", "rules_first", *(f"kind_{k}" for k in KINDS),
)

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(\[])")
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Block:
    """A candidate block: the node, the ranked node it came with (its `owner`, by rank), how it
    relates to that node ("owner", "section", "page") and how many places from it it is."""

    node: Node
    owner: str
    rank: int
    relation: str
    distance: int


@dataclass
class Unit:
    """One choosable unit of a block: a sentence (or a part of a long one), a table or chart row,
    a heading. `head` is the table's or chart's header lines shown with any of its rows."""

    block: Block
    index: int  # its place among its block's units
    text: str
    kind: str
    head: str = ""
    count: int = 1  # how many units its block has
    terms: frozenset[str] = frozenset()  # its analysed words (providers.lexical)
    tokens: int = 0  # its prompt tokens (passages.estimate_tokens)


# each tree's nodes in document order: a passage shows its blocks in that order
_ORDER: WeakKeyDictionary[DocumentTree, dict[str, int]] = WeakKeyDictionary()


def doc_order(tree: DocumentTree) -> dict[str, int]:
    """Node id -> its place in document order (computed once per tree)."""
    order = _ORDER.get(tree)
    if order is None:
        order = {n.id: i for i, n in enumerate(tree.walk())}
        _ORDER[tree] = order
    return order


def _choosable(node: Node) -> bool:
    return node.type == "section" and bool(node.title.strip()) or (
        node.type in LEAF_TYPES and _shown_beside(node, _PAGE_TYPES))


def _window(seq: Sequence[Node], at: int, width: int) -> list[tuple[Node, int]]:
    return [(seq[j], abs(j - at)) for j in range(max(0, at - width), min(len(seq), at + width + 1)) if j != at]


def _owned(tree: DocumentTree, nid: str, rank: int) -> list[Block]:
    """The candidate blocks a ranked node brings: itself (a section: its leading blocks), its
    section's blocks next to it, its page's blocks next to it."""
    node = tree.nodes[nid]
    if node.type == "section":
        leads = [tree.nodes[c] for c in node.children if tree.nodes[c].type in LEAF_TYPES][:SECTION_LEADS]
        return [Block(node, nid, rank, "owner", 0)] + [Block(n, nid, rank, "section", i + 1)
                                                       for i, n in enumerate(leads) if _choosable(n)]
    out = [Block(node, nid, rank, "owner", 0)]
    parent = tree.nodes.get(node.parent) if node.parent is not None else None
    if parent is not None:
        sibs = [tree.nodes[c] for c in parent.children if tree.nodes[c].type in LEAF_TYPES]
        at = next((i for i, s in enumerate(sibs) if s.id == nid), None)
        if at is not None:
            out += [Block(s, nid, rank, "section", d) for s, d in _window(sibs, at, SECTION_WINDOW) if _choosable(s)]
    seq = _page_sequence(tree, node.page_idx)
    at = next((i for i, s in enumerate(seq) if s.id == nid), None)
    above = {n.id for n in tree.parent_path(node)}  # shown as the passage's title path
    if at is not None:
        out += [Block(s, nid, rank, "page", d) for s, d in _window(seq, at, PAGE_WINDOW)
                if _choosable(s) and s.id not in above]
    return out


def candidate_blocks(tree: DocumentTree, ids: Sequence[str]) -> list[Block]:
    """Every candidate block of the ranked `ids`, each once, with the best-ranked node that
    brings it (and of that node's, its closest relation)."""
    best: dict[str, Block] = {}
    for rank, nid in enumerate(ids):
        if nid not in tree.nodes:
            continue
        for b in _owned(tree, nid, rank):
            old = best.get(b.node.id)
            if old is None or (old.rank == rank and (b.relation == "owner" or b.distance < old.distance)):
                best[b.node.id] = b
    return list(best.values())


def _parts(sentence: str) -> list[str]:
    """A sentence longer than PART_CHARS in parts of about that length, cut between words."""
    if len(sentence) <= PART_CHARS:
        return [sentence]
    out, cur = [], ""
    for w in sentence.split(" "):
        if cur and len(cur) + len(w) + 1 > PART_CHARS:
            out.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    return out + ([cur] if cur else [])


def _sentences(text: str) -> list[str]:
    """Prose cut where a sentence ends before a capital, a digit or an opening mark; a piece
    shorter than MIN_SENTENCE (a list number, an abbreviation) goes with the one after it."""
    out: list[str] = []
    carry = ""
    for piece in _SENTENCE.split(text):
        piece = f"{carry} {piece}".strip() if carry else piece.strip()
        if len(piece) < MIN_SENTENCE:
            carry = piece
            continue
        out.append(piece)
        carry = ""
    if carry:
        if out:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    return out


def _table_head(lines: list[str]) -> int:
    """How many leading lines of a table are its header (through the Markdown rule), 0 without one."""
    rule = next((i for i, ln in enumerate(lines[:4]) if TABLE_RULE.match(ln)), None)
    return 0 if rule is None else rule + 1


# each tree's blocks as their units' (text, kind, head, terms, tokens): the same blocks come back
# for question after question of a served document, and their splitting and analysis do not change
_SPLIT: WeakKeyDictionary[DocumentTree, dict[str, list[tuple[str, str, str, frozenset[str], int]]]] = WeakKeyDictionary()


def block_units(tree: DocumentTree, block: Block) -> list[Unit]:
    """A block as its units: a heading whole, a table or chart by rows under its header lines,
    prose by sentences (long ones in parts); split once per tree and block."""
    known = _SPLIT.setdefault(tree, {})
    parts = known.get(block.node.id)
    if parts is None:
        pieces = _split(tree, block.node)
        terms = ANALYSER.many([t for t, _, _ in pieces])
        parts = [(t, k, h, frozenset(w), estimate_tokens(t)) for (t, k, h), w in zip(pieces, terms)]
        known[block.node.id] = parts
    return [Unit(block, i, t, k, h, len(parts), w, n) for i, (t, k, h, w, n) in enumerate(parts)]


def _split(tree: DocumentTree, node: Node) -> list[tuple[str, str, str]]:
    """(text, kind, header lines) of each unit of `node`, in order."""
    if node.type == "section":
        return [(" ".join(node.title.split()), "heading", "")]
    if _in_rows(node):
        lines = [ln for ln in _flat(tree, node, True).splitlines() if ln.strip()]
        n_head = _table_head(lines) if node.type == "table" else min(CHART_HEAD_LINES, len(lines) - 1)
        head, kind = "\n".join(lines[:n_head]), "row" if node.type == "table" else "chart_row"
        return [(ln, kind, head) for ln in lines[n_head:]]
    kind = node.type if node.type in KINDS else "text"
    return [(p, kind, "") for s in _sentences(_flat(tree, node, True)) for p in _parts(s)]


def candidate_units(tree: DocumentTree, ids: Sequence[str]) -> list[Unit]:
    """Every unit of every candidate block of the ranked `ids`."""
    return [u for b in candidate_blocks(tree, ids) for u in block_units(tree, b)]


def _idf_sums(term_sets: Sequence[frozenset[str]], wanted: set[str], idf: dict[str, float]) -> np.ndarray:
    return np.array([sum(idf[t] for t in s & wanted) for s in term_sets], dtype=float)


def unit_features(units: Sequence[Unit], terms: Sequence[str], shown: Sequence[str] = ()) -> np.ndarray:
    """The feature matrix of `units` (rows) for a question with `terms` (columns: FEATURES).
    `shown`: the texts of the items today's rules (`pack_passages`) pack at the same budget,
    best-ranked first; whether a unit is among them is two of its features, so the fit weighs
    the rules' choice against the others."""
    if not units:
        return np.zeros((0, len(FEATURES)))
    term_sets = [u.terms for u in units]
    wanted = set(terms)
    n = len(units)
    df = Counter(t for s in term_sets for t in s & wanted)
    idf = {t: math.log(1 + n / df[t]) if df[t] else 0.0 for t in wanted}
    total = sum(idf.values()) or 1.0
    overlap = _idf_sums(term_sets, wanted, idf)
    by_block: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        by_block.setdefault(u.block.node.id, []).append(i)
    block_terms = {b: set().union(*(term_sets[i] for i in idx)) for b, idx in by_block.items()}
    block_overlap = {b: sum(idf[t] for t in s & wanted) for b, s in block_terms.items()}
    owner_overlap: dict[str, float] = {}
    for u in units:
        if u.block.relation == "owner":
            owner_overlap[u.block.owner] = block_overlap[u.block.node.id]
    heads = {u.head for u in units if u.head}
    head_terms = dict(zip(heads, (set(t) for t in ANALYSER.many(list(heads)))))
    rows = []
    for b, idx in by_block.items():
        hits = [k for k, i in enumerate(idx) if overlap[i] > 0]
        for k, i in enumerate(idx):
            u = units[i]
            near = [overlap[idx[j]] for j in (k - 1, k + 1) if 0 <= j < len(idx)]
            dist = min((abs(k - h) for h in hits), default=DISTANCE_CAP)
            head = sum(idf[t] for t in head_terms.get(u.head, set()) & wanted)
            rec = _record(u, overlap[i], total, max(near, default=0.0), block_overlap[b], head, dist,
                          owner_overlap.get(u.block.owner, 0.0), _shown_in(u.text, shown))
            rows.append((i, rec))
    rows.sort()
    return np.array([r for _, r in rows], dtype=float)


def _shown_in(text: str, shown: Sequence[str]) -> tuple[float, float]:
    """Whether `text` is in any of the rules' items, and in their first."""
    return float(any(text in t for t in shown)), float(bool(shown) and text in shown[0])


def _record(u: Unit, overlap: float, total: float, near: float, block: float, head: float, dist: int,
            owner: float, rules: tuple[float, float]) -> list[float]:
    """One unit's feature record, in the order of FEATURES."""
    b = u.block
    digits = len(_DIGIT.findall(u.text))
    return [
        overlap, overlap / total, near, block, head,
        min(dist, DISTANCE_CAP) / DISTANCE_CAP, 1.0 / (1 + b.rank), float(b.rank == 0),
        float(b.relation == "owner"), float(b.relation == "section"), float(b.relation == "page"),
        min(b.distance, DISTANCE_CAP) / DISTANCE_CAP, u.index / max(1, u.count - 1), float(u.index == 0),
        math.log1p(len(u.text)), digits / max(1, len(u.text)), float(digits > 0), owner, *rules,
        *(float(u.kind == k) for k in KINDS),
    ]
