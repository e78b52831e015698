"""Library-wide views kept on disk, one folder per state of the library, under `<library>/.router/`.

The router (`routing.router.router_for`) and the pooled index of flat search
(`routing.pooled.PooledIndex`) are views over every document: building one read every tree (and,
for the router, embedded every document) at a server's start or its first search. `StoredView` is
what the document cache asks first: the view of this catalog state, embedder and analyser, read
from its folder (`routing.stored`: `router-<fingerprint>`, `pooled-<fingerprint>`), else built from
the documents and stored there for the next process. A change to the catalog (a document added,
replaced, removed, refreshed) names another folder; the folders of a view's earlier states are
removed once a newer one is stored.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from bookindex.core.protocols import Embedder
from bookindex.providers.lexical import passages_fingerprint
from bookindex.routing.pooled import PooledIndex
from bookindex.routing.router import EMBED_CHARS, WEIGHTS, LibraryRouter
from bookindex.routing.stored import ROUTER_FORMAT, load_pooled, load_router, save_pooled, save_router

ROUTER_DIR = ".router"  # in the library folder (a dot name: the catalog leaves it alone)

Key = tuple[tuple[str, str], ...]
V = TypeVar("V")


class StoredView(Generic[V]):
    """Load or store one kind of library-wide view in `root/.router/<kind>-<fingerprint>`."""

    def __init__(self, root: Path, embedder: Callable[[], Embedder], kind: str,
                 load: Callable[[Path, str], V | None], save: Callable[[V, Path, str], bool]) -> None:
        self.root = root / ROUTER_DIR
        self._embedder = embedder
        self.kind = kind
        self._load, self._save = load, save

    def fingerprint(self, key: Key) -> str:
        """What the view is built from: the documents' generations, the embedder, the analyser
        and BM25 parameters (`passages_fingerprint` of nothing), the router's signal weights."""
        emb = self._embedder()
        basis = [ROUTER_FORMAT, self.kind, [list(k) for k in key], emb.name, emb.dim, EMBED_CHARS, WEIGHTS,
                 passages_fingerprint([], [])]
        return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()

    def folder(self, key: Key) -> Path:
        return self.root / f"{self.kind}-{self.fingerprint(key)[:32]}"

    def load(self, key: Key) -> V | None:
        return self._load(self.folder(key), self.fingerprint(key))

    def save(self, key: Key, view: V) -> None:
        folder = self.folder(key)
        if self._save(view, folder, self.fingerprint(key)):
            for old in self.root.iterdir():  # this view of earlier library states: never read again
                if old.name != folder.name and old.name.startswith(f"{self.kind}-"):
                    shutil.rmtree(old, ignore_errors=True)


def stored_router(root: Path, embedder: Callable[[], Embedder]) -> StoredView[LibraryRouter]:
    """The library router, stored (`routing.stored.save_router`)."""
    return StoredView(root, embedder, "router", load_router, save_router)


def stored_pooled(root: Path, embedder: Callable[[], Embedder]) -> StoredView[PooledIndex]:
    """The pooled library-wide index of flat search, stored (`routing.stored.save_pooled`)."""
    return StoredView(root, embedder, "pooled", load_pooled, save_pooled)
