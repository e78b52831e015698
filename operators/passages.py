"""Evidence as readable passages: what a reader (an LLM or a person) gets for one ranked node.

A ranked node alone is often a fragment: the parameter list of a reference entry, the second
half of a paragraph split by a page break, a table without the sentence that introduces it. A
passage is the ranked node with its title path (which names the entry or section it belongs to)
and the adjacent blocks of the same entry or paragraph, within a character budget, so the reader
sees what the node means. Context blocks already shown by an earlier passage are not repeated.
Citations still point at the ranked node itself (its page and box); `node_ids` lists every node
whose text a passage shows, for interfaces that highlight them.
"""

from __future__ import annotations

from dataclasses import dataclass

from bookindex.core.model import LEAF_TYPES, DocumentTree, Node

ITEM_CHARS = 1200  # the most one passage shows when the budget allows
MIN_ITEM_CHARS = 400  # the least, however many items share the budget
BUDGET_CHARS = 7000  # all passages of one prompt together (about 1,800 tokens)
_CONTEXT_TYPES = ("text", "equation", "table")


@dataclass(frozen=True)
class Passage:
    """One evidence item as a reader sees it."""

    node_id: str  # the ranked node: citations point here
    title_path: tuple[str, ...]  # enclosing section titles, outermost first (an entry's name last)
    text: str
    node_ids: tuple[str, ...]  # every node shown, in document order
    first_page: int  # 1-based pages the shown nodes span
    last_page: int

    @property
    def where(self) -> str:
        pages = f"p. {self.first_page}" if self.first_page == self.last_page else f"pp. {self.first_page}-{self.last_page}"
        return pages + (f" · {' > '.join(self.title_path)}" if self.title_path else "")

    def render(self) -> str:
        """Where it is, then what it says: the text a reader is shown for this item."""
        return f"({self.where})\n{self.text}"

    @property
    def name(self) -> str:
        """The entry or section the passage comes from: the innermost title ('' at top level)."""
        return self.title_path[-1] if self.title_path else ""


def title_path(tree: DocumentTree, node: Node) -> tuple[str, ...]:
    """Titles of the sections enclosing `node` (itself included when it is a section)."""
    chain = [*tree.parent_path(node), node] if node.type == "section" else tree.parent_path(node)
    return tuple(" ".join(n.title.split())[:100] for n in chain if n.type == "section" and n.title.strip())


def _flat(node: Node) -> str:
    # tables keep their line structure (Markdown/HTML rows); prose is one line
    return node.content.strip() if node.type == "table" else " ".join(node.content.split())


def _section_leaves(tree: DocumentTree, section: Node) -> list[Node]:
    return [tree.nodes[c] for c in section.children if tree.nodes[c].type in LEAF_TYPES]


def _context(tree: DocumentTree, node: Node, room: int, shown: set[str]) -> list[Node]:
    """The ranked node and the neighbours of the same entry or paragraph that fit in `room`.

    A section node shows its own leading blocks. A small enclosing section (a reference entry, a
    short subsection) is shown whole; otherwise siblings are added outwards, the following block
    first (a paragraph cut by a page or column break continues there), then the preceding one.
    """
    if node.type == "section":
        picked: list[Node] = []
        used = len(node.title)
        for leaf in _section_leaves(tree, node):
            if leaf.id in shown:
                continue
            if used + len(_flat(leaf)) > room and picked:
                break
            picked.append(leaf)
            used += len(_flat(leaf))
        return picked
    parent = tree.nodes[node.parent] if node.parent is not None else None
    if parent is None:
        return [node]
    siblings = _section_leaves(tree, parent) if parent.type in ("section", "document") else []
    sibling_ids = [s.id for s in siblings]
    if node.id not in sibling_ids:
        return [node]
    whole = sum(len(_flat(s)) for s in siblings)
    if parent.type == "section" and whole <= room:
        return [s for s in siblings if s.id == node.id or s.id not in shown]
    pos = sibling_ids.index(node.id)
    lo, hi = pos, pos
    used = len(_flat(node))
    grew = True
    while grew:
        grew = False
        for step in (1, -1):
            j = hi + 1 if step == 1 else lo - 1
            if not 0 <= j < len(siblings):
                continue
            cand = siblings[j]
            if cand.type not in _CONTEXT_TYPES or cand.id in shown or used + len(_flat(cand)) > room:
                continue
            used += len(_flat(cand))
            lo, hi = min(lo, j), max(hi, j)
            grew = True
    return siblings[lo:hi + 1]


def build_passages(tree: DocumentTree, ids: list[str], *, budget_chars: int = BUDGET_CHARS,
                   item_chars: int = ITEM_CHARS) -> list[Passage]:
    """One passage per ranked id (same order). Each gets an equal share of `budget_chars`
    (between MIN_ITEM_CHARS and `item_chars`); context shown by an earlier passage is skipped."""
    room = max(MIN_ITEM_CHARS, min(item_chars, budget_chars // max(1, len(ids))))
    shown: set[str] = set()
    out: list[Passage] = []
    for nid in ids:
        node = tree.nodes[nid]
        nodes = _context(tree, node, room, shown)
        shown.update(n.id for n in nodes)
        shown.add(nid)
        parts = [node.title] if node.type == "section" and node.title else []
        parts += [_flat(n) for n in nodes]
        text = "\n".join(p for p in parts if p)
        if len(text) > room:  # a single long block: keep the start (where its topic is stated)
            text = text[:room - 2].rsplit(" ", 1)[0] + " …"
        pages = [n.page_idx for n in nodes] or [node.page_idx]
        out.append(Passage(node_id=nid, title_path=title_path(tree, node), text=text,
                           node_ids=tuple(n.id for n in nodes) or (nid,),
                           first_page=min(pages) + 1, last_page=max(pages) + 1))
    return out


def format_passages(passages: list[Passage], numbers: list[int] | None = None) -> str:
    """Numbered passages for a prompt; `numbers` keeps citation numbers global across sub-questions."""
    nums = numbers or list(range(1, len(passages) + 1))
    return "\n\n".join(f"[{k}] {p.render()}" for k, p in zip(nums, passages))


def passage_sources(passages: list[Passage], numbers: list[int] | None = None) -> dict[int, str]:
    """Citation number -> everything the reader was shown for it (title path and text)."""
    nums = numbers or list(range(1, len(passages) + 1))
    return {k: p.render() for k, p in zip(nums, passages)}
