"""Navigating a library hierarchy without an LLM: topics → document → section → block.

The embedding beam (`beam.beam_search`) descends the topic clusters and hands over the documents
of the leaves it reached; the `LibraryRouter` ranks those documents; the navigator opens the best
document's SKILL.md and, at the document, calls `search_document` (the document's own BookRAG
retrieval: operator plans over its tree and graph), then opens the INDEX.md of the section that
holds the best block and reads the block with `get_node`. Navigation and retrieval mix, and every
step (each file viewed, the routing decision, the search, the node read) is in `steps`.
"""

from __future__ import annotations

import time

import numpy as np
from pydantic import BaseModel, Field

from bookindex.core.model import DocumentTree, Evidence, Node
from bookindex.core.protocols import Embedder
from bookindex.routing.router import LibraryRouter, decision_of
from bookindex.skills.model import Hierarchy
from bookindex.skills.navigator.access import DocumentAccess
from bookindex.skills.navigator.answer import NavStep, RankedDocument, count_tokens
from bookindex.skills.navigator.beam import beam_search
from bookindex.skills.navigator.opened import OpenedSkills


class LibraryAnswer(BaseModel):
    """Where a library question led: the documents ranked, the evidence of the chosen one, the steps."""

    question: str
    navigator: str = "hierarchy"
    documents: list[RankedDocument] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    steps: list[NavStep] = Field(default_factory=list)
    decision: dict[str, object] = Field(default_factory=dict)   # the routing decision, as the trace shows it
    seconds: float = 0.0

    def path(self) -> list[str]:
        out = []
        for s in self.steps:
            extra = f" {s.score:.4f}" if s.score is not None else ""
            out.append(f"{s.round:>2} {s.tool} {s.target} [{s.tokens} tok]{extra}")
        return out


def navigate(opened: OpenedSkills, hier: Hierarchy, router: LibraryRouter, embedder: Embedder,
             access: DocumentAccess | None, question: str, *, k: int = 10, beam: int | None = None,
             search_docs: int = 1) -> LibraryAnswer:
    """Descend the topics by beam, rank the reached documents, then search the best one, or the
    best `search_docs` for a question comparing documents (`access=None`: stop at the routing
    decision, after opening the chosen document's SKILL.md)."""
    t0 = time.perf_counter()
    # the router ranks the reached documents itself: the beam only picks them (by embedding)
    walk = beam_search(opened, embedder, question, k=max(1, len(opened.documents)), beam=beam, route="centroid",
                       rank="dense")
    steps = [s for s in walk.steps if s.tool == "view"]
    reached = [d.doc_id for d in walk.documents]
    qvec = np.asarray(opened.query_vector(embedder, question), dtype=np.float32)
    ranked = router.rank(question, qvec, candidates=reached or None)
    rnd = max((s.round for s in steps), default=0) + 1
    docs = [RankedDocument(doc_id=r.doc_id, title=hier.documents[r.doc_id].name if r.doc_id in hier.documents else "",
                           score=r.score, path=hier.documents[r.doc_id].path if r.doc_id in hier.documents else "")
            for r in ranked]
    steps.append(NavStep(round=rnd, tool="route", target=docs[0].doc_id if docs else "",
                         score=docs[0].score if docs else None))
    evidence: list[Evidence] = []
    for j, chosen in enumerate(docs[:max(1, search_docs)]):
        r0 = rnd + 1 + 4 * j
        skill = f"{chosen.path}/SKILL.md"
        text = opened.tools.view(skill).text if (opened.folder / skill).is_file() else ""
        steps.append(NavStep(round=r0, tool="view", target=skill, tokens=count_tokens(text)))
        if access is None:
            continue
        found = access.search_document(chosen.doc_id, question, k)
        evidence.extend(found)
        steps.append(NavStep(round=r0 + 1, tool="search_document", target=chosen.doc_id,
                             tokens=sum(count_tokens(e.snippet) for e in found)))
        if found:
            _descend_to(opened, hier, access.document_tree(chosen.doc_id), found[0], steps, r0 + 2)
    # built last: pydantic copies the lists it is given
    return LibraryAnswer(question=question, documents=docs, evidence=evidence, steps=steps,
                         decision=decision_of(ranked, "hierarchy"), seconds=round(time.perf_counter() - t0, 4))


def section_folder(hier: Hierarchy, tree: DocumentTree, node_id: str) -> str | None:
    """The folder of the innermost section holding a node (None: above the first section)."""
    entry = hier.documents.get(tree.doc_id)
    if entry is None or node_id not in tree.nodes:
        return None
    cur: Node | None = tree.nodes[node_id]
    while cur is not None:
        rel = entry.sections.get(cur.id)
        if rel is not None:
            return f"{entry.path}/{rel}"
        cur = tree.nodes.get(cur.parent) if cur.parent else None
    return None


def _descend_to(opened: OpenedSkills, hier: Hierarchy, tree: DocumentTree, ev: Evidence, steps: list[NavStep],
                rnd: int) -> None:
    """The section INDEX.md that lists the best block, then the block itself."""
    folder = section_folder(hier, tree, ev.node_id)
    if folder is not None and (opened.folder / folder / "INDEX.md").is_file():
        text = opened.tools.view(f"{folder}/INDEX.md").text
        steps.append(NavStep(round=rnd, tool="view", target=f"{folder}/INDEX.md", tokens=count_tokens(text)))
    node = tree.nodes.get(ev.node_id)
    steps.append(NavStep(round=rnd + 1, tool="get_node", target=ev.node_id,
                         tokens=count_tokens(node.content if node is not None else "")))
