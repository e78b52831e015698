"""`statements.json`: a document's tables as the computed answers read them, stored at index time.

A question that asks for arithmetic ("the FY2018 working capital ratio") reads every table of the
document into rows by fiscal year (`operators.statements`). On a 10-K that is 60-70 ms, the largest
part of the first question's open of the document; stored, it is read in a few. The file names
the tree.json it was read from (its sha256) and the code that read it
(`statements.reader_fingerprint`): a copy of another tree or of other code is ignored and the
tables read from the tree again, so a stale file costs time, never a wrong answer.
`bookindex refresh` writes it where it is missing or stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bookindex.core.atomic import write_json_atomic
from bookindex.core.fastjson import loads as loads_json
from bookindex.core.model import DocumentTree
from bookindex.operators import statements

STATEMENTS_FILE = "statements.json"


def write_statements(doc_dir: Path, tree: DocumentTree, tree_digest: str) -> None:
    """Store `tree`'s tables in `doc_dir`, marked with the digest of the tree.json they are of."""
    write_json_atomic(doc_dir / STATEMENTS_FILE, {"tree": tree_digest, **statements.to_records(statements.tables(tree))},
                      indent=None)


def _read(doc_dir: Path) -> dict[str, Any] | None:
    try:
        data = loads_json((doc_dir / STATEMENTS_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def statements_current(doc_dir: Path, tree_digest: str) -> bool:
    """Whether `doc_dir` stores the tables of this tree.json, read by this code."""
    data = _read(doc_dir)
    return data is not None and data.get("tree") == tree_digest and data.get("reader") == statements.reader_fingerprint()


def offer_stored_statements(doc_dir: Path, tree: DocumentTree, tree_digest: str) -> None:
    """Let `tree`'s first `statements.tables` call read the stored copy (when it is of this tree)."""
    def load() -> dict[str, Any] | None:
        data = _read(doc_dir)
        return data if data is not None and data.get("tree") == tree_digest else None

    statements.offer_stored(tree, load)
