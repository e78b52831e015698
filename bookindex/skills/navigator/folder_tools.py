"""The navigator's two tools over one skill folder: `view(path)` and `get_document(doc_id)`.

`view` shows the agent what the compiler wrote for it: a folder's listing or a navigation file's
text, nothing else, and never anything outside the skill root (a path is resolved and checked, so
`..`, absolute paths and links out are refused). `get_document` reads the document store; it is
the only source an answer may cite (the paper's grounding rule), so summaries are navigation aids
and documents are evidence.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from bookindex.skills.model import DOCUMENTS_FILE, TREE_FILE, VECTORS_FILE, CorpusDocument, DocIds
from bookindex.skills.navigator.tool_result import ToolError, ToolResult

NAV_SUFFIX = ".md"
HIDDEN = {TREE_FILE, VECTORS_FILE, DOCUMENTS_FILE}  # bookindex's data files, not the agent's
VIEW_CHARS = 8000       # a navigation file is ~2 KB; a bigger one is cut so one view cannot flood
DOCUMENT_CHARS = 6000   # a document's text as the agent reads it


NAV_FILES = ("SKILL.md", "INDEX.md")


def _cut(text: str) -> str:
    return text if len(text) <= VIEW_CHARS else text[:VIEW_CHARS] + "\n[... cut]"


class FolderTools:
    """`view` and `get_document` bound to one skill folder and its document store."""

    def __init__(self, root: str | Path, documents: dict[str, CorpusDocument]) -> None:
        self.root = Path(root).resolve()
        self.documents = documents
        self._folders: dict[str, list[str]] | None = None  # folder name -> its paths (lazy)
        self._ids: DocIds | None = None

    @property
    def ids(self) -> DocIds:
        """The documents' short ids, as the leaf listings show them (made on first use)."""
        if self._ids is None:
            self._ids = DocIds(self.documents)
        return self._ids

    def normalise(self, path: str) -> str:
        """The path relative to the root, '/'-separated; ToolError for anything outside it."""
        raw = (path or "").strip().strip("`'\"").replace("\\", "/")
        for prefix in ("./", "skills/"):
            if raw.startswith(prefix):
                raw = raw[len(prefix):]
        pure = PurePosixPath(raw)
        if pure.is_absolute() or ".." in pure.parts:
            raise ToolError(f"view {path!r}: paths are relative to the skill root and may not leave it")
        rel = "/".join(p for p in pure.parts if p not in ("", "."))
        target = (self.root / rel).resolve()
        if target != self.root and self.root not in target.parents:
            raise ToolError(f"view {path!r}: outside the skill root")
        if not target.exists() and pure.name in NAV_FILES:
            # SKILL.md asked of a group folder or INDEX.md of a skill folder: the one it has
            other = (self.root / rel).parent / NAV_FILES[1 - NAV_FILES.index(pure.name)]
            if other.is_file() and other.resolve().parent.is_relative_to(self.root):
                rel, target = other.relative_to(self.root).as_posix(), other.resolve()
        if not target.exists():
            found = self._by_folder_name(rel)
            if found is None:
                raise ToolError(f"view {path!r}: no such folder or file; view '' lists the skills")
            rel, target = found, self.root / found
        if target.is_file() and (target.suffix != NAV_SUFFIX or target.name in HIDDEN):
            raise ToolError(f"view {path!r}: only folders and .md navigation files can be viewed; "
                            "read documents with get_document")
        return rel

    def _by_folder_name(self, rel: str) -> str | None:
        """`group-05-x/INDEX.md` given without its parents (small models drop them): the one
        folder of that name in the tree, else None (ambiguous or absent)."""
        first, _, rest = rel.partition("/")
        if not first:
            return None
        if self._folders is None:
            self._folders = {}
            for d in sorted(p for p in self.root.rglob("*") if p.is_dir()):
                self._folders.setdefault(d.name, []).append(d.relative_to(self.root).as_posix())
        hits = self._folders.get(first, [])
        if len(hits) != 1:
            return None
        found = f"{hits[0]}/{rest}".rstrip("/")
        return found if (self.root / found).exists() else None

    def view(self, path: str) -> ToolResult:
        """A folder's listing (sub-folders with '/', navigation files) or a file's text."""
        rel = self.normalise(path)
        target = self.root / rel
        if target.is_dir():
            names = []
            for child in sorted(target.iterdir()):
                if child.name.startswith(".") or child.name in HIDDEN:
                    continue
                if child.is_dir():
                    names.append(child.name + "/")
                elif child.suffix == NAV_SUFFIX:
                    names.append(child.name)
            head = f"{rel or '.'}/ contains:"
            listing = "\n".join([head] + [f"- {n}" for n in names])
            # the folder's own navigation file comes with its listing: a small model that views
            # a folder instead of its INDEX.md still sees the sub-groups or document ids
            nav = next((target / n for n in NAV_FILES if (target / n).is_file()), None)
            if nav is not None:
                listing += f"\n\n{rel}/{nav.name}:\n" + _cut(nav.read_text(encoding="utf-8", errors="replace"))
            return ToolResult(listing, rel)
        return ToolResult(_cut(target.read_text(encoding="utf-8", errors="replace")), rel)

    def get_document(self, doc_id: str) -> ToolResult:
        """The document's title and text, by its full id or the short id a listing shows (or a
        longer unique prefix); ToolError naming the id when the store has none."""
        key = (doc_id or "").strip().strip("`'\"")
        full = self.ids.resolve(key)
        doc = self.documents.get(full) if full is not None else None
        if doc is None and key.strip("/") and (self.root / key.strip("/")).is_dir() and ".." not in key:
            raise ToolError(f"get_document {doc_id!r}: that is a folder; view it to see its document ids")
        if doc is None:
            raise ToolError(f"get_document {doc_id!r}: no such document id; ids are listed in leaf INDEX.md files")
        text = doc.text if len(doc.text) <= DOCUMENT_CHARS else doc.text[:DOCUMENT_CHARS] + " [... cut]"
        return ToolResult(f"[{self.ids.short(doc.id)}] {doc.title}\n{text}", doc.id, doc_id=doc.id)
