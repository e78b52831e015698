"""Response models the Engine does not have: a document's outline to a depth, a job list.

Shared by the REST and MCP servers so both show a tree the same way.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from bookindex.core.model import DocumentTree, Node

MAX_DEPTH = 12


class TreeNode(BaseModel):
    """One node of an outline; `children` is cut at the requested depth (`child_count` says how
    many there are), so a client can fetch a deeper level with the node endpoint. `number` is
    the number a section's title prints ("5.10"), `role` what a section stands for when it is a
    printed table of contents, list of figures or tables, or index ("contents", "figures",
    "tables", "index"); both None otherwise."""

    id: str
    type: str
    level: int
    title: str
    page: int  # 1-based first page
    page_end: int
    child_count: int
    number: str | None = None
    role: str | None = None
    children: list["TreeNode"] = Field(default_factory=list)


def outline(tree: DocumentTree, depth: int, sections_only: bool = True) -> TreeNode:
    """The tree from its root down `depth` levels (0: the root alone)."""
    depth = max(0, min(depth, MAX_DEPTH))

    def keep(n: Node) -> bool:
        return not sections_only or n.type in ("document", "section")

    def build(n: Node, left: int) -> TreeNode:
        kids = [tree.nodes[c] for c in n.children if c in tree.nodes and keep(tree.nodes[c])]
        return TreeNode(id=n.id, type=n.type, level=n.level, title=n.label, page=n.page_idx + 1,
                        page_end=n.page_end_idx + 1, child_count=len(kids), number=n.number, role=n.role,
                        children=[build(k, left - 1) for k in kids] if left > 0 else [])

    return build(tree.root, depth)


def outline_text(node: TreeNode, indent: int = 0) -> str:
    """The outline as indented lines `title [pages] (id)`: compact for an agent's context; a
    contents, list or index section says its role first (`Contents [contents, p4-6] (id)`)."""
    pages = f"p{node.page}" if node.page == node.page_end else f"p{node.page}-{node.page_end}"
    if node.role:
        pages = f"{node.role}, {pages}"
    more = f" +{node.child_count} below" if node.child_count and not node.children else ""
    lines = [f"{'  ' * indent}{node.title} [{pages}] ({node.id}){more}"]
    for c in node.children:
        lines.append(outline_text(c, indent + 1))
    return "\n".join(lines)


def summary(info: Any) -> dict[str, Any]:
    """A document's catalog facts without its full manifest."""
    return {k: getattr(info, k) for k in ("doc_id", "name", "pages", "parser", "nodes", "sections",
                                           "graph", "created")}
