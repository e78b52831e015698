"""TreeTraverse baseline (PageIndex-style): navigate the table of contents top-down.

At each level the candidate branches are the current section's child sections. With an
available LLM, the model reads the question and the numbered headings (with page ranges) and
picks one branch, or stays when the answer is in the text directly under the current heading.
Without an LLM the descent is greedy by similarity: a branch scores
0.5·cos(question, heading path) + 0.5·max cos(question, leaf) over its subtree. The leaves of
the chosen section are then ranked by similarity; when it holds fewer than k, the search
widens to the enclosing sections until k leaves are found.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from bookindex.core.errors import LLMError
from bookindex.core.model import Evidence, Node
from bookindex.core.protocols import Embedder
from bookindex.retrieval.baselines.index import DocIndex, leaf_vectors, query_vector, section_vectors

MAX_DEPTH = 12
MAX_OPTIONS = 60


class TreeChoice(BaseModel):
    """The LLM's pick: 0 = stay in the current section, i >= 1 = the i-th listed branch."""

    choice: int = Field(ge=0)


def _prompt(question: str, current: Node, options: list[Node], can_stay: bool) -> str:
    lines = [f"{i}. {n.title} (pages {n.page_idx + 1}-{n.page_end_idx + 1})" for i, n in enumerate(options, 1)]
    where = current.title or "the document"
    stay = ("0. The answer is in the text directly under the current heading.\n" if can_stay else "")
    return (
        "You navigate a document's table of contents to find where a question is answered.\n"
        f"Question: {question}\nCurrent position: {where}\nBranches:\n{stay}" + "\n".join(lines)
        + '\nReply with JSON {"choice": N} naming the single most promising branch.'
    )


def tree_traverse(idx: DocIndex, doc: Any, question: str, k: int, embedder: Embedder,
                  llm: Any = None) -> list[Evidence]:
    if not idx.leaves:
        return []
    tree = idx.tree
    vecs = leaf_vectors(idx, doc, embedder)
    q = query_vector(embedder, question)
    sims = vecs @ q
    leaf_pos = {n.id: i for i, n in enumerate(idx.leaves)}
    sec_vecs = section_vectors(idx, embedder)
    use_llm = llm is not None and getattr(llm, "available", False)

    def subtree_leaves(node: Node) -> list[int]:
        return [leaf_pos[n.id] for n in tree.walk(node) if n.id in leaf_pos]

    path: list[str] = []
    current = tree.root
    for _ in range(MAX_DEPTH):
        options = [tree.nodes[c] for c in current.children if tree.nodes[c].type == "section"]
        options = [o for o in options if subtree_leaves(o)][:MAX_OPTIONS]
        if not options:
            break
        direct = [leaf_pos[c] for c in current.children if c in leaf_pos]
        pick: Node | None = None
        stay = False
        if use_llm:
            try:
                res = llm.complete([{"role": "user", "content": _prompt(question, current, options, bool(direct))}],
                                   schema=TreeChoice, stage="baseline_tree")
                if res.choice == 0 and direct:
                    stay = True
                elif 1 <= res.choice <= len(options):
                    pick = options[res.choice - 1]
            except LLMError:
                use_llm = False  # unavailable or failing: finish the descent greedily
        if pick is None and not stay:
            best_score, best_max = -np.inf, -np.inf
            for o in options:
                leaf_max = float(sims[subtree_leaves(o)].max())
                head = float(sec_vecs[o.id] @ q) if o.id in sec_vecs else leaf_max
                score = 0.5 * head + 0.5 * leaf_max
                if score > best_score:
                    best_score, pick = score, o
                best_max = max(best_max, leaf_max)
            if direct and float(sims[direct].max()) > best_max:
                stay, pick = True, None
        if stay or pick is None:
            break
        path.append(pick.id)
        current = pick

    # Rank the chosen section's leaves, widening to enclosing sections to fill k.
    chosen: list[int] = []
    seen: set[int] = set()
    scope: Node | None = current
    while scope is not None and len(chosen) < k:
        cand = [i for i in subtree_leaves(scope) if i not in seen]
        cand.sort(key=lambda i: -sims[i])
        for i in cand[: k - len(chosen)]:
            chosen.append(i)
            seen.add(i)
        scope = tree.nodes[scope.parent] if scope.parent else None
    depth = float(len(path))
    return [Evidence.from_node(tree, idx.leaves[i], scores={"dense": float(sims[i]), "tree_depth": depth}, rank=r)
            for r, i in enumerate(chosen, start=1)]
