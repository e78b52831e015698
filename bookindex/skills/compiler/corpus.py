"""Corpus loading: files and folders of .md/.txt/.json/.jsonl, or a bookindex library, as
`CorpusDocument`s with stable ids.

Ids come from the record (`id`, or BEIR's `_id`) when there is one, else from a hash of the
content (paper §3.2: content-hash ids are deterministic and independent of file names). Every
problem is an InputError naming the file, and the line for JSONL, so a user can fix the input.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bookindex.core.errors import InputError
from bookindex.core.limits import loads_bounded
from bookindex.indexing.library import DocumentLibrary
from bookindex.routing.document_text import tree_text
from bookindex.skills.compiler.plaintext import plain_line
from bookindex.skills.model import CorpusDocument
from bookindex.storage.catalog import CATALOG

SUFFIXES = (".md", ".markdown", ".txt", ".text", ".json", ".jsonl")
TITLE_CHARS = 120


def content_id(text: str) -> str:
    """The paper's content-hash id: 16 hex digits of the text's SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def is_library(folder: Path) -> bool:
    return (folder / CATALOG).is_file()


def load_corpus(sources: Iterable[str | Path]) -> list[CorpusDocument]:
    """Every document of `sources` (files, folders searched recursively, library folders), in
    the order found; duplicate ids and an empty result are errors."""
    docs: list[CorpusDocument] = []
    given = [Path(s).expanduser() for s in sources]
    if not given:
        raise InputError("no source given: name files, folders or a bookindex library")
    for src in given:
        if not src.exists():
            raise InputError(f"{src}: no such file or folder")
        if src.is_dir() and is_library(src):
            docs.extend(load_library(src))
        elif src.is_dir():
            files = sorted(f for f in src.rglob("*") if f.is_file() and f.suffix.lower() in SUFFIXES
                           and not any(p.startswith(".") for p in f.relative_to(src).parts))
            if not files:
                raise InputError(f"{src}: no documents here (supported: {', '.join(SUFFIXES)})")
            for f in files:
                docs.extend(load_file(f))
        else:
            docs.extend(load_file(src))
    if not docs:
        raise InputError(f"no documents in {', '.join(map(str, given))}")
    check_unique(docs)
    return docs


def check_unique(docs: Iterable[CorpusDocument]) -> None:
    """InputError naming both places when two documents share an id."""
    seen: dict[str, CorpusDocument] = {}
    for d in docs:
        first = seen.get(d.id)
        if first is not None:
            raise InputError(f"{d.source}: duplicate document id {d.id!r} (also in {first.source})")
        seen[d.id] = d


def check_not_in_tree(docs: Iterable[CorpusDocument], tree_ids: Iterable[str], folder: Path) -> None:
    """InputError naming the skill tree when a document to add is already in it.

    The stored document's own source would point at the file being added again (the same
    corpus.jsonl line), which reads as if the file clashed with itself: say where it is instead."""
    present = set(tree_ids)
    for d in docs:
        if d.id in present:
            raise InputError(f"{d.source}: document id {d.id!r} is already in the skill tree {folder} "
                             f"(`bookindex skills remove {folder} {d.id}` first to replace it)")


def load_file(path: Path) -> list[CorpusDocument]:
    """The documents of one file, by suffix."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(f"{path}: unsupported file type {suffix or '(none)'} (supported: {', '.join(SUFFIXES)})")
    text = _read_text(path)
    if suffix == ".jsonl":
        return _jsonl(path, text)
    if suffix == ".json":
        return _json(path, text)
    if not text.strip():
        raise InputError(f"{path}: empty document (no text)")
    return [CorpusDocument(id=content_id(text), title=_title_of(text, path, markdown=suffix in (".md", ".markdown")),
                           text=text.strip(), source=str(path))]


def load_library(folder: Path) -> list[CorpusDocument]:
    """Each indexed document of a bookindex library, its title and text taken from its tree."""
    lib = DocumentLibrary.open(folder)
    out = []
    for stored in lib.documents:
        text = tree_text(stored.tree)
        if not text.strip():
            raise InputError(f"{stored.dir}: indexed document {stored.name!r} has no text")
        title = stored.tree.root.title.strip() or stored.name
        out.append(CorpusDocument(id=stored.doc_id, title=title[:TITLE_CHARS], text=text, source=str(stored.dir)))
    if not out:
        raise InputError(f"{folder}: the library holds no documents")
    return out


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (undecodable byte at offset {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def _title_of(text: str, path: Path, *, markdown: bool) -> str:
    """A Markdown file's first heading, else its first non-empty line, else the file name; as
    plain text (a listing shows it, and `**x**` or a link there is markup, not title)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if markdown:
        for ln in lines:
            if ln.startswith("#"):
                return plain_line(ln)[:TITLE_CHARS] or path.stem
    return (plain_line(lines[0]) if lines else path.stem)[:TITLE_CHARS] or path.stem


def jsonl_records(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line; InputError naming the file and line.
    Depth-bounded (a hostile line of 100k '[' is an error, not a RecursionError)."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        record = loads_bounded(line, f"{path}:{no}")
        if not isinstance(record, dict):
            raise InputError(f"{path}:{no}: a record must be a JSON object with 'text' (got {type(record).__name__})")
        out.append((no, record))
    return out


def _jsonl(path: Path, text: str) -> list[CorpusDocument]:
    out = [_record(record, f"{path}:{no}") for no, record in jsonl_records(path, text)]
    if not out:
        raise InputError(f"{path}: no records")
    return out


def _json(path: Path, text: str) -> list[CorpusDocument]:
    data = loads_bounded(text, str(path))
    records = data if isinstance(data, list) else [data]
    if not records:
        raise InputError(f"{path}: no records")
    return [_record(r, f"{path}[{i}]" if isinstance(data, list) else str(path)) for i, r in enumerate(records)]


def _record(record: Any, where: str) -> CorpusDocument:
    """One JSON record: `text` required; `id` (or `_id`) and `title` optional."""
    if not isinstance(record, dict):
        raise InputError(f"{where}: a record must be a JSON object with 'text' (got {type(record).__name__})")
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: record has no text (a non-empty 'text' field is required)")
    raw_id = record.get("id", record.get("_id"))
    if raw_id is not None and not isinstance(raw_id, (str, int)):
        raise InputError(f"{where}: 'id' must be a string or an integer")
    doc_id = str(raw_id).strip() if raw_id is not None else content_id(text)
    if not doc_id:
        raise InputError(f"{where}: empty 'id'")
    title = record.get("title")
    title = title if isinstance(title, str) and plain_line(title) else _first_words(plain_line(text))
    return CorpusDocument(id=doc_id, title=plain_line(title)[:TITLE_CHARS], text=text.strip(), source=where)


def _first_words(text: str, n: int = 12) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" ..." if len(words) > n else "")
