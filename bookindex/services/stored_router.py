"""The library router kept on disk, one folder per state of the library, under `<library>/.router/`.

The router is a view over every document (`routing.router.router_for`); building it at a server's
start read every tree and embedded every document. `StoredRouter` is the `StoredView` the document
cache asks first: the router of this catalog state, embedder and analyser, read from its folder
(`routing.stored`), else built from the documents and stored there for the next process. A change
to the catalog (a document added, replaced, removed, refreshed) names another folder; the folders
of earlier states are removed once a newer one is stored.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from bookindex.core.protocols import Embedder
from bookindex.providers.lexical import passages_fingerprint
from bookindex.routing.router import EMBED_CHARS, WEIGHTS, LibraryRouter
from bookindex.routing.stored import ROUTER_FORMAT, load_router, save_router

ROUTER_DIR = ".router"  # in the library folder (a dot name: the catalog leaves it alone)

Key = tuple[tuple[str, str], ...]


class StoredRouter:
    """Load or store the router of a library state in `root/.router/<fingerprint>`."""

    def __init__(self, root: Path, embedder: Callable[[], Embedder]) -> None:
        self.root = root / ROUTER_DIR
        self._embedder = embedder

    def fingerprint(self, key: Key) -> str:
        """What the router is built from: the documents' generations, the embedder, the
        analyser and BM25 parameters (`passages_fingerprint` of nothing), the signal weights."""
        emb = self._embedder()
        basis = [ROUTER_FORMAT, [list(k) for k in key], emb.name, emb.dim, EMBED_CHARS, WEIGHTS,
                 passages_fingerprint([], [])]
        return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()

    def folder(self, key: Key) -> Path:
        return self.root / self.fingerprint(key)[:32]

    def load(self, key: Key) -> LibraryRouter | None:
        return load_router(self.folder(key), self.fingerprint(key))

    def save(self, key: Key, view: LibraryRouter) -> None:
        folder = self.folder(key)
        if save_router(view, folder, self.fingerprint(key)):
            for old in self.root.iterdir():  # earlier library states: never read again
                if old.name != folder.name and not old.name.startswith("."):
                    shutil.rmtree(old, ignore_errors=True)
