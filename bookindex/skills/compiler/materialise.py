"""The skill folder as files (paper §3.2, Fig. 3, appendix B), and writing it whole.

Roots become `skill-NN-label/SKILL.md`, clusters below `group-NN-label/INDEX.md`; each file has
YAML frontmatter (name, description, level, num_documents), an Overview and a Contents listing:
sub-groups with counts and one-line summaries, or documents as `doc_id — title — one line`,
followed by what to do next. Full texts live apart in `documents.json`, so a navigation file
stays small. Rendering is a pure function of the tree, so the same tree gives the same bytes.

A folder is written into a temporary folder beside the target and renamed into place, so a
failed build or update leaves the target as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from bookindex.core.atomic import write_text_atomic
from bookindex.core.errors import InputError
from bookindex.skills.compiler.plaintext import plain_line
from bookindex.skills.compiler.summarise import clip
from bookindex.skills.model import (
    Cluster,
    CorpusDocument,
    DocIds,
    SkillTree,
    TreeVectors,
    is_skill_dir,
    save_documents,
    save_tree,
    save_vectors,
)

SKILL_FILE = "SKILL.md"
TITLE_CHARS = 90  # of a title in a leaf listing (documents.json keeps it whole)
INDEX_FILE = "INDEX.md"
NEXT_DOCS = ("Use get_document with the doc_id to read a document's full text; cite documents you "
             "have read, not these summaries.")
NEXT_GROUPS = "Read the INDEX.md in a sub-group to see what it covers; descend into the most relevant one."


def render(tree: SkillTree, c: Cluster, ids: DocIds | None = None) -> str:
    """The SKILL.md (root) or INDEX.md text of a cluster; documents are named by their short ids
    (`ids`, made from the tree's documents when not given)."""
    ids = ids or DocIds(tree.documents)
    name = c.path.rsplit("/", 1)[-1]
    lines = ["---", f"name: {name}", f"description: {yaml_string(c.description)}", f"level: {c.level}",
             f"num_documents: {c.num_documents}", "---", "", f"# {c.label.replace('-', ' ')}", "", "## Overview", "",
             c.summary, "", "## Contents", ""]
    kids = [tree.clusters[k] for k in c.children]
    if not kids:
        lines += _documents(tree, c, ids, heading="###")
    elif all("#" in k.path for k in kids):  # compact: the leaves are listed here
        lines += [f"### Groups of documents ({len(kids)})", ""]
        for k in kids:
            anchor = k.path.rsplit("#", 1)[-1]
            lines += [f"#### {anchor} ({k.num_documents} docs)", "", k.description, ""]
            lines += _documents(tree, k, ids, heading=None)
    else:
        lines += [f"### Sub-groups (directories) ({len(kids)})", "", NEXT_GROUPS, ""]
        for k in kids:
            lines.append(f"- **{k.path.rsplit('/', 1)[-1]}/** ({k.num_documents} docs): {k.description}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _documents(tree: SkillTree, c: Cluster, ids: DocIds, heading: str | None) -> list[str]:
    out = [f"{heading} Documents ({len(c.documents)} items)", ""] if heading else []
    out += [_doc_line(tree, d, ids) for d in sorted(c.documents)]
    also = [d for d in sorted(c.also) if d in tree.documents]
    if also:  # soft membership: near this group, filed in another; listed by title only
        out += ["", f"Also related (filed in another group, {len(also)}):", ""]
        out += [f"- `{ids.short(d)}` — {clip(plain_line(tree.documents[d].title), TITLE_CHARS)}" for d in also]
    out += ["", NEXT_DOCS, ""]
    return out


def _doc_line(tree: SkillTree, d: str, ids: DocIds) -> str:
    e = tree.documents[d]
    title = plain_line(e.title)
    line = f"- `{ids.short(d)}` — {clip(title, TITLE_CHARS)}"
    if e.line and e.line.lower() != title.lower():
        line += f" — {e.line}"
    return line


def yaml_string(text: str) -> str:
    """A one-line YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(" ".join(text.split()), ensure_ascii=False)


def file_of(c: Cluster) -> str | None:
    """The navigation file of a cluster relative to the skill root (None: listed in its parent)."""
    if "#" in c.path:
        return None
    return f"{c.path}/{SKILL_FILE if c.parent is None else INDEX_FILE}"


def write_folder(folder: Path, tree: SkillTree, vectors: TreeVectors, docs: dict[str, CorpusDocument]) -> list[Path]:
    """Every file of a skill folder into `folder` (which exists and is empty); the navigation
    files written, in path order. Counts are taken from the membership first, so a file's
    frontmatter, its parent's listing and skills.json say the same."""
    tree.recount()
    ids = DocIds(tree.documents)
    written = []
    for c in sorted(tree.clusters.values(), key=lambda c: c.path):
        rel = file_of(c)
        if rel is None:
            continue
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, render(tree, c, ids))
        written.append(path)
    save_tree(folder, tree)
    save_vectors(folder, vectors)
    save_documents(folder, docs)
    return written


def check_output(out: Path) -> None:
    """A build may write to a new folder, an empty one or an existing skill tree (replaced)."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not is_skill_dir(out):
        raise InputError(f"{out}: exists and is not a skill tree (no skills.json); choose a new output folder")


def replace_folder(out: Path, tree: SkillTree, vectors: TreeVectors, docs: dict[str, CorpusDocument]) -> list[Path]:
    """Write the whole folder beside `out`, then swap it in (`swap_in`)."""
    return swap_in(out, lambda tmp: write_folder(tmp, tree, vectors, docs))


def swap_in(out: Path, write: Callable[[Path], list[Path]], extra: Callable[[Path], None] | None = None) -> list[Path]:
    """Fill a temporary folder beside `out` with `write` (and `extra`: the document skills of a
    library hierarchy), then swap it in: the old tree (if any) is renamed aside, the new one
    renamed into place, the old one deleted. On failure `out` is untouched."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.build-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        written = write(tmp)
        if extra is not None:
            extra(tmp)
        if out.exists():
            old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(out, old)
            try:
                os.rename(tmp, out)
            except BaseException:
                os.rename(old, out)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(tmp)
        raise
    return [out / p.relative_to(tmp) for p in written]
