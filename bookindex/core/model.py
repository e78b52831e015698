"""The index data model: parsed blocks and the section tree T of BookRAG (§4.1–4.2).

Plain dataclasses at the bottom of the import graph: parsing produces `Block`s, section
filtering gives title blocks a level, and `build_tree` assembles the tree. Everything above
(graph, operators, retrieval, interfaces) reads `DocumentTree`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Literal

from pydantic import BaseModel, Field, computed_field

from bookindex.core.pages import cite_page, printed_label

BBox = tuple[float, float, float, float]  # x0, y0, x1, y1 in PDF points, top-left origin

BLOCK_TYPES = ("title", "text", "list", "table", "image", "equation", "code")
LEAF_TYPES = ("text", "list", "table", "image", "equation", "code")
NODE_TYPES = ("document", "section") + LEAF_TYPES
# what an image node's meta["figure_kind"] may say it is (parsing.figure_kind tells it from the
# figure's pixels; a count of "pie charts" or "photos" counts by it, operators.labels)
FIGURE_KINDS = ("photo", "pie chart", "bar chart", "line chart")
# the meta keys whose text a node says beside its own (a figure's or a table's caption and
# footnote, the words OCR read inside a figure, a chart's labels in rows): searched and shown
SAID_META_KEYS = ("caption", "footnote", "ocr_text", "chart_text")
# what a section may stand for beside a part of the text (parsing.matter): a printed table of
# contents, a list of figures, a list of tables, an index. Its children are the part's lines.
MATTER_ROLES = ("contents", "figures", "tables", "index")
# the Block.extra keys build_tree reads beside "after_entry": a part's kind (on its head and its
# entry lines), the head's mark, the first block after a part, a title's printed number
MATTER_KEY, MATTER_HEAD_KEY, AFTER_MATTER_KEY, NUMBER_KEY = "matter", "matter_head", "after_matter", "number"


@dataclass
class Block:
    """One primitive layout block b = (content, type, features) plus its position.

    `level` is set by section filtering on title blocks: 1 for a top-level section, 2 below it,
    ...; a title block whose level stays None is demoted to text when the tree is built.
    `extra` carries modality data: tables `markdown`, `html`, `caption`; images `image_path`,
    `caption`, `footnote`, `ocr_text` (the words OCR read inside it), `chart_text` (a vector chart's
    text-layer labels and values, one row per line: `parsing.pdf_labelled_charts`), `figure_kind`
    (`parsing.figure_kind`: "photo", "pie chart", "bar chart", "line chart"; absent when unsure);
    equations `latex`.
    """

    type: str
    content: str
    page_idx: int
    bbox: BBox | None = None
    features: dict[str, Any] = field(default_factory=dict)
    level: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.type not in BLOCK_TYPES:
            raise ValueError(f"unknown block type {self.type!r}; expected one of {BLOCK_TYPES}")


@dataclass
class Node:
    """A node of the section tree. Sections hold a `title`; leaves hold `text`.

    `level` is the section level for sections (document = 0) and the enclosing section's
    level + 1 for leaves, so depth comparisons work across types. `page_end_idx` of a section
    covers all its descendants. `number` is the number a section's title prints ("5.10",
    "4" for "Chapter 4", "B" for "Appendix B"; parsing.heading_numbers), None when it prints
    none. `role` says what a section stands for when it is front or back matter (MATTER_ROLES:
    "contents", "figures", "tables", "index"; parsing.matter), None for the document's own
    sections and for every leaf. A tree stored before these fields existed loads with None.
    """

    id: str
    type: str
    level: int
    title: str = ""
    text: str = ""
    page_idx: int = 0
    page_end_idx: int = 0
    bbox: BBox | None = None
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    number: str | None = None
    role: str | None = None

    @property
    def label(self) -> str:
        """Human-readable one-liner: the title for sections, the start of the text otherwise."""
        s = self.title or self.text
        s = " ".join(s.split())
        return s if len(s) <= 80 else s[:77] + "..."

    @property
    def content(self) -> str:
        """Text used for search and extraction: heading + body, plus captions where present."""
        parts = [self.title, self.text]
        for key in SAID_META_KEYS:
            v = self.meta.get(key)
            if v and v not in self.text:
                parts.append(str(v))
        return "\n".join(p for p in parts if p)


class DocumentTree:
    """T = (N, E_T): nodes by id, the root, and navigation helpers."""

    def __init__(self, doc_id: str, name: str, nodes: dict[str, Node], root_id: str,
                 meta: dict[str, Any] | None = None) -> None:
        self.doc_id = doc_id
        self.name = name
        self.nodes = nodes
        self.root_id = root_id
        self.meta = meta or {}

    # -- navigation -------------------------------------------------------------------
    @property
    def root(self) -> Node:
        return self.nodes[self.root_id]

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def walk(self, start: str | Node | None = None) -> Iterator[Node]:
        """Pre-order traversal (document order) from `start` (default: the root)."""
        start_id = self._id(start) if start is not None else self.root_id
        stack = [start_id]
        while stack:
            node = self.nodes[stack.pop()]
            yield node
            stack.extend(reversed(node.children))

    def subtree(self, node: str | Node) -> list[Node]:
        """The node and all its descendants, in document order."""
        return list(self.walk(node))

    def sections(self, depth: int | None = None) -> list[Node]:
        """Section nodes in document order; with `depth`, only sections at that level."""
        return [n for n in self.walk() if n.type == "section" and (depth is None or n.level == depth)]

    def leaves(self) -> list[Node]:
        return [n for n in self.walk() if n.type in LEAF_TYPES]

    def nodes_on_pages(self, first: int, last: int | None = None) -> list[Node]:
        """Leaf nodes whose own content lies on 0-based pages first..last (inclusive)."""
        last = first if last is None else last
        return [n for n in self.leaves() if n.page_idx <= last and n.page_end_idx >= first]

    def find_section(self, title: str) -> Node | None:
        """The section whose title best matches `title`: exact, then number, then substring."""
        want = _norm_title(title)
        secs = self.sections()
        for s in secs:
            if _norm_title(s.title) == want:
                return s
        num = re.match(r"^\s*((?:\d+\.)*\d+)\b", title)
        if num:
            for s in secs:
                if s.number == num.group(1) or re.match(rf"^\s*{re.escape(num.group(1))}(?:\.)?(?:\s|$)", s.title):
                    return s
        for s in secs:
            if want and want in _norm_title(s.title):
                return s
        return None

    def parent_path(self, node: str | Node) -> list[Node]:
        """Ancestors from the root down to (excluding) the node."""
        n = self.nodes[self._id(node)]
        path: list[Node] = []
        while n.parent is not None:
            n = self.nodes[n.parent]
            path.append(n)
        return list(reversed(path))

    def section_of(self, node: str | Node) -> Node:
        """The nearest enclosing section (or the document root)."""
        n = self.nodes[self._id(node)]
        while n.type not in ("section", "document") and n.parent is not None:
            n = self.nodes[n.parent]
        return n

    @property
    def page_count(self) -> int:
        return int(self.meta.get("pages", self.root.page_end_idx + 1))

    def page_label(self, page_idx: int) -> str | None:
        """What 0-based page `page_idx` prints as its number (`core.pages`); None without one."""
        return printed_label(self.meta.get("page_labels"), page_idx + 1)

    # -- serialization ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "name": self.name,
            "root_id": self.root_id,
            "meta": self.meta,
            "nodes": [asdict(n) for n in self.walk()],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DocumentTree":
        nodes: dict[str, Node] = {}
        for d in data["nodes"]:
            d = dict(d)
            if d.get("bbox") is not None:
                d["bbox"] = tuple(d["bbox"])
            nodes[d["id"]] = Node(**d)
        return cls(data["doc_id"], data["name"], nodes, data["root_id"], data.get("meta", {}))

    def to_nested(self, node: str | Node | None = None, depth: int | None = None) -> dict[str, Any]:
        """Nested JSON view used by `bookindex tree --json`."""
        n = self.nodes[self._id(node)] if node is not None else self.root
        out: dict[str, Any] = {
            "id": n.id, "type": n.type, "level": n.level, "title": n.title or n.label,
            "page_idx": n.page_idx, "page_end_idx": n.page_end_idx, "number": n.number, "role": n.role,
        }
        if depth is None or depth > 0:
            out["children"] = [self.to_nested(c, None if depth is None else depth - 1) for c in n.children]
        else:
            out["children"] = []
            out["child_count"] = len(n.children)
        return out

    def _id(self, node: str | Node) -> str:
        return node.id if isinstance(node, Node) else node


def _norm_title(s: str) -> str:
    s = re.sub(r"^\s*((?:\d+\.)*\d+\.?|[IVXLC]+\.|chapter\s+\d+[:.]?|appendix\s+[A-Z][:.]?)\s*", "", s, flags=re.I)
    return " ".join(re.sub(r"[^\w\s]", " ", s.lower()).split())


def build_tree(doc_id: str, name: str, blocks: list[Block], meta: dict[str, Any] | None = None) -> DocumentTree:
    """Assemble T from blocks in reading order (BookRAG §4.2.2, last paragraph).

    Title blocks with a level open a section; the section stack pops every open section of
    the same or deeper level first, so text belongs to the nearest preceding heading of a
    higher level. Title blocks without a level become text. A block marked
    `extra["after_entry"]` (parsing.entries: the first block after a reference entry that is
    not part of it) first closes the open entry sections (`meta["entry"]`), so it goes back to
    the enclosing section; one marked `extra["after_matter"]` (parsing.matter: the first block
    after a contents, list or index part) closes the open part. A title's `extra["number"]`
    (parsing.heading_numbers) becomes the section's `number`, and a part's head
    (`extra["matter_head"]`) gives its section the `role` `extra["matter"]` names. Node ids are
    `doc_id` plus the block position, so re-parsing the same file gives the same ids.
    """
    root_id = f"{doc_id}-root"
    pages = [b.page_idx for b in blocks]
    root = Node(id=root_id, type="document", level=0, title=name,
                page_idx=min(pages, default=0), page_end_idx=max(pages, default=0))
    nodes: dict[str, Node] = {root_id: root}
    stack: list[Node] = [root]
    for i, b in enumerate(blocks):
        nid = f"{doc_id}-{i:05d}"
        if b.extra.get("after_entry"):
            while len(stack) > 1 and stack[-1].meta.get("entry"):
                stack.pop()
        if b.extra.get(AFTER_MATTER_KEY):
            del stack[next((k for k, s in enumerate(stack) if s.role), len(stack)):]
        if b.type == "title" and b.level is not None and b.level >= 1:
            while len(stack) > 1 and stack[-1].level >= b.level:
                stack.pop()
            parent = stack[-1]
            node = _section_node(nid, b, parent)
            stack.append(node)
        else:
            parent = stack[-1]
            node = _leaf_node(nid, b, parent)
        parent.children.append(nid)
        nodes[nid] = node
    tree = DocumentTree(doc_id, name, nodes, root_id, meta)
    _span_pages(tree, root)
    return tree


def _section_node(nid: str, b: Block, parent: Node) -> Node:
    extra = {k: v for k, v in b.extra.items() if k != NUMBER_KEY}
    number = b.extra.get(NUMBER_KEY)
    role = extra.get(MATTER_KEY) if extra.get(MATTER_HEAD_KEY) else None
    return Node(id=nid, type="section", level=int(b.level or 1), title=b.content.strip(),
                page_idx=b.page_idx, page_end_idx=b.page_idx, bbox=b.bbox, parent=parent.id,
                meta={"features": b.features, **extra}, number=str(number) if number else None,
                role=role if role in MATTER_ROLES else None)


def _leaf_node(nid: str, b: Block, parent: Node) -> Node:
    meta_d = dict(b.extra)
    if b.features:
        meta_d["features"] = b.features
    if b.type == "title":
        meta_d["demoted_title"] = True
    return Node(id=nid, type="text" if b.type == "title" else b.type, level=parent.level + 1, text=b.content,
                page_idx=b.page_idx, page_end_idx=int(b.extra.get("page_end_idx", b.page_idx)),
                bbox=b.bbox, parent=parent.id, meta=meta_d)


def is_entry(node: Node) -> bool:
    """Whether `node` is a reference entry's section (parsing.entries)."""
    return node.type == "section" and bool(node.meta.get("entry"))


def entry_of(tree: DocumentTree, node_id: str) -> str | None:
    """The reference entry a node is or belongs to, else None."""
    n = tree.nodes[node_id]
    if n.type == "section":
        return n.id if is_entry(n) else None
    parent = tree.nodes.get(n.parent) if n.parent is not None else None
    return parent.id if parent is not None and is_entry(parent) else None


def entry_body(tree: DocumentTree, entry: Node) -> list[str]:
    """The texts of an entry's blocks (signature, parameters, description), in order."""
    return [tree.nodes[c].content for c in entry.children if tree.nodes[c].type in LEAF_TYPES]


def name_words(name: str) -> str:
    """An identifier's words ("asn1_der_decoding" -> "asn1 der decoding")."""
    return re.sub(r"[_\W]+", " ", name).strip()


MAX_VECTOR_CHARS = 2000
MAX_LEXICAL_CHARS = 3000
TextPurpose = Literal["vector", "lexical"]


def node_text(tree: DocumentTree, node: Node, purpose: TextPurpose = "vector") -> str:
    """The one definition of the text a node is searched by.

    - "vector" (what is embedded): a section is its title path ("2 Usage > 2.1 Options"), which
      lets a query match a section its short heading alone would not describe; a reference
      entry's section (parsing.entries: its title is a bare name such as "asn1_der_decoding")
      adds what the entry does, `meta["entry"]["summary"]`, since a path of names says little;
      any other node is its content. Whitespace collapsed, at most MAX_VECTOR_CHARS.
    - "lexical" (what BM25 indexes): the node's content prefixed by the titles of its two nearest
      enclosing sections, since a paragraph under "4.2 Tree Construction" is about tree
      construction even when it never says so. A reference entry's section is indexed whole: its
      name, the name's words ("asn1 der decoding": manuals typeset names both ways) and the text
      of its blocks, since the name and what the entry does sit in different blocks and a query
      names the one by describing the other. At most MAX_LEXICAL_CHARS.
    """
    if purpose == "lexical":
        titles = [p.title for p in tree.parent_path(node) if p.type == "section" and p.title][-2:]
        if is_entry(node):
            return "\n".join(titles + [node.title, name_words(node.title)] + entry_body(tree, node))[:MAX_LEXICAL_CHARS]
        return "\n".join(titles + [node.content])[:MAX_LEXICAL_CHARS]
    if node.type == "section":
        path = [p.title for p in tree.parent_path(node) if p.type == "section"] + [node.title]
        text = " > ".join(t for t in path if t)
        entry = node.meta.get("entry")
        if isinstance(entry, dict) and entry.get("summary"):
            text = f"{text}: {entry['summary']}"
    else:
        text = node.content
    return " ".join(text.split())[:MAX_VECTOR_CHARS]


def tree_blocks(tree: DocumentTree) -> list[Block]:
    """The blocks a tree was built from (`build_tree`), in their reading order: what a stored
    document still says page by page, read again without parsing its file (a metadata refresh).

    Node ids carry the block's position, sections give back their title blocks (with level) and
    demoted titles their title type; content, page, box, layout features and extras are kept.
    A section's page is the one it starts on (`_span_pages` only widens it to its children's)."""
    def position(node: Node) -> int:
        tail = node.id.rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else -1

    out: list[Block] = []
    for n in sorted((n for n in tree.nodes.values() if n.id != tree.root_id and position(n) >= 0), key=position):
        features = n.meta.get("features")
        extra = {k: v for k, v in n.meta.items() if k not in ("features", "demoted_title")}
        if n.type == "section":
            if n.number:
                extra[NUMBER_KEY] = n.number
            out.append(Block(type="title", content=n.title, page_idx=n.page_idx, bbox=n.bbox,
                             features=dict(features or {}), level=n.level, extra=extra))
        else:
            btype = "title" if n.meta.get("demoted_title") else n.type
            out.append(Block(type=btype if btype in BLOCK_TYPES else "text", content=n.text, page_idx=n.page_idx,
                             bbox=n.bbox, features=dict(features or {}), extra=extra))
    return out

def _span_pages(tree: DocumentTree, node: Node) -> tuple[int, int]:
    """Make every section span its descendants' pages (iterative post-order)."""
    order = list(tree.walk(node))
    for n in reversed(order):
        if n.children:
            kids = [tree.nodes[c] for c in n.children]
            lo = min([n.page_idx] + [k.page_idx for k in kids]) if n.type != "document" else min(k.page_idx for k in kids)
            hi = max([n.page_end_idx] + [k.page_end_idx for k in kids])
            n.page_idx, n.page_end_idx = lo, hi
    return node.page_idx, node.page_end_idx


@dataclass
class Entity:
    """A knowledge-graph vertex v ∈ V with its GT-links (`node_ids`, the M of B = (T, G, M))."""

    id: str
    name: str
    type: str = "concept"
    description: str = ""
    aliases: list[str] = field(default_factory=list)
    node_ids: list[str] = field(default_factory=list)


@dataclass
class Relation:
    """An edge of G between two entity ids, with the tree nodes it was extracted from."""

    source: str
    target: str
    description: str = ""
    keywords: list[str] = field(default_factory=list)
    weight: float = 1.0
    node_ids: list[str] = field(default_factory=list)


class Evidence(BaseModel):
    """One ranked evidence item of an answer: where it is (page, box) and why it was chosen."""

    doc_id: str
    node_id: str
    type: str
    page_idx: int
    bbox: BBox | None = None
    snippet: str = ""
    scores: dict[str, float] = Field(default_factory=dict)
    rank: int = 0
    section: str = ""
    # what the page prints as its number ("30" on the PDF's page 36, "iv"): the number a reader
    # looks up in the paper copy; None where the page prints none or the folder keeps no labels
    page_label: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def page(self) -> int:
        """1-based page number, as people and benchmarks count."""
        return self.page_idx + 1

    @computed_field  # type: ignore[prop-decorator]
    @property
    def page_ref(self) -> str:
        """The page as every interface names it: "p. 36 (printed 30)", or "p. 36" (`core.pages`)."""
        return cite_page(self.page, self.page_label)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_node(cls, tree: DocumentTree, node: Node, scores: dict[str, float] | None = None,
                  rank: int = 0, snippet_chars: int = 400) -> "Evidence":
        content = node.content
        if is_entry(node):  # an entry's snippet is what it says
            content = "\n".join([node.title] + entry_body(tree, node))
        text = " ".join(content.split())
        sec = tree.section_of(node)
        return cls(doc_id=tree.doc_id, node_id=node.id, type=node.type, page_idx=node.page_idx,
                   bbox=node.bbox, snippet=text[:snippet_chars], scores=dict(scores or {}),
                   rank=rank, section=sec.title if sec.type == "section" else "",
                   page_label=tree.page_label(node.page_idx))
