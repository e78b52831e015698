"""The document library passes the LibraryStore contract."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fakes import FakeEmbedder

from bookindex.core.config import load_settings
from bookindex.core.protocols import LibraryStore
from bookindex.indexing.library import DocumentLibrary
from contracts.library_store import LibraryStoreContract


class TestLibrary(LibraryStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path, fake_embedder: FakeEmbedder) -> LibraryStore:
        settings = load_settings(env={}, overrides={"cache.enabled": False, "graph.enabled": False})
        return DocumentLibrary.open(tmp_path / "lib", settings, embedder=fake_embedder)

    @pytest.fixture
    def source(self, md_file: Path) -> Path:
        return md_file

    @pytest.fixture
    def reopen(self) -> Callable[[Path], LibraryStore]:
        return DocumentLibrary.open
