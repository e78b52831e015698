"""A skill folder's hierarchy as a typed view (`skills tree`, `Engine.skills_tree`)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from bookindex.skills.compiler.requests import SkillNodeView, SkillsTreeView
from bookindex.skills.model import SkillTree, load_tree


def tree_view(folder: str | Path) -> SkillsTreeView:
    tree = load_tree(folder)
    return SkillsTreeView(folder=str(folder), documents=len(tree.documents), clusters=len(tree.clusters),
                          params=asdict(tree.params), roots=[node_view(tree, r) for r in tree.roots])


def node_view(tree: SkillTree, cluster_id: str) -> SkillNodeView:
    c = tree.cluster(cluster_id)
    return SkillNodeView(id=c.id, label=c.label, path=c.path, level=c.level, num_documents=c.num_documents,
                         description=c.description, children=[node_view(tree, k) for k in c.children])
