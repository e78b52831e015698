"""What the operators ask of a document's tree on every question, derived once per document.

The selectors, Text_Reasoning and Skyline_Ranker each walked thousands of nodes per question
(and per sub-question of a multi-hop one) to find the scoring units, the reference entry of a
block, a section's subtree and the id order ties are broken by. None of that depends on the
question, so it is computed once per opened document and kept in its `DerivedViews`; the
question-time code then does set and dict look-ups, and sorts by (score, id) with numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from bookindex.core.model import LEAF_TYPES, DocumentTree, entry_of, is_entry
from bookindex.operators.context import IndexContext


@dataclass
class DocStructure:
    """Question-independent facts about one tree (see the module docstring)."""

    units: list[str]  # content leaves and reference entries, in document order (`leaves_of(tree, None)`)
    unit_set: frozenset[str]
    entry: dict[str, str]  # a block -> the reference entry it belongs to (entries themselves not listed)
    id_rank: dict[str, int]  # node id -> its position in sorted id order (ties between equal scores)
    _subtrees: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, tree: DocumentTree) -> "DocStructure":
        units = [n.id for n in tree.walk() if n.type in LEAF_TYPES or is_entry(n)]
        entry: dict[str, str] = {}
        for nid in tree.nodes:
            e = entry_of(tree, nid)
            if e is not None and e != nid:
                entry[nid] = e
        return cls(units=units, unit_set=frozenset(units), entry=entry,
                   id_rank={i: k for k, i in enumerate(sorted(tree.nodes))})

    def subtree(self, tree: DocumentTree, node_id: str) -> list[str]:
        """The ids of `node_id` and its descendants in document order (kept: a document has few
        sections the selectors choose, and they choose the same ones often)."""
        out = self._subtrees.get(node_id)
        if out is None:
            out = self._subtrees[node_id] = [n.id for n in tree.walk(node_id)]
        return out

    def ranks(self, ids: list[str]) -> np.ndarray | None:
        """Each id's position in sorted id order; None when one is not a node of the tree."""
        if not ids:
            return np.zeros(0, dtype=np.int64)
        try:
            got = itemgetter(*ids)(self.id_rank)
        except KeyError:
            return None
        return np.array(got if len(ids) > 1 else [got], dtype=np.int64)

    def ranked(self, ids: list[str], scores: np.ndarray, n: int | None = None,
               ranks: np.ndarray | None = None) -> list[str]:
        """`ids` ordered by score, best first, ties by id: the order of
        `sorted(ids, key=lambda i: (-score, i))`, the first `n` of it (`ranks`: `ranks(ids)`)."""
        if not ids:
            return []
        rank = ranks if ranks is not None else self.ranks(ids)
        if rank is None:  # an id outside the tree (an edited plan): the plain sort
            order = sorted(range(len(ids)), key=lambda k: (-float(scores[k]), ids[k]))
            return [ids[k] for k in order[:n]]
        return [ids[k] for k in np.lexsort((rank, -np.asarray(scores, dtype=np.float64)))[:n]]


def doc_structure(ctx: IndexContext) -> DocStructure:
    if ctx.views.structure is None:
        ctx.views.structure = DocStructure.build(ctx.tree)
    return ctx.views.structure


def unit_ids(ctx: IndexContext, ids: list[str] | None) -> list[str]:
    """The units reasoners score among `ids` (None = the whole document), in `ids`' order:
    what `selector.leaves_of(tree, ids)` returns."""
    s = doc_structure(ctx)
    if ids is None:
        return list(s.units)
    units = s.unit_set
    return [i for i in ids if i in units]
