"""Page-level evidence recall (MMLongBench-Doc) over ranked evidence nodes.

k counts retrieved *nodes* in rank order, not pages. A node contributes only the page(s) its
own content occupies: a leaf its page range (`page_idx..page_end_idx`), a section node only
its heading's page (`page_idx`), the document root nothing. Returning a whole chapter
therefore never counts as finding every page in it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, Sequence

from bookindex.core.model import DocumentTree, Evidence


def parse_gold_pages(value: str | Sequence[int] | None) -> list[int]:
    """MMLongBench `evidence_pages` ("[5, 7]", 1-based) as a sorted list of unique ints."""
    if value is None:
        return []
    if isinstance(value, str):
        value = value.strip()
        if not value:
            return []
        parsed = ast.literal_eval(value)
        if isinstance(parsed, int):
            parsed = [parsed]
    else:
        parsed = value
    return sorted({int(p) for p in parsed})


def evidence_key(ev: Evidence) -> tuple[str, int]:
    """Identity of one retrieved unit: its node, plus the chunk index for chunk evidence."""
    return ev.node_id, int(ev.scores.get("chunk_index", -1))


def dedupe(evidence: Iterable[Evidence]) -> list[Evidence]:
    """Evidence in rank order with repeated units dropped (first occurrence kept)."""
    seen: set[tuple[str, int]] = set()
    out: list[Evidence] = []
    for ev in evidence:
        key = evidence_key(ev)
        if key not in seen:
            seen.add(key)
            out.append(ev)
    return out


def evidence_page_set(ev: Evidence, tree: DocumentTree | None = None) -> set[int]:
    """1-based pages one evidence item's own content occupies (see module docstring)."""
    node = tree.nodes.get(ev.node_id) if tree is not None else None
    if node is None or "page_unit" in ev.scores:  # whole-page evidence counts exactly its page
        return {ev.page}
    if node.type == "document":
        return set()
    if node.type == "section":
        return {node.page_idx + 1}
    last = max(node.page_idx, node.page_end_idx)
    return set(range(node.page_idx + 1, last + 2))


@dataclass
class RecallAtK:
    recall: float
    hit: float


def page_recall_at_k(evidence: Sequence[Evidence], gold_pages: Sequence[int],
                     ks: Sequence[int], tree: DocumentTree | None = None) -> dict[int, RecallAtK]:
    """recall@k = |gold ∩ pages(top-k nodes)| / |gold|, hit@k = 1 if any gold page is found.

    Raises ValueError for an empty gold set: such questions are excluded from recall.
    """
    gold = set(int(p) for p in gold_pages)
    if not gold:
        raise ValueError("no gold pages: unanswerable questions are excluded from recall")
    ranked = dedupe(evidence)
    out: dict[int, RecallAtK] = {}
    for k in ks:
        pages: set[int] = set()
        for ev in ranked[:k]:
            pages |= evidence_page_set(ev, tree)
        found = len(gold & pages)
        out[k] = RecallAtK(recall=found / len(gold), hit=1.0 if found else 0.0)
    return out


def evidence_chars(ev: Evidence, tree: DocumentTree | None = None) -> int:
    """Characters a reader model would get for this item: chunk text, else the node content."""
    if "chunk_chars" in ev.scores:
        return int(ev.scores["chunk_chars"])
    node = tree.nodes.get(ev.node_id) if tree is not None else None
    if node is None:
        return len(ev.snippet)
    return len(node.content)


def context_size(evidence: Sequence[Evidence], tree: DocumentTree | None = None,
                 k: int | None = None) -> tuple[int, int]:
    """(nodes, characters) returned, counting the top-k unique units (all when k is None)."""
    ranked = dedupe(evidence)
    if k is not None:
        ranked = ranked[:k]
    return len(ranked), sum(evidence_chars(ev, tree) for ev in ranked)
