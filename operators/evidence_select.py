"""A prompt's evidence chosen unit by unit with fitted weights (`retrieval.evidence_selection`).

`operators.evidence_units` breaks the ranked nodes and the blocks around them into units
(sentences, table and chart rows, headings) with one feature record each; the weights shipped in
`evidence_weights.json` (a logistic regression fitted by `scripts/fit_evidence.py` on whether a
unit holds a gold answer, with the commit and the data it was fitted on) score them, and the
best-scored units fill the token budget. They are then shown as `pack_passages` shows its
items: one passage per ranked node that brought a chosen unit, best-ranked first, its blocks in
document order, "…" where units or blocks are left out, a table's chosen rows under its header
rows, the outer titles an earlier item showed as "…". Only which units are shown differs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.errors import InputError
from bookindex.core.model import DocumentTree
from bookindex.operators.context import IndexContext
from bookindex.operators.evidence_units import FEATURES, Unit, candidate_units, doc_order, unit_features
from bookindex.operators.passages import (
    OMITTED,
    Passage,
    _path_sections,
    _title,
    estimate_tokens,
    pack_passages,
    question_terms,
    title_path,
)

ITEM_TOKENS = 4  # "[k] " and the blank line between items (as pack_passages counts them)
WEIGHTS_FILE = "evidence_weights.json"


@dataclass(frozen=True)
class EvidenceWeights:
    """A fitted linear scorer over FEATURES: standardise each column, then a logistic
    regression's coefficients and intercept. `meta` records what it was fitted on."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    meta: dict[str, Any]

    def score(self, x: np.ndarray) -> np.ndarray:
        """Each row's log-odds of holding the answer (only the order matters)."""
        if not len(x):
            return np.zeros(0)
        return ((x - self.mean) / self.scale) @ self.coef + self.intercept

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": self.mean.tolist(), "scale": self.scale.tolist(),
                "coef": self.coef.tolist(), "intercept": self.intercept, **self.meta}

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = WEIGHTS_FILE) -> EvidenceWeights:
        """The weights of `data`; InputError when they were fitted on other features than these."""
        feats = tuple(data.get("features") or ())
        if feats != FEATURES:
            raise InputError(f"{where}: fitted on features {list(feats)}, this code computes {list(FEATURES)}; refit "
                             "with scripts/fit_evidence.py")
        arrays = [np.asarray(data[k], dtype=float) for k in ("mean", "scale", "coef")]
        if any(a.shape != (len(FEATURES),) for a in arrays):
            raise InputError(f"{where}: mean, scale and coef must hold one number per feature")
        meta = {k: v for k, v in data.items() if k not in ("features", "mean", "scale", "coef", "intercept")}
        return cls(feats, arrays[0], np.where(arrays[1] > 0, arrays[1], 1.0), arrays[2], float(data["intercept"]), meta)


def load_weights(path: Path | None = None) -> EvidenceWeights:
    """The weights in `path`, or the ones shipped with the package."""
    if path is not None:
        return EvidenceWeights.from_json(json.loads(Path(path).read_text(encoding="utf-8")), str(path))
    return shipped_weights()


@lru_cache(maxsize=1)
def shipped_weights() -> EvidenceWeights:
    text = resources.files("bookindex.operators").joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    return EvidenceWeights.from_json(json.loads(text))


def packed_passages(ctx: IndexContext, ids: list[str], budget_tokens: int, question: str = "",
                    weights: EvidenceWeights | None = None) -> list[Passage]:
    """The passages a prompt's `budget_tokens` hold for the ranked `ids`, chosen as
    retrieval.evidence_selection says ("rules": `pack_passages`; "fitted": `select_passages`),
    or by the given `weights` (a fit being measured)."""
    if weights is None and ctx.settings.retrieval.evidence_selection == "rules":
        return pack_passages(ctx.tree, ids, budget_tokens, question=question)
    return select_passages(ctx.tree, ids, budget_tokens, question=question, weights=weights)


def select_passages(tree: DocumentTree, ids: list[str], budget_tokens: int, *, question: str = "",
                    weights: EvidenceWeights | None = None) -> list[Passage]:
    """The passages of the best-scored units of the ranked `ids` within `budget_tokens`.

    Units are taken best first while their cost (their tokens, a table's header rows with its
    first row, an item's heading with its first unit) fits what is left; one that does not is
    passed over for smaller ones after it. The best unit is always shown. The rendered passages
    are measured again and the worst-scored units dropped while they exceed the budget (a
    unit's cost is estimated apart from the "…" marks that join it)."""
    w = weights or shipped_weights()
    units = candidate_units(tree, ids)
    if not units:
        return []
    shown = [p.text for p in pack_passages(tree, ids, budget_tokens, question=question)]
    scores = w.score(unit_features(units, question_terms(question), shown))
    chosen = _fill(tree, units, scores, max(0, budget_tokens))
    while True:
        passages = _render(tree, [units[i] for i in sorted(chosen)])
        if len(chosen) <= 1 or sum(estimate_tokens(p.render()) + ITEM_TOKENS for p in passages) <= budget_tokens:
            return passages
        chosen.remove(min(chosen, key=lambda i: scores[i]))


def _fill(tree: DocumentTree, units: Sequence[Unit], scores: np.ndarray, budget: int) -> set[int]:
    """The indices of the units taken best-scored first while they fit `budget` tokens."""
    left = budget
    chosen: set[int] = set()
    heads: set[str] = set()
    owners: set[str] = set()
    own = np.array([u.tokens + 1 for u in units], dtype=float)
    for i in np.argsort(-(1 / (1 + np.exp(-scores))) / own, kind="stable"):
        u = units[int(i)]
        cost = int(own[i])
        if u.head and u.block.node.id not in heads:
            cost += estimate_tokens(u.head) + estimate_tokens(OMITTED) + 1
        if u.block.owner not in owners:
            cost += _where_tokens(tree, u.block.owner) + ITEM_TOKENS
        if chosen and cost > left:
            continue
        chosen.add(int(i))
        left -= cost
        owners.add(u.block.owner)
        if u.head:
            heads.add(u.block.node.id)
    return chosen


def _where_tokens(tree: DocumentTree, nid: str) -> int:
    path = " > ".join(_title(n) for n in _path_sections(tree, tree.nodes[nid]))
    return estimate_tokens(f"(pp. 100-100 · {path})")


def _render(tree: DocumentTree, chosen: Sequence[Unit]) -> list[Passage]:
    """One passage per owner of the `chosen` units, best-ranked owner first."""
    by_owner: dict[str, list[Unit]] = {}
    for u in chosen:
        by_owner.setdefault(u.block.owner, []).append(u)
    titled: set[str] = set()
    out = []
    for owner in sorted(by_owner, key=lambda o: by_owner[o][0].block.rank):
        sections = _path_sections(tree, tree.nodes[owner])
        p = _passage(tree, owner, by_owner[owner])
        outer, own = sections[:-1], sections[-1:]
        if any(n.id in titled for n in outer):
            p = Passage(**{**p.__dict__, "shown_path": ("…", *(_title(n) for n in outer if n.id not in titled),
                                                      *map(_title, own))})
        titled.update(n.id for n in sections)
        out.append(p)
    return out


def _passage(tree: DocumentTree, owner: str, units: Sequence[Unit]) -> Passage:
    """The passage of one ranked node: its chosen units' blocks in document order."""
    order = doc_order(tree)
    blocks: dict[str, list[Unit]] = {}
    for u in units:
        blocks.setdefault(u.block.node.id, []).append(u)
    parts: list[tuple[str, int]] = []
    prev = None
    for bid in sorted(blocks, key=lambda b: order.get(b, -1)):
        node = tree.nodes[bid]
        if prev is not None and order.get(bid, 0) - order.get(prev, 0) > 1:
            parts.append(("…", node.page_idx))
        parts.append((_block_text(sorted(blocks[bid], key=lambda u: u.index)), node.page_idx))
        prev = bid
    text = "\n".join(t for t, _ in parts)
    starts, pos = [], 0
    for t, pg in parts:
        starts.append((pos, pg + 1))
        pos += len(t) + 1
    shown = [tree.nodes[b] for b in sorted(blocks, key=lambda b: order.get(b, -1))]
    leaves = [n for n in shown if n.type != "section"]
    pages = [n.page_idx for n in shown] or [tree.nodes[owner].page_idx]
    return Passage(node_id=owner, title_path=title_path(tree, tree.nodes[owner]), text=text,
                   node_ids=tuple(n.id for n in leaves) or (owner,), first_page=min(pages) + 1,
                   last_page=max(pages) + 1, page_starts=tuple(starts))


def _block_text(units: Sequence[Unit]) -> str:
    """A block's chosen units (in order) as shown: rows under the header lines with an omission
    row where rows are left out (`_rows_text`); prose joined, "…" where it is cut."""
    first = units[0]
    if first.kind in ("row", "chart_row"):
        return _rows_text(units)
    pieces = ["… "] if first.index > 0 else []
    for prev, u in zip([None, *units], units):
        if prev is not None:
            pieces.append(" " if u.index == prev.index + 1 else " … ")
        pieces.append(u.text)
    if units[-1].index < first.count - 1:
        pieces.append(" …")
    return "".join(pieces)


def _rows_text(units: Sequence[Unit]) -> str:
    """A table's or a chart's chosen rows under its header lines, `OMITTED` (a chart: "…") where
    rows are left out, as `focused_table` shows them."""
    first = units[0]
    gap = OMITTED if first.kind == "row" else "…"
    lines = [first.head] if first.head else []
    last = -1
    for u in units:
        if u.index != last + 1:
            lines.append(gap)
        lines.append(u.text)
        last = u.index
    if last < first.count - 1:
        lines.append(gap)
    return "\n".join(lines)
