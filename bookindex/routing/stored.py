"""A library router stored in a folder, so a process starts routing without reading a document.

Building `LibraryRouter` reads every document's tree (a JSON parse of each), tokenises every
passage of the library and embeds every document: 8-13 s at a server's start over 44 documents,
and the parse left ~600 MB of freed but unreturned memory in the process (glibc keeps small
objects' pages), for a router that itself holds ~50 MB. Stored once, it is read back in tens of
milliseconds, and its node vectors are memory-mapped: the page cache holds them, shared between
the workers of one server.

Layout of a router folder (`save_router` writes it whole into a temporary folder, renamed into
place: a reader sees a complete router or none):
- `router.json`      format, fingerprint, document ids, names, identities, weights, node bounds;
- `doc_vectors.npy`  one row per document (L2-normalised);
- `node_vectors.npy` every document's L2-normalised node vectors, one matrix; `node_bounds` in
                     router.json says which rows are whose (a document without vectors has none);
- `lexical/`         the whole-document BM25 index (`LexicalIndex.save`);
- `passages/`        the library's passage BM25 index, with `passage_bounds` in router.json.
The fingerprint names what the router was built from (the catalog's documents and generations,
the embedder, the analyser): a router of another library state is not read.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.atomic import write_json_atomic
from bookindex.parsing.identity import DocumentIdentity
from bookindex.providers.lexical import LexicalIndex
from bookindex.routing.pooled import PooledIndex
from bookindex.routing.router import LibraryRouter, PassageScores

ROUTER_FORMAT = 1  # router.json's "format"; another value is not read
META = "router.json"
POOLED_META = "pooled.json"
_log = logging.getLogger(__name__)


def save_router(router: LibraryRouter, folder: Path, fingerprint: str) -> bool:
    """Store `router` as `folder` (replacing none: a folder already there is another process's
    identical router). Whether it was written; a library folder this process may not write
    (read-only media) leaves the router in memory only."""
    return _save(folder, lambda tmp: _write_parts(router, tmp, fingerprint))


def save_pooled(pooled: PooledIndex, folder: Path, fingerprint: str) -> bool:
    """Store the pooled library-wide index (`PooledIndex`) as `folder`, as `save_router` does:
    `pooled.json` (format, fingerprint, the (document, node) of each row), `vectors.npy`, and
    its BM25 index in `lexical/`."""
    def write(tmp: Path) -> None:
        np.save(tmp / "vectors.npy", pooled.vectors)
        pooled.lexical.save(tmp / "lexical", fingerprint)
        write_json_atomic(tmp / POOLED_META, {"format": ROUTER_FORMAT, "fingerprint": fingerprint,
                                              "keys": [list(k) for k in pooled.keys]}, indent=None)
    return _save(folder, write)


def load_pooled(folder: Path, fingerprint: str) -> PooledIndex | None:
    """The pooled index `save_pooled` stored under `fingerprint`; None when there is none, it
    is of another library state, or it cannot be read."""
    meta = _meta(folder / POOLED_META, fingerprint, "stored pooled index")
    if meta is None:
        return None
    try:
        keys = [(str(d), str(n)) for d, n in meta["keys"]]
        lexical = LexicalIndex.load(folder / "lexical", [f"{d}/{n}" for d, n in keys], fingerprint)
        if lexical is None:
            return None
        return PooledIndex.from_parts(keys, lexical, np.load(folder / "vectors.npy", mmap_mode="r"))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _log.warning("%s: stored pooled index unreadable (%s); building it", folder, exc)
        return None


def _meta(path: Path, fingerprint: str, what: str) -> dict[str, Any] | None:
    """A stored view's JSON description when it is of this format and `fingerprint`; None when
    it is absent (not stored yet), of another library state, or unreadable (logged)."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        _log.warning("%s: %s unreadable (%s); building it", path.parent, what, exc)
        return None
    if not isinstance(meta, dict) or meta.get("format") != ROUTER_FORMAT or meta.get("fingerprint") != fingerprint:
        return None
    return meta


def _save(folder: Path, write: Callable[[Path], None]) -> bool:
    tmp = folder.parent / f".tmp-{uuid.uuid4().hex}"
    try:
        tmp.mkdir(parents=True)
        write(tmp)
        try:
            os.rename(tmp, folder)
        except OSError:
            if not folder.is_dir():  # else another process stored the same view first
                raise
    except OSError as exc:
        _log.warning("%s: a library view could not be stored (%s); it is rebuilt at the next start",
                     folder, exc)
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


def _write_parts(router: LibraryRouter, tmp: Path, fingerprint: str) -> None:
    nodes = list(router.node_vectors)
    bounds = [0]
    for m in nodes:
        bounds.append(bounds[-1] + (len(m) if m is not None else 0))
    dim = router.doc_vectors.shape[1] if router.doc_vectors.ndim == 2 else 0
    stacked = [m for m in nodes if m is not None and len(m)]
    matrix = np.concatenate(stacked).astype(np.float32) if stacked else np.zeros((0, dim), np.float32)
    np.save(tmp / "node_vectors.npy", matrix)
    np.save(tmp / "doc_vectors.npy", np.asarray(router.doc_vectors, dtype=np.float32))
    router.lexical.save(tmp / "lexical", fingerprint)
    passages = router.passages
    if passages.index is not None:
        passages.index.save(tmp / "passages", fingerprint)
    meta = {"format": ROUTER_FORMAT, "fingerprint": fingerprint, "doc_ids": router.doc_ids,
            "names": router.names.names, "identities": [i.to_dict() for i in router.identity.identities],
            "weights": router.weights, "node_bounds": bounds,
            "node_present": [m is not None for m in nodes],
            "passage_bounds": [int(b) for b in passages.bounds],
            "passages": passages.index is not None}
    write_json_atomic(tmp / META, meta, indent=None)


def load_router(folder: Path, fingerprint: str) -> LibraryRouter | None:
    """The router `save_router` stored in `folder` under `fingerprint`; None when there is none,
    it is of another library state, or it cannot be read (the caller then builds it)."""
    meta = _meta(folder / META, fingerprint, "stored library router")
    if meta is None:
        return None
    try:
        return _router_of(folder, meta, fingerprint)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _log.warning("%s: stored library router unreadable (%s); building it", folder, exc)
        return None


def _router_of(folder: Path, meta: dict[str, Any], fingerprint: str) -> LibraryRouter | None:
    ids = [str(i) for i in meta["doc_ids"]]
    lexical = LexicalIndex.load(folder / "lexical", ids, fingerprint)
    bounds = np.asarray(meta["passage_bounds"], dtype=np.int64)
    passage_ids = [str(i) for i in range(int(bounds[-1]))]
    passages = LexicalIndex.load(folder / "passages", passage_ids, fingerprint) if meta["passages"] else None
    if lexical is None or (meta["passages"] and passages is None):
        return None
    # mapped, not read: the page cache holds the library's node vectors, shared by every worker
    matrix = np.load(folder / "node_vectors.npy", mmap_mode="r")
    nb = meta["node_bounds"]
    nodes = [matrix[a:b] if present else None for a, b, present in zip(nb[:-1], nb[1:], meta["node_present"])]
    return LibraryRouter.from_parts(
        ids, lexical=lexical, passages=PassageScores.from_index(bounds, passages),
        doc_vectors=np.load(folder / "doc_vectors.npy"), node_vectors=nodes, names=list(meta["names"]),
        identities=[DocumentIdentity.from_dict(i) for i in meta["identities"]], weights=dict(meta["weights"]))
