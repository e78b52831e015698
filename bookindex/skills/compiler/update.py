"""Incremental updates: add or remove documents without recompiling.

`add` embeds the new documents, puts each in the leaf whose centroid is nearest, splits a leaf
that grows past 2p into two (2-means, the new leaf appended to its parent so no sibling is
renamed), and re-summarises only clusters on the touched paths. `remove` takes documents out,
drops clusters left empty and re-summarises likewise. Labels of existing clusters are kept, so
folder paths stay stable for agents that remember them.

Which touched clusters are re-summarised: a new or split leaf, a parent that lost a child, and
any cluster whose size moved by more than `drift` (a fraction) since its summary was written
(a split leaves its parent's documents as they were, so the parent is judged by its drift).
With drift 0 every touched cluster is re-summarised; a drift keeps one added document from
costing an LLM call per level, while the listings (documents, counts) are always current
because they are rendered from the tree.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from bookindex.core.errors import InputError
from bookindex.core.protocols import LLM, Embedder
from bookindex.providers.llm.ledger import usage_delta
from bookindex.routing.document_text import embed_documents
from bookindex.skills.compiler.build import make_summariser
from bookindex.skills.compiler.cluster import centroid, split_in_two
from bookindex.skills.compiler.compile import (
    apply_summary,
    assign_paths,
    cluster_id,
    cluster_input,
    embed_summaries,
    list_also,
    max_leaf_size,
)
from bookindex.skills.compiler.corpus import check_not_in_tree, load_corpus
from bookindex.skills.compiler.materialise import replace_folder
from bookindex.skills.compiler.requests import SkillsAddRequest, SkillsRemoveRequest, SkillsUpdateReport
from bookindex.skills.compiler.summarise import doc_line
from bookindex.skills.model import (
    Cluster,
    CorpusDocument,
    DocIds,
    DocumentEntry,
    SkillTree,
    TreeVectors,
    load_documents,
    load_tree,
    load_vectors,
)


class _State:
    """A skill folder loaded for an update, with row lookups kept in step with the vectors."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.tree: SkillTree = load_tree(folder)
        self.vectors: TreeVectors = load_vectors(folder)
        self.docs: dict[str, CorpusDocument] = load_documents(folder)
        self.cluster_vecs = {cid: self.vectors.cluster_vectors[i] for i, cid in enumerate(self.vectors.cluster_ids)}
        self.touched: set[str] = set()    # membership changed
        self.forced: set[str] = set()     # must be re-summarised (new, split, children changed)
        self.splits = 0
        self.deleted = 0

    @property
    def row(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.vectors.doc_ids)}


def add(req: SkillsAddRequest, embedder: Embedder, llm: LLM | None) -> SkillsUpdateReport:
    t0 = time.perf_counter()
    st = _State(Path(req.folder).expanduser())
    new = load_corpus(req.sources)
    check_not_in_tree(new, st.tree.documents, st.folder)
    vecs = embed_documents(new, embedder, st.tree.params.embed_chars)
    if vecs.shape[1] != st.vectors.doc_vectors.shape[1]:
        raise InputError(f"{req.folder}: built with embedder {st.tree.params.embedder!r} (dim "
                         f"{st.vectors.doc_vectors.shape[1]}), but the configured one {embedder.name!r} has dim {vecs.shape[1]}")
    leaves = sorted(st.tree.leaves(), key=lambda c: c.id)
    row = st.row
    cents = np.stack([centroid(st.vectors.doc_vectors[[row[d] for d in c.documents]]) for c in leaves])
    nearest = np.argmax(vecs @ cents.T, axis=1)
    for d, j in zip(new, nearest):
        leaf = leaves[int(j)]
        leaf.documents.append(d.id)
        st.docs[d.id] = d
        st.tree.documents[d.id] = DocumentEntry(title=d.title, line=doc_line(d), cluster=leaf.id)
        st.touched.add(leaf.id)
    st.vectors.doc_ids.extend(d.id for d in new)
    st.vectors.doc_vectors = np.concatenate([st.vectors.doc_vectors, vecs.astype(np.float32)])
    for leaf_id in sorted(st.touched):
        _split_if_large(st, st.tree.clusters[leaf_id])
    return _finish(st, req.drift, embedder, llm, req.no_llm, t0, added=[d.id for d in new])


def remove(req: SkillsRemoveRequest, embedder: Embedder, llm: LLM | None) -> SkillsUpdateReport:
    t0 = time.perf_counter()
    st = _State(Path(req.folder).expanduser())
    named = DocIds(st.tree.documents)  # the short ids of the listings name documents too
    ids = list(dict.fromkeys(named.resolve(i) or i for i in req.ids))
    missing = [i for i in ids if i not in st.tree.documents]
    if missing:
        raise InputError(f"{req.folder}: no document {missing[0]!r} in this skill tree")
    if len(ids) >= len(st.tree.documents):
        raise InputError(f"{req.folder}: removing {len(ids)} documents would leave the skill tree empty; delete the folder instead")
    gone = set(ids)
    for d in ids:
        leaf = st.tree.clusters[st.tree.documents[d].cluster]
        leaf.documents.remove(d)
        st.touched.add(leaf.id)
        del st.tree.documents[d]
        st.docs.pop(d, None)
    keep = [i for i, d in enumerate(st.vectors.doc_ids) if d not in gone]
    st.vectors.doc_ids = [st.vectors.doc_ids[i] for i in keep]
    st.vectors.doc_vectors = st.vectors.doc_vectors[keep]
    for leaf_id in sorted(st.touched):
        if not st.tree.clusters[leaf_id].documents:
            _delete_cluster(st, leaf_id)
    return _finish(st, req.drift, embedder, llm, req.no_llm, t0, removed=ids)


def _split_if_large(st: _State, leaf: Cluster) -> None:
    """A leaf with more than 2p documents becomes two (the second appended to the parent), and
    again while either half is still too large."""
    if len(leaf.documents) <= max_leaf_size(st.tree.params):
        return
    row = st.row
    members = sorted(leaf.documents)
    a, b = split_in_two(st.vectors.doc_vectors[[row[d] for d in members]], seed=st.tree.params.seed)
    index = 1 + max(int(c.id.split("-C")[1]) for c in st.tree.clusters.values() if c.level == 1)
    twin = Cluster(id=cluster_id(1, index), level=1, label="", path="", summary="", description="",
                   documents=[members[i] for i in b], parent=leaf.parent)
    leaf.documents = [members[i] for i in a]
    st.tree.clusters[twin.id] = twin
    for d in twin.documents:
        st.tree.documents[d].cluster = twin.id
    if leaf.parent is None:
        st.tree.roots.append(twin.id)
    else:  # the parent's documents are the same: its summary is judged by its own drift
        st.tree.clusters[leaf.parent].children.append(twin.id)
    st.touched.add(twin.id)
    st.forced.update({leaf.id, twin.id})
    st.splits += 1
    _split_if_large(st, leaf)
    _split_if_large(st, twin)


def _delete_cluster(st: _State, cid: str) -> None:
    """Drop an empty cluster, and its parent when that is left without children."""
    c = st.tree.clusters.pop(cid)
    st.cluster_vecs.pop(cid, None)
    st.touched.discard(cid)
    st.forced.discard(cid)
    st.deleted += 1
    if c.parent is None:
        st.tree.roots.remove(cid)
        return
    parent = st.tree.clusters[c.parent]
    parent.children.remove(cid)
    if not parent.children:
        _delete_cluster(st, parent.id)
    else:
        st.forced.add(parent.id)


def _ancestors(st: _State, ids: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for cid in ids:
        if cid in st.tree.clusters:
            out.update(c.id for c in st.tree.ancestors(cid))
    return out


def _finish(st: _State, drift: float, embedder: Embedder, llm: LLM | None, no_llm: bool, t0: float, *,
            added: Sequence[str] = (), removed: Sequence[str] = ()) -> SkillsUpdateReport:
    """Recount, re-summarise what needs it bottom-up, re-embed those summaries, write the folder."""
    tree = st.tree
    path_ids = _ancestors(st, st.touched | st.forced)
    tree.recount()
    docs_list = [st.docs[d] for d in st.vectors.doc_ids]
    summariser = make_summariser(docs_list, llm, no_llm)
    before = llm.ledger.snapshot() if llm is not None else {}
    row = st.row
    redo: list[str] = []
    for level in sorted({tree.clusters[i].level for i in path_ids}):
        batch = [tree.clusters[i] for i in sorted(path_ids) if tree.clusters[i].level == level
                 and _needs_summary(tree.clusters[i], i in st.forced, drift)]
        if not batch:
            continue
        summaries = summariser.summarise([cluster_input(tree.clusters, c, st.docs, st.vectors.doc_vectors, row) for c in batch])
        for c, s in zip(batch, summaries):
            apply_summary(c, s, keep_label=True)
        embed_summaries(batch, embedder, st.cluster_vecs)
        redo.extend(c.id for c in batch)
    list_also(tree.clusters, st.vectors.doc_vectors, row, tree.params)  # listings only: no summary
    assign_paths(tree)
    ids = sorted(tree.clusters)
    st.vectors.cluster_ids = ids
    st.vectors.cluster_vectors = np.stack([st.cluster_vecs[i] for i in ids])
    replace_folder(st.folder, tree, st.vectors, st.docs)
    return SkillsUpdateReport(folder=str(st.folder), added=list(added), removed=list(removed),
                              documents=len(tree.documents), clusters=len(tree.clusters), touched=len(path_ids),
                              summaries=len(redo), splits=st.splits, deleted_clusters=st.deleted,
                              llm_usage=usage_delta(before, llm.ledger.snapshot(), prefix="skills.") if llm is not None else {},
                              seconds=round(time.perf_counter() - t0, 3), warnings=list(summariser.warnings))


def _needs_summary(c: Cluster, forced: bool, drift: float) -> bool:
    if forced or not c.summary:
        return True
    moved = abs(c.num_documents - c.summary_size)
    return moved > 0 and moved > drift * max(1, c.summary_size)
