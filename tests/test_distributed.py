"""Per-document builds off the writer (issue 17): local worker processes and Ray tasks build,
one writer commits; the result equals a serial build (content hashes), a killed worker's
document is retried with no duplicate and no loss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bookindex.core.config import load_settings
from bookindex.storage.batch import index_batch
from bookindex.storage.content_hash import library_hash, library_hashes
from bookindex.storage.library import Library
from bookindex.storage.runners import LocalRunner, RayRunner
from bookindex.storage.staging import FAULT_ENV
from dist_helpers import fake_providers, small_corpus


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    return load_settings(None, {"llm.provider": "none"})


@pytest.fixture
def corpus(tmp_path: Path) -> list[Path]:
    return small_corpus(tmp_path / "corpus")


def serial_library(root: Path, files: list[Path], settings) -> Library:
    p = fake_providers(settings)
    lib = Library.open(root, settings, embedder=p.embedder, llm=p.llm, reranker=p.reranker)
    for f in files:
        lib.add(f)
    return lib


def catalog(root: Path) -> dict:
    return json.loads((root / "library.json").read_text())["documents"]


def test_workers_equal_serial(tmp_path: Path, corpus: list[Path], settings):
    serial_library(tmp_path / "serial", corpus, settings)
    lib = Library.open(tmp_path / "par", settings)
    items = index_batch(lib, corpus, LocalRunner(2, fake_providers))
    assert sorted(i.status for i in items) == ["added"] * len(corpus)
    assert library_hashes(tmp_path / "par") == library_hashes(tmp_path / "serial")
    assert library_hash(tmp_path / "par") == library_hash(tmp_path / "serial")
    assert not (tmp_path / "par" / ".tmp").exists()
    # a second run finds every document current: nothing is built again
    again = index_batch(lib, corpus, LocalRunner(2, fake_providers))
    assert {i.status for i in again} == {"unchanged"}
