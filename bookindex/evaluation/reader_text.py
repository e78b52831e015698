"""The evidence text a reader receives for a ranked list, packed as `ask` packs it.

`ask` shows its reader the best-ranked passages that fit the evidence budget
(`operators.synthesizer.evidence_tokens`: retrieval.evidence_tokens, or the model's own entry),
packed by `operators.passages.pack_passages` (bookindex's: `operators.synthesizer.prompt_passages`,
which opens with a computation the question asks) and numbered by `format_passages`; a baseline's
answer packs its top nodes the same way (`retrieval.api._grounded`). This module calls that same
code on a row's ranked evidence, so answer-in-evidence measures the exact prompt text, not an
approximation of it. A unit that is not one node (bm25-pages' whole pages) is shown as that
page's blocks in reading order, packed by the same code.
"""

from __future__ import annotations

from collections.abc import Sequence

from bookindex.core.model import Evidence
from bookindex.operators.context import IndexContext
from bookindex.operators.evidence_select import EvidenceWeights, packed_passages
from bookindex.operators.passages import Passage, format_passages
from bookindex.operators.synthesizer import evidence_tokens, prompt_passages


def reader_ids(ctx: IndexContext, evidence: Sequence[Evidence]) -> list[str]:
    """The node ids `ask` would pack for this ranking: at most retrieval.max_evidence ranked
    units, each a node of the tree (a whole-page unit: that page's blocks, in order)."""
    tree = ctx.tree
    cap = ctx.settings.retrieval.max_evidence
    ids: list[str] = []
    for ev in list(evidence)[:cap]:
        if "page_unit" in ev.scores:
            ids += [n.id for n in tree.leaves() if n.page_idx == ev.page_idx and n.id not in ids]
        elif ev.node_id in tree.nodes and ev.node_id not in ids:
            ids.append(ev.node_id)
    return ids


def reader_passages(ctx: IndexContext, evidence: Sequence[Evidence], budget_tokens: int | None = None,
                    question: str = "", computed: bool = False,
                    weights: EvidenceWeights | None = None) -> list[Passage]:
    """The passages a reader gets for `evidence` (ranked for `question`) within `budget_tokens`
    (default: the budget `ask` uses for this document's context), best-ranked first. `computed`:
    packed as bookindex's Reduce packs them (`prompt_passages`: a computation the question asks
    opens the first table's passage); a baseline's answer packs its units plainly. `weights`: the
    units chosen by these fitted weights (`operators.evidence_select`), a fit being measured."""
    budget = evidence_tokens(ctx) if budget_tokens is None else budget_tokens
    ids = reader_ids(ctx, evidence)
    if not ids:
        return []
    if computed:
        return prompt_passages(ctx, ids, question, budget, weights)
    return packed_passages(ctx, ids, budget, question, weights)


def reader_text(ctx: IndexContext, evidence: Sequence[Evidence], budget_tokens: int | None = None,
                question: str = "", computed: bool = False) -> str:
    """The numbered passages as the prompt shows them ("" for no evidence)."""
    return format_passages(reader_passages(ctx, evidence, budget_tokens, question, computed))
