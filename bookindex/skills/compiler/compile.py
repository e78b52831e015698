"""The compile phase (paper §3.2): embed, then cluster and summarise level by level until at
most K clusters remain; the result is a `SkillTree` plus its `TreeVectors`.

Documents are sorted by id first, so the same corpus gives the same tree whatever order its
files were read in. Cluster ids are `L{level}-C{index:03d}` in level order; folder paths and
labels are assigned once the hierarchy is known (`assign_paths`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bookindex.core.events import Events
from bookindex.core.protocols import Embedder
from bookindex.skills.compiler.cluster import cap_size, centroid, n_groups, normalise, partition, soft_members
from bookindex.skills.compiler.summarise import ClusterInput, Summariser, Summary, clip, doc_line, slug
from bookindex.skills.model import BuildParams, Cluster, CorpusDocument, DocumentEntry, SkillTree, TreeVectors

DESCRIPTION_CHARS = 1024
GROUP_MIN_SIZE = 2  # above level 1: a group of one sub-group would only add a folder


def compile_tree(docs: Sequence[CorpusDocument], doc_vectors: np.ndarray, params: BuildParams,
                 summariser: Summariser, embedder: Embedder, on_event: Events | None = None) -> tuple[SkillTree, TreeVectors]:
    """Cluster `docs` (rows of `doc_vectors`, same order) into a hierarchy and summarise it."""
    emit = on_event or (lambda event, info: None)
    order = sorted(range(len(docs)), key=lambda i: docs[i].id)
    docs = [docs[i] for i in order]
    x = normalise(doc_vectors[order])
    by_id = {d.id: d for d in docs}
    row = {d.id: i for i, d in enumerate(docs)}
    clusters: dict[str, Cluster] = {}
    summary_vecs: dict[str, np.ndarray] = {}

    # level 1: documents into leaves
    groups = partition(x, n_groups(len(docs), params.branching), min_size=params.min_size, seed=params.seed)
    groups = cap_size(groups, x, max_leaf_size(params), seed=params.seed)
    level = 1
    current = []
    for i, g in enumerate(groups):
        c = Cluster(id=cluster_id(1, i), level=1, label="", path="", summary="", description="",
                    documents=[docs[j].id for j in g], num_documents=len(g))
        clusters[c.id] = c
        current.append(c)
    emit("level", {"level": 1, "clusters": len(current), "items": len(docs)})
    _summarise(current, clusters, by_id, x, row, summariser, embedder, summary_vecs)

    # higher levels: summaries into groups, until at most K remain
    while len(current) > max(1, params.top):
        level += 1
        vecs = np.stack([summary_vecs[c.id] for c in current])
        groups = partition(vecs, n_groups(len(current), params.branching), min_size=GROUP_MIN_SIZE, seed=params.seed)
        nxt = []
        for i, g in enumerate(groups):
            kids = [current[j] for j in g]
            c = Cluster(id=cluster_id(level, i), level=level, label="", path="", summary="", description="",
                        children=[k.id for k in kids], num_documents=sum(k.num_documents for k in kids))
            for k in kids:
                k.parent = c.id
            clusters[c.id] = c
            nxt.append(c)
        current = nxt
        emit("level", {"level": level, "clusters": len(current), "items": len(vecs)})
        _summarise(current, clusters, by_id, x, row, summariser, embedder, summary_vecs)

    list_also(clusters, x, row, params)
    entries = {}
    for c in clusters.values():
        for d in c.documents:
            entries[d] = DocumentEntry(title=by_id[d].title, line=doc_line(by_id[d]), cluster=c.id)
    tree = SkillTree(roots=[c.id for c in current], clusters=clusters, documents=dict(sorted(entries.items())),
                     params=params)
    assign_paths(tree)
    ids = sorted(clusters)
    vectors = TreeVectors(doc_ids=[d.id for d in docs], doc_vectors=x, cluster_ids=ids,
                          cluster_vectors=np.stack([summary_vecs[i] for i in ids]) if ids else np.zeros((0, x.shape[1]), np.float32))
    return tree, vectors


def list_also(clusters: dict[str, Cluster], x: np.ndarray, row: dict[str, int], params: BuildParams) -> None:
    """Soft membership (`params.soft` extra leaves per document, within `params.soft_margin`):
    fill every leaf's `also` afresh from the current leaves (a build, or after an update)."""
    leaves = sorted((c for c in clusters.values() if not c.children), key=lambda c: c.id)
    ids = [d for c in leaves for d in c.documents]
    groups, start = [], 0
    for c in leaves:
        groups.append(list(range(start, start + len(c.documents))))
        start += len(c.documents)
    xs = x[[row[d] for d in ids]] if ids else x[:0]
    also = soft_members(xs, groups, params.soft, params.soft_margin)
    for c, rows in zip(leaves, also):
        c.also = sorted(ids[r] for r in rows)


def max_leaf_size(params: BuildParams) -> int:
    """2p: a leaf listing stays short (a small navigation file); larger leaves are split."""
    return 2 * params.branching


def cluster_id(level: int, index: int) -> str:
    return f"L{level}-C{index:03d}"


def descendants(clusters: dict[str, Cluster], c: Cluster) -> list[str]:
    """Document ids under a cluster, in listing order."""
    if not c.children:
        return list(c.documents)
    out: list[str] = []
    for k in c.children:
        out.extend(descendants(clusters, clusters[k]))
    return out


def cluster_input(clusters: dict[str, Cluster], c: Cluster, by_id: dict[str, CorpusDocument],
                  x: np.ndarray, row: dict[str, int]) -> ClusterInput:
    """A cluster's representatives: its documents nearest their centroid first (ties by id), and
    its sub-groups' summaries in listing order."""
    ids = descendants(clusters, c)
    rows = x[[row[i] for i in ids]]
    sims = rows @ centroid(rows)
    ranked = [ids[j] for j in np.lexsort((np.array(ids), -sims))]
    return ClusterInput(level=c.level, num_documents=len(ids), documents=[by_id[i] for i in ranked],
                        child_summaries=[clusters[k].summary for k in c.children])


def apply_summary(c: Cluster, s: Summary, *, keep_label: bool = False) -> None:
    c.summary = s.text()
    c.description = clip(s.line(DESCRIPTION_CHARS), DESCRIPTION_CHARS)
    if not keep_label or not c.label:
        c.label = slug(s.label) or "documents"
    c.summary_size = c.num_documents


def _summarise(batch: list[Cluster], clusters: dict[str, Cluster], by_id: dict[str, CorpusDocument], x: np.ndarray,
               row: dict[str, int], summariser: Summariser, embedder: Embedder, summary_vecs: dict[str, np.ndarray]) -> None:
    summaries = summariser.summarise([cluster_input(clusters, c, by_id, x, row) for c in batch])
    for c, s in zip(batch, summaries):
        apply_summary(c, s)
    embed_summaries(batch, embedder, summary_vecs)


def embed_summaries(batch: Sequence[Cluster], embedder: Embedder, out: dict[str, np.ndarray]) -> None:
    """Re-embed summaries (the next level's input, and the no-LLM navigator's routing vectors)."""
    if not batch:
        return
    vecs = normalise(embedder.encode([f"{c.label.replace('-', ' ')}\n{c.summary}" for c in batch]))
    for c, v in zip(batch, vecs):
        out[c.id] = v


def assign_paths(tree: SkillTree) -> None:
    """`skill-NN-label` for roots (numbered from 01), `group-NN-label` below (from 00), names
    kept within 64 characters; with `params.compact`, leaves under a level-2 cluster are listed
    in their parent's file and get the path `parent#group-NN-label`."""
    for i, rid in enumerate(tree.roots, 1):
        root = tree.clusters[rid]
        root.path = folder_name("skill", i, root.label)
        _assign_children(tree, root)


def _assign_children(tree: SkillTree, parent: Cluster) -> None:
    compact = tree.params.compact and parent.level == 2
    for j, kid_id in enumerate(parent.children):
        kid = tree.clusters[kid_id]
        name = folder_name("group", j, kid.label)
        kid.path = f"{parent.path}#{name}" if compact and not kid.children else f"{parent.path}/{name}"
        _assign_children(tree, kid)


def folder_name(kind: str, index: int, label: str) -> str:
    """`skill-01-label` / `group-00-label`: at most 64 characters of [a-z0-9-]."""
    prefix = f"{kind}-{index:02d}"
    room = 64 - len(prefix) - 1
    lab = slug(label, limit=min(50, room))
    return f"{prefix}-{lab}" if lab else prefix
