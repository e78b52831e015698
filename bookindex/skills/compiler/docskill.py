"""A document as a skill: one indexed document's section tree as navigation files.

A document's folder `doc-<name>/` holds `SKILL.md` (title, summary, pages, its top-level
sections with page range and one line each) and one `sec-NN-<title>/INDEX.md` per section,
nested like the tree, listing the section's subsections and its leaves (node id, type, page).
It is the BookRAG tree written the way Corpus2Skill writes clusters, so the same agent that
walks topic clusters can keep walking into chapters and sections, and the same file rules hold:
folder names of at most 64 characters of [a-z0-9-], YAML frontmatter (name, description, level,
num_documents), descriptions of at most 1,024 characters, small files.

Rendering is a pure function of the tree and the summaries, so the same document gives the same
bytes; `document_hash` names what a skill was rendered from, so a rebuild renders only the
documents whose index changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from bookindex.core.model import DocumentTree, Node
from bookindex.skills.compiler.materialise import yaml_string
from bookindex.skills.compiler.summarise import clip, first_sentence, slug

DOC_FORMAT = "bookindex-docskill/1"
SKILL_FILE = "SKILL.md"
INDEX_FILE = "INDEX.md"
DESCRIPTION_CHARS = 1024
LINE_CHARS = 110        # a section's or leaf's one line in a listing
SUMMARY_CHARS = 600     # a document's extractive summary
SECTION_SLUG = 40       # section folder names stay short: paths nest as deep as the tree
MAX_LEAVES = 40         # leaves listed per INDEX.md; the rest are named by page range (get_pages)
MAX_SECTIONS = 50       # subsections listed per file; the folder's listing (view) names them all
TERSE_AFTER = 25        # with more subsections than this, each gets its title only (files stay < 8 KB)
NEXT_DOC = ("Read a section's INDEX.md to see its subsections and blocks. Tools: get_node(node_id) returns a "
            "block's text, page and bbox; get_pages(doc, \"3-7\") the text of pages; "
            "search_document(doc, question) runs this document's retrieval (operator plans).")

LineFn = Callable[[Node], str]


@dataclass
class DocumentSkill:
    """The files of one document's skill, relative to its own folder, and where each section went."""

    doc_id: str
    folder: str                                  # "doc-<name>"
    files: dict[str, str]                        # relative path -> text
    sections: dict[str, str] = field(default_factory=dict)  # node id -> folder relative to `folder`
    summary: str = ""


def document_hash(doc_id: str, generation: str, summaries: str) -> str:
    """What a document's skill was rendered from: its stored generation (a re-index makes a new
    one), the renderer's format and the summariser (LLM model or extractive)."""
    return hashlib.sha256(f"{DOC_FORMAT}\n{doc_id}\n{generation}\n{summaries}".encode()).hexdigest()[:16]


def folder_for(name: str, doc_id: str, taken: set[str]) -> str:
    """`doc-<file stem>`, at most 64 characters; the doc id is appended when two names collide."""
    stem = name.rsplit(".", 1)[0] if "." in name else name
    base = f"doc-{slug(stem, limit=50) or doc_id[:12]}"
    out = base if base not in taken else f"{base[:64 - 13]}-{doc_id[:12]}"
    taken.add(out)
    return out


def pages_of(node: Node) -> str:
    """1-based page range of a node ("3" or "3-7")."""
    a, b = node.page_idx + 1, max(node.page_idx, node.page_end_idx) + 1
    return str(a) if a == b else f"{a}-{b}"


def extractive_line(tree: DocumentTree, node: Node) -> str:
    """A section's one line without an LLM: the first sentence of its first text under it."""
    for n in tree.walk(node):
        if n.id != node.id and n.type in ("text", "list") and n.text.strip():
            return clip(first_sentence(n.text), LINE_CHARS)
    return ""


def extractive_summary(tree: DocumentTree, name: str) -> str:
    """A document's summary without an LLM: its opening text and what its chapters are called."""
    tops = [s.title.strip() for s in top_sections(tree) if s.title.strip()]
    opening = next((clip(n.text, 300) for n in tree.leaves() if n.type == "text" and len(n.text.split()) >= 8), "")
    title = tree.root.title.strip()
    parts = [f"{title}."] if title and title != name else []
    if opening:
        parts.append(opening)
    if tops:
        parts.append("Sections: " + "; ".join(clip(t, 60) for t in tops[:12]) + ".")
    return clip(" ".join(parts), SUMMARY_CHARS)


def top_sections(tree: DocumentTree) -> list[Node]:
    return [tree.nodes[c] for c in tree.root.children if tree.nodes[c].type == "section"]


def render_document(tree: DocumentTree, *, name: str, pages: int, folder: str, summary: str,
                    line: LineFn) -> DocumentSkill:
    """Every file of one document's skill. `line(section)` gives a section's one line (the LLM's
    or `extractive_line`)."""
    skill = DocumentSkill(doc_id=tree.doc_id, folder=folder, files={}, summary=summary)
    title = tree.root.title.strip() or name
    tops = top_sections(tree)
    _section_folders(tree, tree.root, "", skill.sections)
    described = summary if summary.startswith(title) else f"{title}: {summary}"
    lines = ["---", f"name: {folder}", f"description: {yaml_string(clip(described, DESCRIPTION_CHARS))}",
             "level: 0", "num_documents: 1", f"doc_id: {tree.doc_id}", f"pages: {pages}", "---", "",
             f"# {title}", "", f"Document `{tree.doc_id}` ({name}), {pages} pages.", "", "## Summary", "", summary, "",
             f"## Sections ({len(tops)})", ""]
    lines += _section_lines(tops, skill.sections, line)
    loose = [tree.nodes[c] for c in tree.root.children if tree.nodes[c].type != "section"]
    if loose:
        lines += ["", f"## Blocks before the first section ({len(loose)})", ""]
        lines += _leaf_lines(loose)
    lines += ["", NEXT_DOC, ""]
    skill.files[SKILL_FILE] = "\n".join(lines)
    for sec_id, rel in skill.sections.items():
        skill.files[f"{rel}/{INDEX_FILE}"] = _render_section(tree, tree.nodes[sec_id], rel, skill.sections, line, folder)
    return skill


def _section_folders(tree: DocumentTree, parent: Node, prefix: str, out: dict[str, str]) -> None:
    """`sec-NN-title` for each section child of `parent`, nested: fills `out` (node id -> folder
    relative to the document's folder)."""
    kids = [tree.nodes[c] for c in parent.children if tree.nodes[c].type == "section"]
    for i, s in enumerate(kids, 1):
        lab = slug(s.title, limit=SECTION_SLUG)
        name = f"sec-{i:02d}-{lab}" if lab else f"sec-{i:02d}"
        rel = f"{prefix}/{name}" if prefix else name
        out[s.id] = rel
        _section_folders(tree, s, rel, out)


def _render_section(tree: DocumentTree, sec: Node, rel: str, sections: dict[str, str], line: LineFn,
                    doc_folder: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    path = [p.title.strip() for p in tree.parent_path(sec) if p.id != tree.root_id and p.title.strip()]
    title = sec.title.strip() or "(untitled)"
    one = line(sec)
    desc = clip(f"{' > '.join(path + [title])} (pp. {pages_of(sec)})" + (f": {one}" if one else ""), DESCRIPTION_CHARS)
    subs = [tree.nodes[c] for c in sec.children if tree.nodes[c].type == "section"]
    leaves = [tree.nodes[c] for c in sec.children if tree.nodes[c].type != "section"]
    out = ["---", f"name: {name}", f"description: {yaml_string(desc)}", f"level: {sec.level}", "num_documents: 1",
           f"doc_id: {tree.doc_id}", f"node_id: {sec.id}", "---", "", f"# {title}", "",
           f"In `{doc_folder}` › {' › '.join(path) or 'top level'}; section `{sec.id}`, pp. {pages_of(sec)}.", ""]
    if subs:
        out += [f"## Subsections ({len(subs)})", ""]
        out += _section_lines(subs, sections, line)
        out.append("")
    if leaves:
        out += [f"## Blocks ({len(leaves)})", ""]
        out += _leaf_lines(leaves)
        out.append("")
    out += ["get_node(node_id) reads a block; get_pages(doc, pages) reads whole pages.", ""]
    return "\n".join(out)


def _section_lines(subs: list[Node], sections: dict[str, str], line: LineFn) -> list[str]:
    """`- **sec-NN-x/** `node id` (pp. a-b): title — one line`; terse and capped when there are many."""
    terse = len(subs) > TERSE_AFTER
    out = []
    for s in subs[:MAX_SECTIONS]:
        title = clip(s.title.strip(), 60 if terse else 120) or "(untitled)"
        one = "" if terse else line(s)
        out.append(f"- **{sections[s.id].rsplit('/', 1)[-1]}/** `{s.id}` (pp. {pages_of(s)}): {title}"
                   + (f" — {one}" if one else ""))
    if len(subs) > MAX_SECTIONS:
        out.append(f"- ... {len(subs) - MAX_SECTIONS} more sections: view this folder to list them")
    return out


def _leaf_lines(leaves: list[Node]) -> list[str]:
    shown = leaves[:MAX_LEAVES]
    out = [f"- `{n.id}` {n.type} p. {pages_of(n)}: {clip(n.label, 70)}" for n in shown]
    if len(leaves) > MAX_LEAVES:
        rest = leaves[MAX_LEAVES:]
        first = min(n.page_idx for n in rest) + 1
        last = max(max(n.page_idx, n.page_end_idx) for n in rest) + 1
        out.append(f"- ... {len(rest)} more blocks on pp. {first}-{last} (get_pages)")
    return out
