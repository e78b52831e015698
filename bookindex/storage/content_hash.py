"""Content hashing: of input files (a document's identity), and of what a build produces.

Why the second: a parallel or distributed build must produce the same library as a serial one.
Comparing folders byte for byte fails on what legitimately differs (manifest times, build.json
timings and ledgers, generation stamps), so a library's content hash covers only what a query
reads. Which files those are is the document folder format's business: the indexing layer gives
`library_hashes` the per-document hash (bookindex.indexing.document_folder.document_hash); the
pieces it hashes with are here: canonical JSON and (ids, float32 matrix) vectors.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.storage.catalog import CATALOG, DOCS


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def path_sha256(path: Path) -> str:
    """sha256 of a file; for a MinerU output folder, of its JSON files in name order."""
    if path.is_file():
        return file_sha256(path)
    h = hashlib.sha256()
    for p in sorted(path.glob("*.json")):
        h.update(p.name.encode())
        h.update(bytes.fromhex(file_sha256(p)))
    return h.hexdigest()


def canonical_json(path: Path) -> bytes:
    """A JSON file as canonical bytes (sorted keys, no spaces); b"absent" when there is none."""
    if not path.exists():
        return b"absent"
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def vectors_digest(ids: list[str], mat: np.ndarray) -> bytes:
    """sha256 digest of row ids and a float32 matrix (its shape and bytes)."""
    h = hashlib.sha256()
    h.update(json.dumps(list(ids)).encode("utf-8"))
    arr = np.ascontiguousarray(mat, dtype=np.float32)
    h.update(str(arr.shape).encode())
    h.update(arr.tobytes())
    return h.digest()


def hex_digests(parts: dict[str, bytes]) -> dict[str, str]:
    """sha256 (hex) of each named part."""
    return {k: hashlib.sha256(v).hexdigest() for k, v in parts.items()}


def library_hashes(root: Path, document_hash: Callable[[Path], dict[str, str]]) -> dict[str, dict[str, str]]:
    """{doc_id: document_hash(generation folder)} for every document in a library folder's catalog."""
    catalog = json.loads((Path(root) / CATALOG).read_text(encoding="utf-8"))
    return {doc_id: document_hash(Path(root) / DOCS / entry["dir"])
            for doc_id, entry in sorted(catalog["documents"].items())}


def combined_hash(hashes: dict[str, dict[str, str]]) -> str:
    """One sha256 over `library_hashes` (equal for a serial and a parallel build)."""
    h = hashlib.sha256()
    for doc_id, parts in hashes.items():
        h.update(doc_id.encode())
        for key in sorted(parts):
            h.update(f"{key}={parts[key]};".encode())
    return h.hexdigest()
