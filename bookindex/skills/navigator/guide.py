"""Embedding guidance for the LLM navigator: what the agent is offered next, nearest the question first.

A small model does not choose by content: the embedded 1.5B takes the first skill, the first
group and the first document of every listing (docs/benchmarks.md, "Corpus navigation"). The
guide turns that habit into the no-LLM beam's judgement. The skills in the opening turn, the
"Next:" paths after a view and the documents suggested at a leaf come ordered by the beam's
members route with `rank="dense"` (`beam.member_score`: a cluster's best document similarity), each
with its score. The same similarities rank the documents the agent only saw listed.

The opening turn also names the nearest leaf groups by full path. Walking down to a leaf takes
one view a level (each a turn of about 800 prompt tokens for the small model), and a small model
that follows the first "Next:" path at each level ends at the first of these leaves anyway; it
may still view a skill and walk down instead.

The navigation files are untouched (a build stays byte-identical and another agent reads the same
tree). A capable model may still go anywhere, and the grounding rule is unchanged: the answer cites
only documents it read. `navigate(..., guided=False)` (the eval's `skills-llm-plain`) is the
paper's unguided agent.
"""

from __future__ import annotations

from bookindex.core.errors import InputError
from bookindex.core.protocols import Embedder
from bookindex.skills.model import Cluster
from bookindex.skills.navigator.beam import member_score
from bookindex.skills.navigator.opened import OpenedSkills

SUGGESTED = 3   # documents named at a leaf: the small model reads the first; a bigger one may compare
SHORTCUTS = 3   # leaf groups offered in the opening turn, to view without walking down to them


class Guide:
    """One question's similarities to every document of a skill folder, and the orderings built on them."""

    def __init__(self, opened: OpenedSkills, sims: dict[str, float]) -> None:
        self.opened = opened
        self.sims = sims

    @classmethod
    def for_question(cls, opened: OpenedSkills, embedder: Embedder, question: str) -> Guide:
        """The guide, from one embedding of the question and one product with the document
        vectors (InputError when the tree was built with another embedder)."""
        return cls(opened, opened.similarities(opened.query_vector(embedder, question)))

    def score(self, cluster: Cluster) -> float:
        """The cluster's best document similarity (its leaves' soft listings included)."""
        return member_score(self.opened, cluster, self.sims)

    def clusters(self, clusters: list[Cluster]) -> list[Cluster]:
        """Nearest first; ties keep the tree's order."""
        scored = [(self.score(c), i, c) for i, c in enumerate(clusters)]
        return [c for _, _, c in sorted(scored, key=lambda t: (-t[0], t[1]))]

    def documents(self, doc_ids: list[str]) -> list[str]:
        """Nearest first; ids without a vector last, in their order."""
        return [d for _, _, d in sorted(((-self.sims.get(d, -2.0), i, d) for i, d in enumerate(doc_ids)))]

    def nearest_leaves(self, n: int = SHORTCUTS) -> list[Cluster]:
        """The `n` leaf clusters nearest the question (a leaf's score is its best document's, as
        at every level, so the first is where always taking the first "Next:" path ends)."""
        leaves = [c for c in self.opened.tree.clusters.values() if not c.children]
        return self.clusters(leaves)[:n]

    def at_leaf(self, cluster: Cluster) -> list[str]:
        """The leaf's listed documents worth reading first."""
        return self.documents(self.opened.listed(cluster.id))[:SUGGESTED]


def guide_for(opened: OpenedSkills, embedder: Embedder | None, question: str) -> tuple[Guide | None, str]:
    """The guide, or None with the reason when there is no embedder or it does not fit the tree
    (a guided agent then navigates unguided and says so in its notes)."""
    if embedder is None:
        return None, ""
    try:
        return Guide.for_question(opened, embedder, question), ""
    except InputError as exc:
        return None, f"navigated unguided: {exc}"
