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


def test_graphs_are_part_of_the_hash(tmp_path: Path, corpus: list[Path], settings):
    serial_library(tmp_path / "serial", corpus[:1], settings)
    entry = next(iter(catalog(tmp_path / "serial").values()))
    graph = json.loads((tmp_path / "serial" / "docs" / entry["dir"] / "graph.json").read_text())
    assert graph["entities"], "the no-LLM build makes a graph, so the hash compares one"


def test_local_worker_killed_mid_document_is_retried(tmp_path: Path, corpus: list[Path], settings,
                                                     monkeypatch: pytest.MonkeyPatch):
    markers = tmp_path / "markers"
    monkeypatch.setenv(FAULT_ENV, f"plain.pdf:{markers}")
    serial = tmp_path / "serial"
    monkeypatch.delenv(FAULT_ENV)
    serial_library(serial, corpus, settings)
    monkeypatch.setenv(FAULT_ENV, f"plain.pdf:{markers}")
    lib = Library.open(tmp_path / "par", settings)
    items = index_batch(lib, corpus, LocalRunner(2, fake_providers))
    assert sorted(i.status for i in items) == ["added"] * len(corpus)
    attempts = next(markers.iterdir()).read_text().splitlines()
    assert attempts[0].startswith("killed") and attempts[1].startswith("retry")
    assert len(catalog(tmp_path / "par")) == len(corpus)  # no duplicate, none lost
    assert library_hash(tmp_path / "par") == library_hash(serial)




@pytest.fixture(scope="module")
def ray_cluster():
    ray_mod = pytest.importorskip("ray")
    yield ray_mod


def test_ray_local_cluster_equals_serial_and_retries_a_killed_worker(
        tmp_path: Path, corpus: list[Path], settings, monkeypatch: pytest.MonkeyPatch, ray_cluster):
    serial = tmp_path / "serial"
    serial_library(serial, corpus, settings)
    markers = tmp_path / "markers"
    monkeypatch.setenv(FAULT_ENV, f"handbook.md:{markers}")  # the first attempt's worker dies
    lib = Library.open(tmp_path / "ray", settings)
    events: list[tuple[str, dict]] = []
    runner = RayRunner("local", num_cpus=2, max_in_flight=3, max_retries=2, factory=fake_providers)
    items = index_batch(lib, corpus, runner, on_progress=lambda e, i: events.append((e, i)))
    assert sorted(i.status for i in items) == ["added"] * len(corpus), [i.error for i in items]
    assert len(catalog(tmp_path / "ray")) == len(corpus)
    assert library_hash(tmp_path / "ray") == library_hash(serial)
    attempts = next(markers.iterdir()).read_text().splitlines()
    assert attempts[0].startswith("killed") and attempts[1].startswith("retry")
    cluster = [i for e, i in events if e == "cluster"]
    assert cluster and cluster[0]["cpus"] == 2 and max(i["in_flight"] for i in cluster) <= 3
    assert not ray_cluster.is_initialized()  # the runner shut down the instance it started
