"""Choose a parser for a path and turn its output into a section tree.

`parse_file` picks by `settings.parsing.parser` or, for "auto", by content: the `%PDF-`
signature (never the extension alone), MinerU JSON by shape, Markdown and text by extension.
`to_tree` runs section filtering (outline / rules / LLM) unless the parser already knows the
final heading levels, groups reference entries (a function's signature, parameters and
description) into sub-sections named by the entry (parsing.entries), makes the printed contents,
lists of figures or tables and the index one section each (parsing.matter), reads each heading's
number (parsing.heading_numbers), then assembles the tree.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.core.model import MATTER_KEY, DocumentTree, Node, build_tree, tree_blocks
from bookindex.core.protocols import LLM
from bookindex.parsing.base import ParsedDocument
from bookindex.parsing.entries import mark_entries
from bookindex.parsing.heading_numbers import number_headings
from bookindex.parsing.markdown import parse_markdown, parse_text
from bookindex.parsing.matter import mark_matter
from bookindex.parsing.mineru import detect_format, find_outputs, load_json, parse_mineru, run_mineru
from bookindex.parsing.pdf import parse_pdf
from bookindex.parsing.sections import assign_levels
from bookindex.parsing.textdecode import SAMPLE, guess_encoding

MARKDOWN_EXT = {".md", ".markdown", ".mdown", ".mkd", ".mdx"}
TEXT_EXT = {".txt", ".text", ".rst", ".asc", ".adoc"}
PDF_EXT = {".pdf"}
JSON_EXT = {".json"}
SUPPORTED = "PDF, MinerU JSON (content_list / middle.json, or their folder), Markdown, plain text"


def check_path(path: Path) -> None:
    """InputError naming what is wrong with a path that cannot be opened: a symlink loop, a
    broken link, a missing file (`Path.exists` says False for all three)."""
    if path.exists():
        return
    if os.path.islink(path):
        try:
            path.resolve(strict=True)
        except RuntimeError:
            raise InputError(f"{path}: symbolic link loop") from None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise InputError(f"{path}: symbolic link loop") from None
            raise InputError(f"{path}: broken symbolic link (its target {os.readlink(path)!r} does not exist)") from None
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InputError(f"{path}: symbolic link loop") from None
        if e.errno in (errno.EACCES, errno.EPERM):
            raise InputError(f"{path}: permission denied") from None
        if e.errno == errno.ENAMETOOLONG:
            raise InputError(f"{path}: file name too long") from None
    raise InputError(f"{path}: no such file or folder")


def sniff(path: Path) -> str:
    """The kind of input at `path`: pdf, mineru, markdown or text. Raises InputError otherwise."""
    check_path(path)
    if path.is_dir():
        if find_outputs(path):
            return "mineru"
        raise InputError(f"{path}: is a folder without MinerU output; pass files, or let "
                         "`bookindex index` expand the folder")
    if not path.is_file():
        raise InputError(f"{path}: not a regular file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(SAMPLE)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from None
    ext = path.suffix.lower()
    text_ext = ext in MARKDOWN_EXT or ext in TEXT_EXT
    if head.lstrip(b"\x00\t\r\n ").startswith(b"%PDF-") or (b"%PDF-" in head[:1024] and not text_ext):
        return "pdf"  # a text file that merely mentions %PDF- is text
    if ext in PDF_EXT:
        if not head:
            raise InputError(f"{path}: empty file, not a PDF")
        shown = head[:16].decode("latin-1").encode("unicode_escape").decode()
        raise InputError(f"{path}: not a PDF (no %PDF- header; starts with {shown!r})")
    if ext in JSON_EXT:
        if detect_format(load_json(path)) is None:
            raise InputError(f"{path}: JSON, but not MinerU output (content_list.json, "
                             "content_list_v2.json or middle.json)")
        return "mineru"
    if ext in MARKDOWN_EXT:
        guess_encoding(head, path, "Markdown")
        return "markdown"
    if ext in TEXT_EXT or ext == "":
        guess_encoding(head, path, "text")
        return "text"
    raise InputError(f"{path}: unsupported file type {ext!r}; supported: {SUPPORTED}")


def parse_file(path: str | Path, settings: Settings, llm: LLM | None = None,
               image_dir: str | Path | None = None, progress: bool = False,
               work_dir: str | Path | None = None) -> ParsedDocument:
    """Parse one document with the configured parser (or the one its content calls for).

    `llm` is unused here (section filtering takes it in `to_tree`); kept so callers pass the
    same providers to both steps."""
    path = Path(path)
    kind = sniff(path)
    want: str = settings.parsing.parser
    ps = settings.parsing
    if want == "auto":
        want = {"pdf": "pymupdf", "mineru": "mineru", "markdown": "markdown", "text": "text"}[kind]
    if want == "pymupdf":
        if kind != "pdf":
            raise InputError(f"{path}: --parser pymupdf needs a PDF, this is {kind}")
        return parse_pdf(path, tables=ps.tables, images=ps.images, ocr=ps.ocr,
                         image_dir=image_dir, progress=progress)
    if want == "mineru":
        if kind == "pdf":
            if work_dir is not None:
                return run_mineru(path, work_dir=work_dir, image_dir=image_dir, progress=progress)
            tmp = tempfile.mkdtemp(prefix="bookindex-mineru-")
            try:
                return run_mineru(path, work_dir=tmp, image_dir=image_dir, progress=progress)
            finally:
                if image_dir is not None:  # images were copied out; otherwise blocks point into tmp
                    shutil.rmtree(tmp, ignore_errors=True)
        if kind != "mineru":
            raise InputError(f"{path}: --parser mineru reads MinerU JSON or runs MinerU on a PDF; this is {kind}")
        return parse_mineru(path, image_dir=image_dir, progress=progress)
    if want in ("markdown", "text"):
        if kind in ("pdf", "mineru"):
            raise InputError(f"{path}: --parser {want} needs a text file, this is {kind}")
        fn = parse_markdown if want == "markdown" else parse_text
        return fn(path, image_dir=image_dir, progress=progress)
    raise InputError(f"{path}: unknown parser {want!r}")


def to_tree(parsed: ParsedDocument, doc_id: str, name: str, settings: Settings,
            llm: LLM | None = None) -> DocumentTree:
    """Section filtering (unless levels are final), reference entries, then the tree (BookRAG §4.2.2).

    Entries are grouped after every heading source has spoken (outline, rules, LLM), so the
    LLM pass cannot undo them and they never compete with real headings."""
    if parsed.levels_final:
        blocks = parsed.blocks
    else:
        use_llm = llm if (settings.parsing.llm_sections and llm is not None and llm.available) else None
        blocks = assign_levels(parsed, use_outline=settings.parsing.use_outline, llm=use_llm)
    warnings = list(parsed.warnings)
    try:
        blocks = mark_entries(blocks)
    except Exception as exc:  # a rule's bug must not lose the document: keep the blocks as they are
        warnings.append(f"reference entries not grouped ({type(exc).__name__}: {exc})")
    try:
        blocks = number_headings(mark_matter(blocks))
    except Exception as exc:  # as above: the document keeps its loose contents lines
        warnings.append(f"contents, lists and index not grouped ({type(exc).__name__}: {exc})")
    meta = {"pages": parsed.page_count, "parser": parsed.parser, "warnings": warnings,
            "page_sizes": [list(s) for s in parsed.page_sizes]}
    for k in ("mineru_format", "format", "page_labels"):
        if k in parsed.meta:
            meta[k] = parsed.meta[k]
    return build_tree(doc_id, name, blocks, meta)


def regroup_tree(tree: DocumentTree) -> tuple[DocumentTree, int]:
    """A stored tree brought up to today's grouping without parsing its file (`bookindex
    refresh`): its contents, lists of figures or tables and index made sections of their kind
    (parsing.matter) and its headings' numbers read into `Node.number`, from the blocks it was
    built from (`tree_blocks`). Returns the tree and how many nodes changed parent, role,
    number or mark as a line of such a part (0: the stored tree, unchanged).

    Only what keeps every node id and every node's searched text: a contents part without a head
    stays loose (a made head would shift the ids the stored vectors and graph are keyed by), and
    no number is taken from the contents (it would change a title). What the parser itself now
    does differently (a heading's number kept on its line, parsing.pdf_lines; bookmarks that no
    longer claim lines of the contents, parsing.sections) needs `bookindex index` again."""
    blocks = number_headings(mark_matter(tree_blocks(tree), insert=False), from_contents=False)
    new = build_tree(tree.doc_id, tree.name, blocks, tree.meta)
    if set(new.nodes) != set(tree.nodes):  # ids with gaps or of another shape: leave the tree alone
        return tree, 0
    changed = sum(1 for nid, n in new.nodes.items() if _grouping(n) != _grouping(tree.nodes[nid]))
    return (new, changed) if changed else (tree, 0)


def _grouping(n: Node) -> tuple[Any, ...]:
    """What `regroup_tree` may change of a node."""
    return n.parent, n.role, n.number, n.meta.get(MATTER_KEY)


__all__ = ["parse_file", "to_tree", "regroup_tree", "sniff", "check_path", "SUPPORTED"]
