"""Per-document builds off the writer: local worker processes and Ray tasks build,
one writer commits; the result equals a serial build (content hashes), a killed worker's
document is retried with no duplicate and no loss."""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
from pathlib import Path

import pytest
from dist_helpers import fake_providers, small_corpus

from bookindex.core.config import load_settings
from bookindex.core.errors import ConfigError
from bookindex.engine import Engine
from bookindex.indexing.build_job import FAULT_ENV
from bookindex.indexing.document_folder import library_hash, library_hashes
from bookindex.indexing.library import DocumentLibrary
from bookindex.indexing.parallel.batch import index_batch
from bookindex.indexing.parallel.executors import LocalRunner, RayRunner, import_ray, make_runner
from bookindex.indexing.parallel.worker import build_staged, unpack
from bookindex.providers.llm.cache import DiskCache, RecordingCache, merge_rows


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    return load_settings(None, {"llm.provider": "none"})


@pytest.fixture
def corpus(tmp_path: Path) -> list[Path]:
    return small_corpus(tmp_path / "corpus")


def serial_library(root: Path, files: list[Path], settings) -> DocumentLibrary:
    p = fake_providers(settings)
    lib = DocumentLibrary.open(root, settings, embedder=p.embedder, llm=p.llm, reranker=p.reranker)
    for f in files:
        lib.add(f)
    return lib


def catalog(root: Path) -> dict:
    return json.loads((root / "library.json").read_text())["documents"]


def test_workers_equal_serial(tmp_path: Path, corpus: list[Path], settings):
    serial_library(tmp_path / "serial", corpus, settings)
    lib = DocumentLibrary.open(tmp_path / "par", settings)
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
    lib = DocumentLibrary.open(tmp_path / "par", settings)
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
    lib = DocumentLibrary.open(tmp_path / "ray", settings)
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


def test_engine_index_many_and_failed_documents(tmp_path: Path, corpus: list[Path], settings):
    bad = tmp_path / "corpus" / "broken.pdf"
    bad.write_bytes(b"%PDF-1.4 not really a pdf")
    engine = Engine(tmp_path / "lib", settings)
    seen: list[str] = []
    items = engine.index_many([*corpus[2:], bad], workers=2, factory=fake_providers,
                              on_item=lambda i: seen.append(i.status))
    assert sorted(seen) == ["added"] * 3 + ["failed"], [i.error for i in items]  # one bad file fails, the rest go on
    failed = next(i for i in items if i.status == "failed")
    assert "broken.pdf" in (failed.error or "")
    assert {d.name for d in engine.documents()} == {p.name for p in corpus[2:]}


def test_ray_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(ConfigError, match=r"pip install 'bookindex\[ray\]'"):
        import_ray()
    with pytest.raises(ConfigError, match="--ray"):
        make_runner(ray="no-such-address")


def test_worker_cache_rows_are_merged_by_the_writer(tmp_path: Path):
    writer_cache = DiskCache(tmp_path / "writer.sqlite")
    worker = RecordingCache(DiskCache(tmp_path / "worker.sqlite"))
    worker.put("k1", {"text": "a"})
    assert worker.get("k1") == {"text": "a"}
    rows = worker.take()
    assert rows == [("k1", {"text": "a"})] and worker.take() == []
    assert merge_rows(writer_cache, rows) == 1 and writer_cache.get("k1") == {"text": "a"}
    assert merge_rows(None, rows) == 0  # caching off (--no-cache)


def test_staged_build_travels_as_tar(tmp_path: Path, corpus: list[Path], settings):
    lib = DocumentLibrary.open(tmp_path / "lib", settings)
    job = lib.job_for(corpus[2])
    result = build_staged(job, None, archive=True, factory=fake_providers)
    assert result.folder is None and result.archive and result.manifest["doc_id"] == job.doc_id
    folder = unpack(result.archive, tmp_path / "unpacked")
    assert (folder / "tree.json").is_file() and (folder / "manifest.json").is_file()
    with lib.writer():
        staged = lib.staging_root() / folder.name
        staged.parent.mkdir(parents=True, exist_ok=True)
        folder.rename(staged)
        doc = lib.commit_build(job, staged)
    assert doc.status == "added" and doc.name == corpus[2].name


@pytest.mark.parametrize("kind", ["symlink", "absolute", "dotdot"])
def test_unpack_refuses_members_outside_the_staging_folder(tmp_path: Path, kind: str) -> None:
    """A staged build arrives as tar bytes from a worker: only files and folders inside the
    target are extracted, on every Python (3.11.2 has no tarfile "data" filter)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo({"symlink": "link", "absolute": "/tmp/evil.json", "dotdot": "../evil.json"}[kind])
        if kind == "symlink":
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
        else:
            info.size = 2
            tar.addfile(info, io.BytesIO(b"{}"))
    with pytest.raises(ValueError, match="refused member"):
        unpack(buf.getvalue(), tmp_path / "dest")
    assert not (tmp_path / "evil.json").exists() and not (tmp_path / "dest" / "link").exists()


def test_local_workers_leave_when_the_indexing_process_is_killed(tmp_path: Path) -> None:
    """A killed `bookindex index --workers N` must not leave its workers behind (each holds
    its models): they watch the process that started them (`_exit_with_parent`)."""
    import signal
    import subprocess
    import time

    child = tmp_path / "child.py"
    child.write_text(
        "import multiprocessing, os, time\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from bookindex.indexing.parallel.executors import _exit_with_parent\n"
        "if __name__ == '__main__':\n"
        "    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn'),\n"
        "                               initializer=_exit_with_parent, initargs=(os.getpid(),))\n"
        "    print(pool.submit(os.getpid).result(), flush=True)\n"
        "    pool.submit(time.sleep, 120)\n"
        "    time.sleep(120)\n")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen([sys.executable, str(child)], stdout=subprocess.PIPE, text=True, env=env)
    worker = int(parent.stdout.readline())

    def running(pid: int) -> bool:
        try:
            return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return False

    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30  # a bound on the wait, not a figure under test
    while running(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    gone = not running(worker)
    if not gone:
        os.kill(worker, signal.SIGKILL)
    assert gone
