"""The LLM navigator's tools at the documents of a library hierarchy.

`search_document(doc_id, question)` runs the document's own BookRAG retrieval (operator plans over
its tree and graph), `get_node(node_id)` reads one block with its page, box and title path, and
`get_pages(doc_id, "3-7")` reads pages. They reach the library through `DocumentAccess`
(`access`), only for documents the hierarchy holds, and every result says which blocks were read,
so the agent's answer can cite blocks and the trace can show them. A bad argument (unknown
document or node, a malformed page range) is a `ToolError` the model is shown.
"""

from __future__ import annotations

from bookindex.core.errors import InputError
from bookindex.skills.model import DocIds, Hierarchy
from bookindex.skills.navigator.access import DocumentAccess
from bookindex.skills.navigator.tool_result import ReadNode, ToolError, ToolResult

SEARCH_K = 5            # blocks one search_document returns to the model
SNIPPET_CHARS = 400     # of each search result
NODE_CHARS = 3000       # of one node's text
PAGES_CHARS = 6000      # of a get_pages result in all


class DocumentTools:
    """search_document, get_node and get_pages over the documents of one hierarchy."""

    def __init__(self, access: DocumentAccess, hierarchy: Hierarchy) -> None:
        self.access = access
        self.hierarchy = hierarchy
        self._aliases: dict[str, str] = {}
        short = DocIds(hierarchy.documents)  # leaf listings name documents by short id
        for doc_id, d in hierarchy.documents.items():
            for alias in (doc_id, short.short(doc_id), d.name, d.path, d.path.rsplit("/", 1)[-1], f"{d.path}/SKILL.md"):
                self._aliases.setdefault(alias.lower(), doc_id)

    def resolve(self, doc: str) -> str:
        """A document id from its id (full or short), file name or skill folder; ToolError naming
        what was given."""
        key = (doc or "").strip().strip("`'\"").strip("/").lower()
        found = self._aliases.get(key)
        if found is None:
            raise ToolError(f"{doc!r}: no such document in this library; a document's id is the doc_id "
                            "in its SKILL.md and in the leaf INDEX.md that links it")
        return found

    def search_document(self, doc: str, question: str) -> ToolResult:
        doc_id = self.resolve(doc)
        try:
            found = self.access.search_document(doc_id, question, SEARCH_K)
        except InputError as exc:
            raise ToolError(f"search_document {doc!r}: {exc}") from None
        name = self.hierarchy.documents[doc_id].name
        lines = [f"search_document in {name} ({doc_id}): {len(found)} blocks"]
        for e in found:
            where = f" · {e.section}" if e.section else ""
            lines.append(f"[{e.node_id}] p.{e.page} {e.type}{where}\n{e.snippet[:SNIPPET_CHARS]}")
        read = [ReadNode(doc_id=e.doc_id, node_id=e.node_id, page=e.page) for e in found]
        return ToolResult("\n\n".join(lines), doc_id, doc_id=doc_id, read=read)

    def get_node(self, node_id: str) -> ToolResult:
        nid = (node_id or "").strip().strip("`'\"[]")
        doc_id = nid.split("-", 1)[0]
        if doc_id not in self.hierarchy.documents:
            raise ToolError(f"get_node {node_id!r}: no such node in this library; node ids look like "
                            "<doc_id>-00042 and are listed in INDEX.md files and search_document results")
        try:
            node = self.access.node(nid)
        except InputError as exc:
            raise ToolError(f"get_node {node_id!r}: {exc}") from None
        text = node.text if len(node.text) <= NODE_CHARS else node.text[:NODE_CHARS] + " [... cut]"
        path = " › ".join(node.parent_path)
        bbox = f" bbox {tuple(round(float(v), 1) for v in node.bbox)}" if node.bbox else ""
        head = f"[{node.id}] {node.document} p.{node.page_idx + 1} {node.type}{bbox}" + (f"\nin: {path}" if path else "")
        return ToolResult(f"{head}\n{text}", node.id, doc_id=node.doc_id,
                          read=[ReadNode(doc_id=node.doc_id, node_id=node.id, page=node.page_idx + 1)])

    def get_pages(self, doc: str, pages: str) -> ToolResult:
        doc_id = self.resolve(doc)
        try:
            got = self.access.pages(doc_id, pages)
        except InputError as exc:
            raise ToolError(f"get_pages {doc!r} {pages!r}: {exc}") from None
        parts: list[str] = []
        read: list[ReadNode] = []
        used = 0
        for p in got:
            chunk = f"--- page {p.page} ---\n{p.text}"
            if used + len(chunk) > PAGES_CHARS:
                parts.append(f"[... pages from {p.page} cut: ask for fewer pages]")
                break
            parts.append(chunk)
            used += len(chunk)
            read.extend(ReadNode(doc_id=doc_id, node_id=n, page=p.page) for n in p.node_ids)
        return ToolResult("\n".join(parts), f"{doc_id}:{pages.strip()}", doc_id=doc_id, read=read)
