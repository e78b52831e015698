"""What the inspector's templates and its JavaScript show, computed from the Engine's models.

Pure functions, no web framework: a tree node's children in a compact form (so a 6,000-node
manual loads one level at a time), the boxes of an evidence node on every page it spans (a
cross-page node is highlighted on each of its pages, not only the first), the trace as nested
steps, and an answer's text split into text and citation markers. Nothing here produces HTML:
templates autoescape every string, and the JavaScript sets text with `textContent`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bookindex.core.model import BBox, DocumentTree, Node
from bookindex.core.pages import cite_pages

MAX_BOX_PAGES = 6  # pages of one multi-page node drawn with boxes (a whole chapter would be dozens)
MAX_VALUE_CHARS = 400  # a parameter or output value shown in a step, beyond which it is cut
CITATION = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")


def entry_name(node: Node) -> str:
    entry = node.meta.get("entry")
    return str(entry.get("name") or "") if isinstance(entry, dict) else ""


def node_row(tree: DocumentTree, node: Node) -> dict[str, Any]:
    """One tree row: id, type, label, 1-based page range (and as cited, with the printed numbers:
    `core.pages`), child count, entry name and kind, and the role a contents, list or index
    section has in the stored tree (parsing.matter: the inspector shows the kind every other
    reader of the tree sees, it does not guess one)."""
    entry = node.meta.get("entry")
    first, last = node.page_idx + 1, node.page_end_idx + 1
    return {"id": node.id, "type": node.type, "label": node.label or node.type, "page": first, "page_end": last,
            "page_ref": cite_pages(first, last, tree.page_label(node.page_idx), tree.page_label(node.page_end_idx)),
            "children": sum(1 for c in node.children if c in tree.nodes),
            "entry": entry_name(node), "entry_kind": str(entry.get("kind") or "") if isinstance(entry, dict) else "",
            "role": node.role or ""}


def children_rows(tree: DocumentTree, node_id: str) -> list[dict[str, Any]]:
    node = tree.nodes[node_id]
    return [node_row(tree, tree.nodes[c]) for c in node.children if c in tree.nodes]


FOLDS = {"front": "Front matter", "back": "Back matter"}
MIN_FOLD = 2  # a lone leaf before the first section stays a row of its own


def matter_spans(tree: DocumentTree) -> dict[str, tuple[int, int]]:
    """Where the root's front and back matter lie, as [start, end) slices of its children.

    Front matter is the run of leaves (nodes without children: a cover's lines, a copyright
    notice) before the root's first child that holds children; back matter is the run of leaves
    after the last one. A printed table of contents, a list of figures and an index are sections
    of the stored tree (`Node.role`, parsing.matter), so they stand as rows of their own, as
    `bookindex tree` and MCP `get_structure` show them; only the loose leaves around them fold.
    A parser that found no sections (every child a leaf) leaves the root unfolded."""
    kids = [tree.nodes[c] for c in tree.root.children if c in tree.nodes]
    holders = [i for i, n in enumerate(kids) if n.children]
    if not holders:
        return {}
    spans = {}
    if holders[0] >= MIN_FOLD:
        spans["front"] = (0, holders[0])
    if len(kids) - holders[-1] - 1 >= MIN_FOLD:
        spans["back"] = (holders[-1] + 1, len(kids))
    return spans


def fold_row(tree: DocumentTree, group: str, span: tuple[int, int]) -> dict[str, Any]:
    """The one collapsed row standing for a folded run of the root's children."""
    kids = [tree.nodes[c] for c in tree.root.children if c in tree.nodes][span[0]:span[1]]
    first, last = min(n.page_idx for n in kids), max(n.page_end_idx for n in kids)
    return {"id": f"{tree.root_id}~{group}", "type": "group", "group": group, "label": FOLDS[group],
            "page": first + 1, "page_end": last + 1,
            "page_ref": cite_pages(first + 1, last + 1, tree.page_label(first), tree.page_label(last)),
            "children": len(kids), "entry": "", "entry_kind": ""}


def top_rows(tree: DocumentTree) -> list[dict[str, Any]]:
    """The document page's first level: the root's children with front and back matter each
    folded into one collapsed group row (opened with `group_rows`)."""
    rows = children_rows(tree, tree.root_id)
    spans = matter_spans(tree)
    if "back" in spans:
        a, b = spans["back"]
        rows[a:b] = [fold_row(tree, "back", spans["back"])]
    if "front" in spans:
        a, b = spans["front"]
        rows[a:b] = [fold_row(tree, "front", spans["front"])]
    return rows


def group_rows(tree: DocumentTree, group: str) -> list[dict[str, Any]] | None:
    """The rows a folded group holds; None when the document has no such group."""
    span = matter_spans(tree).get(group)
    if span is None:
        return None
    return children_rows(tree, tree.root_id)[span[0]:span[1]]


MAX_EDGE_LABEL = 60  # characters of a relation drawn on its edge (the list below the drawing has it whole)
MAX_DRAWN = 24  # neighbours drawn (the heaviest edges): more make one ring of unreadable labels


def drawn_ids(view: Any) -> list[str]:
    """The entities the graph page draws: the entity and its MAX_DRAWN heaviest neighbours."""
    return [view.entity.id, *(n.id for n in view.neighbours[:MAX_DRAWN])]


def graph_data(view: Any, links: list[tuple[str, str, float]]) -> dict[str, Any]:
    """An entity's neighbourhood as the graph page draws it (cytoscape.js elements): the entity
    in the centre, its heaviest neighbours around it, every relation among them (`links`) as an
    edge; a spoke carries the start of its relation's text. `view` is the Engine's EntityView."""
    center = view.entity.id
    nodes = [{"id": center, "name": view.entity.name, "type": view.entity.type, "degree": view.entity.degree,
              "center": True}]
    spoke: dict[str, str] = {}
    for n in view.neighbours[:MAX_DRAWN]:
        nodes.append({"id": n.id, "name": n.name, "type": n.type, "degree": n.degree, "center": False})
        spoke[n.id] = n.relation or ""
    edges = []
    for a, b, w in links:
        other = b if a == center else a if b == center else None
        label = short(spoke.get(other, ""), MAX_EDGE_LABEL) if other is not None else ""
        edges.append({"source": a, "target": b, "weight": w, "label": label, "spoke": other is not None})
    return {"center": center, "nodes": nodes, "edges": edges}


def _union(boxes: list[BBox]) -> BBox:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def node_boxes(tree: DocumentTree, node_id: str) -> list[dict[str, Any]]:
    """The boxes to draw for a node: its own box on its first page ("primary"), and on every
    page it spans the union of its descendants' boxes there ("extent"), up to MAX_BOX_PAGES
    pages. A leaf split across pages without descendant boxes keeps its one box."""
    node = tree.nodes[node_id]
    out: list[dict[str, Any]] = []
    if node.bbox is not None:
        out.append({"page": node.page_idx + 1, "bbox": list(node.bbox), "role": "primary"})
    per_page: dict[int, list[BBox]] = {}
    last = min(node.page_end_idx, node.page_idx + MAX_BOX_PAGES - 1)
    if node.children:
        for d in tree.walk(node):
            if d.id != node.id and d.bbox is not None and node.page_idx <= d.page_idx <= last:
                per_page.setdefault(d.page_idx, []).append(d.bbox)
    for p in sorted(per_page):
        out.append({"page": p + 1, "bbox": list(_union(per_page[p])), "role": "extent"})
    return out


def evidence_boxes(tree: DocumentTree | None, evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every evidence item's boxes with its rank (1-based) and the pages they lie on. Without
    the tree (another document), an item keeps the box the Evidence carries."""
    out: list[dict[str, Any]] = []
    for e in evidence:
        nid = e.get("node_id", "")
        if tree is not None and nid in tree.nodes:
            boxes = node_boxes(tree, nid)
        elif e.get("bbox"):
            boxes = [{"page": int(e["page_idx"]) + 1, "bbox": list(e["bbox"]), "role": "primary"}]
        else:
            boxes = []
        pages = sorted({b["page"] for b in boxes}) or [int(e.get("page_idx", 0)) + 1]
        out.append({"rank": e.get("rank") or len(out) + 1, "node_id": nid, "page": int(e.get("page_idx", 0)) + 1,
                    "pages": pages, "boxes": boxes})
    return out


def answer_parts(text: str, n_evidence: int) -> list[dict[str, Any]]:
    """The answer as text parts and citation parts `{"cite": n}` (only numbers that name an
    evidence item become links; others stay text)."""
    parts: list[dict[str, Any]] = []
    pos = 0
    for m in CITATION.finditer(text):
        nums = [int(x) for x in re.split(r"\s*,\s*", m.group(1))]
        if not all(1 <= n <= n_evidence for n in nums):
            continue
        if m.start() > pos:
            parts.append({"text": text[pos:m.start()]})
        for n in nums:
            parts.append({"cite": n})
        pos = m.end()
    if pos < len(text):
        parts.append({"text": text[pos:]})
    return parts


def short(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """A value as one line of JSON (strings as they are), cut at `limit` characters."""
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return s if len(s) <= limit else s[:limit - 1] + "…"


STEP_FIELDS = {"op", "kind", "ms", "params", "inputs", "llm", "outputs", "branches", "sub_questions",
               "whole_question"}


def _kept(outputs: Any) -> list[dict[str, Any]]:
    """Ranked outputs `[[node_id, score, {dim: score}], ...]` as rows; anything else: none."""
    rows = []
    if isinstance(outputs, list):
        for item in outputs:
            if isinstance(item, (list, tuple)) and len(item) >= 2 and isinstance(item[0], str) \
                    and isinstance(item[1], (int, float)):
                dims = item[2] if len(item) > 2 and isinstance(item[2], dict) else {}
                rows.append({"node_id": item[0], "score": item[1], "dims": short(dims)})
    return rows


def step_view(rec: dict[str, Any]) -> dict[str, Any]:
    """One trace record for the plan view: header facts, parameters, inputs, kept nodes with
    scores, other outputs and details, and nested branches / sub-questions."""
    kept = _kept(rec.get("outputs"))
    outputs = rec.get("outputs")
    subs = []
    for sq in rec.get("sub_questions") or []:
        if isinstance(sq, dict):
            subs.append({"question": str(sq.get("question", "")), "steps": [step_view(r) for r in sq.get("trace") or []]})
        else:
            subs.append({"question": str(sq), "steps": []})
    whole = rec.get("whole_question")
    llm = rec.get("llm") or {}
    return {
        "op": str(rec.get("op", "")), "kind": str(rec.get("kind") or ""), "ms": rec.get("ms"),
        "llm_calls": int(llm.get("calls", 0) or 0) if isinstance(llm, dict) else 0,
        "params": [(str(k), short(v)) for k, v in (rec.get("params") or {}).items()],
        "inputs": [(str(k), short(v)) for k, v in (rec.get("inputs") or {}).items()],
        "kept": kept,
        "outputs": "" if kept or outputs is None else short(outputs),
        "details": [(str(k), short(v)) for k, v in rec.items() if k not in STEP_FIELDS and v is not None],
        "branches": [step_view(b) for b in rec.get("branches") or []],
        "sub_questions": subs,
        "whole": {"question": str(whole.get("question", "")), "steps": [step_view(r) for r in whole.get("trace") or []]}
        if isinstance(whole, dict) else None,
    }


def plan_json(plan: Any) -> str:
    """A plan (pydantic model or dict) as indented JSON for the editor."""
    data = plan.model_dump(mode="json") if hasattr(plan, "model_dump") else plan
    return json.dumps(data, indent=2, ensure_ascii=False)
