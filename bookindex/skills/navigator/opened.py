"""One skill folder opened for questions: tree, vectors, document store, tools, derived views.

Opening reads the three files once; what only some methods need (BM25 over the documents, the
clusters' member centroids, each cluster's descendant documents) is derived on first use, so an
LLM navigation pays for none of it.
"""

from __future__ import annotations

import threading
from functools import cached_property
from pathlib import Path

import numpy as np

from bookindex.core.errors import InputError
from bookindex.core.protocols import Embedder
from bookindex.providers.lexical import LexicalIndex
from bookindex.skills.model import (
    Cluster,
    CorpusDocument,
    SkillTree,
    TreeVectors,
    load_documents,
    load_tree,
    load_vectors,
)
from bookindex.skills.navigator.folder_tools import FolderTools

NAV_FILES = ("SKILL.md", "INDEX.md")


class OpenedSkills:
    """A read-only view of one compiled skill folder."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.tree: SkillTree = load_tree(self.folder)
        self.vectors: TreeVectors = load_vectors(self.folder)
        self.documents: dict[str, CorpusDocument] = load_documents(self.folder)
        self.tools = FolderTools(self.folder, self.documents)
        self._lock = threading.Lock()
        self._doc_row = {d: i for i, d in enumerate(self.vectors.doc_ids)}
        self._cluster_row = {c: i for i, c in enumerate(self.vectors.cluster_ids)}

    # -- queries --------------------------------------------------------------------------------
    def query_vector(self, embedder: Embedder, question: str) -> np.ndarray:
        """The question embedded by the embedder the tree was built with (else a clear error)."""
        built = self.tree.params.embedder
        if built and built != embedder.name:
            raise InputError(f"{self.folder}: built with embedder {built!r}, but {embedder.name!r} is "
                             "configured; set embedding.model to match or rebuild the skills")
        vec = np.asarray(embedder.encode([question]), dtype=np.float32)[0]
        if vec.shape[0] != self.vectors.doc_vectors.shape[1]:
            raise InputError(f"{self.folder}: vectors have {self.vectors.doc_vectors.shape[1]} dimensions, "
                             f"the embedder gives {vec.shape[0]}")
        return vec

    def doc_scores(self, qvec: np.ndarray, doc_ids: list[str] | None = None) -> np.ndarray:
        """Cosine of the query with each document (all, or `doc_ids` in order)."""
        if doc_ids is None:
            return self.vectors.doc_vectors @ qvec
        rows = [self._doc_row[d] for d in doc_ids if d in self._doc_row]
        if len(rows) != len(doc_ids):
            missing = [d for d in doc_ids if d not in self._doc_row]
            raise InputError(f"{self.folder}: no vectors for documents {missing[:3]}; the folder is inconsistent")
        return self.vectors.doc_vectors[rows] @ qvec

    def similarities(self, qvec: np.ndarray) -> dict[str, float]:
        """Cosine of the query with every document, by id (the members route and the agent's guide)."""
        return dict(zip(self.vectors.doc_ids, self.doc_scores(qvec).tolist()))

    def summary_vector(self, cluster_id: str) -> np.ndarray | None:
        row = self._cluster_row.get(cluster_id)
        return None if row is None else self.vectors.cluster_vectors[row]

    # -- derived views --------------------------------------------------------------------------
    def members(self, cluster_id: str) -> list[str]:
        """Every document under a cluster (its leaves' documents, depth first)."""
        return self._members[cluster_id]

    def listed(self, cluster_id: str) -> list[str]:
        """Every document a navigator finds under a cluster: its members, then the documents its
        leaves also list (soft membership: near a leaf, homed in another)."""
        return self._listed[cluster_id]

    @cached_property
    def _listed(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for cid, members in self._members.items():
            extra = [d for leaf in self.leaves_under(cid) for d in self.tree.cluster(leaf).also]
            home = set(members)
            out[cid] = members + [d for d in dict.fromkeys(extra) if d not in home] if extra else members
        return out

    def leaves_under(self, cluster_id: str) -> list[str]:
        """The leaf clusters under a cluster (itself when it is one)."""
        c = self.tree.cluster(cluster_id)
        return [cluster_id] if not c.children else [leaf for ch in c.children for leaf in self.leaves_under(ch)]

    @cached_property
    def _members(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}

        def walk(cid: str) -> list[str]:
            if cid in out:
                return out[cid]
            c = self.tree.cluster(cid)
            docs = list(c.documents)
            for child in c.children:
                docs.extend(walk(child))
            out[cid] = docs
            return docs

        for cid in self.tree.clusters:
            walk(cid)
        return out

    @cached_property
    def by_path(self) -> dict[str, Cluster]:
        """Each cluster by its folder path (what a `view` target names)."""
        return {c.path: c for c in self.tree.clusters.values()}

    @cached_property
    def centroids(self) -> dict[str, np.ndarray]:
        """Each cluster's mean member-document vector, L2-normalised: what K-Means grouped by."""
        out: dict[str, np.ndarray] = {}
        for cid in self.tree.clusters:
            rows = [self._doc_row[d] for d in self.members(cid) if d in self._doc_row]
            if not rows:
                continue
            v = self.vectors.doc_vectors[rows].mean(axis=0)
            n = float(np.linalg.norm(v))
            out[cid] = (v / n).astype(np.float32) if n > 0 else v.astype(np.float32)
        return out

    @cached_property
    def lexical(self) -> LexicalIndex:
        """BM25 over every document's title and text (the flat bm25 and hybrid methods)."""
        ids = list(self.documents)
        return LexicalIndex(ids, [f"{self.documents[i].title}\n{self.documents[i].text}" for i in ids])

    def lexical_scores(self, question: str, doc_ids: list[str]) -> np.ndarray:
        """BM25 of the question with each of `doc_ids`, in order (0 for a document not indexed)."""
        lex = self.lexical
        scores = lex.scores(question)
        row = self._lexical_row
        return np.array([float(scores[row[d]]) if d in row else 0.0 for d in doc_ids], dtype=np.float32)

    @cached_property
    def _lexical_row(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.lexical.ids)}

    def nav_file(self, cluster: Cluster) -> str:
        """The navigation file of a cluster's folder ("" when compact mode merged it away)."""
        for name in NAV_FILES:
            path = self.folder / cluster.path / name
            if path.is_file():
                return f"{cluster.path}/{name}"
        return ""

    def roots(self) -> list[Cluster]:
        return [self.tree.cluster(r) for r in self.tree.roots]
