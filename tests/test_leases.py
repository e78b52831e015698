"""A superseded generation folder goes as soon as its last reader lease is released: in this
process (the sweeping thread), across processes (whoever lets go last), after a writer that held
the library's lock at the moment of the release, and through the Engine's document cache (a
request still reading a dropped context keeps its folder until it lets go)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from fakes import FakeEmbedder

from bookindex.core.config import load_settings
from bookindex.engine import Engine
from bookindex.retrieval import api as retrieval_api
from bookindex.storage import catalog as catalog_mod
from bookindex.storage.catalog import DOCS, Catalog
from bookindex.storage.lock import WriterLock

REPO = Path(__file__).resolve().parents[1]
WAIT_S = 60.0  # the longest a test waits for the sweeping thread (a loaded, shared machine)


def commit(cat: Catalog, doc_id: str, text: str) -> str:
    """One generation of `doc_id` holding a file with `text`, built and committed as a writer
    does (under the writer lock); its folder name."""
    with cat.writer("test build"):
        build = cat.new_staging_dir(doc_id)
        (build / "content.txt").write_text(text)
        cat.commit_generation(doc_id, build, name=f"{doc_id}.md", source=f"/src/{doc_id}.md", sha256="0" * 64)
        cat.discard_staging_root()
    return str(cat.entries()[doc_id]["dir"])


def folders(root: Path) -> list[str]:
    return sorted(p.name for p in (root / DOCS).iterdir())


def gone(path: Path, timeout: float = WAIT_S) -> bool:
    """Whether `path` disappears within `timeout` seconds (polled: the sweep runs in a thread)."""
    deadline = time.monotonic() + timeout
    while path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_releasing_the_last_lease_removes_a_replaced_generation(tmp_path: Path) -> None:
    cat = Catalog.open(tmp_path / "lib")
    first = commit(cat, "d1", "one")
    _, folder, lease = cat.lease("d1")
    assert lease is not None
    second = commit(cat, "d1", "two")
    assert folder.name == first and (folder / "content.txt").read_text() == "one"  # leased: kept
    lease.release()
    assert gone(folder), f"{folder.name} stayed after its last lease was released: {folders(cat.root)}"
    assert folders(cat.root) == [second]
    assert catalog_mod.settle(WAIT_S)  # renamed away first, then deleted: nothing left behind
    assert not (cat.root / ".tmp").exists()
    assert not list((cat.root / ".leases").rglob("*.lease"))


def test_releasing_the_last_lease_removes_a_dropped_document(tmp_path: Path) -> None:
    cat = Catalog.open(tmp_path / "lib")
    commit(cat, "d1", "one")
    kept = commit(cat, "d2", "other")
    _, folder, lease = cat.lease("d1")
    assert lease is not None and cat.drop("d1")
    assert folder.is_dir()  # a reader holds it: the drop's sweep kept it
    lease.release()
    assert gone(folder)
    assert folders(cat.root) == [kept]


def test_a_current_generation_is_never_removed_by_a_release(tmp_path: Path) -> None:
    cat = Catalog.open(tmp_path / "lib")
    current = commit(cat, "d1", "one")
    for _ in range(3):
        _, _, lease = cat.lease("d1")
        assert lease is not None
        lease.release()
    cat.sweep_soon([current])
    assert catalog_mod.settle(WAIT_S)
    assert folders(cat.root) == [current] and (cat.root / DOCS / current / "content.txt").read_text() == "one"


HOLDER = textwrap.dedent("""
    import sys, time
    from bookindex.storage.catalog import Catalog
    _, folder, lease = Catalog.open(sys.argv[1]).lease("d1")
    print("held", folder.name, flush=True)
    sys.stdin.readline()
    intact = (folder / "content.txt").read_text() == "one"
    lease.release()
    deadline = time.monotonic() + 60
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    print("intact" if intact else "damaged", "kept" if folder.exists() else "gone", flush=True)
""")


def test_the_last_process_to_let_go_removes_it(tmp_path: Path) -> None:
    """Another process's live lease keeps the folder after this process lets go; when that
    process releases its lease, its own sweeping thread removes the folder."""
    cat = Catalog.open(tmp_path / "lib")
    first = commit(cat, "d1", "one")
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(cat.root)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().split() == ["held", first]
        _, folder, lease = cat.lease("d1")
        assert lease is not None
        second = commit(cat, "d1", "two")
        lease.release()
        assert catalog_mod.settle(WAIT_S)
        assert folder.is_dir(), "removed while another process held a lease on it"
        holder.stdin.write("\n")
        holder.stdin.flush()
        out, _ = holder.communicate(timeout=WAIT_S + 30)
        assert out.split() == ["intact", "gone"]
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    assert not folder.exists() and folders(cat.root) == [second]


def test_a_release_while_a_writer_holds_the_lock_is_swept_when_it_lets_go(tmp_path: Path) -> None:
    """The sweeping thread never sweeps under a writer's feet (a build between moving its folder
    into docs/ and committing the catalog): it tries again once the lock is free."""
    cat = Catalog.open(tmp_path / "lib")
    commit(cat, "d1", "one")
    _, folder, lease = cat.lease("d1")
    assert lease is not None
    second = commit(cat, "d1", "two")
    busy = WriterLock(cat.root)  # another build holding the library (no sweep of its own at the end)
    busy.acquire("a build")
    try:
        lease.release()
        assert not catalog_mod.settle(1.0)  # pending: the lock is held
        assert folder.is_dir()
    finally:
        busy.release()
    assert gone(folder)
    assert folders(cat.root) == [second]


def engine_over(lib: Path, cache: Path) -> Engine:
    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(cache)}, env={})
    return Engine(lib, settings, embedder=FakeEmbedder())


def test_a_dropped_context_keeps_its_folder_while_a_request_reads_it(tmp_path: Path, md_file: Path) -> None:
    engine = engine_over(tmp_path / "lib", tmp_path / "cache")
    engine.index(md_file, graph=False)
    ctx = engine.open("handbook.md")  # a request in flight holds its context
    old = ctx.index.folder
    assert engine.index(md_file, graph=False, force=True).status == "replaced"  # drops ctx from the cache
    assert old.is_dir()
    hits = retrieval_api.search(ctx, "Which parser reads spans?", method="bm25", k=3)  # reads on undisturbed
    assert hits and all(h.node_id in ctx.tree.nodes for h in hits)
    assert ctx.index.build_report  # a file read only now, from the old folder
    assert engine.ask("Which parser reads spans?", doc="handbook.md", method="bm25").evidence
    del ctx, hits
    assert gone(old), f"the replaced version stayed after its last reader let go: {folders(tmp_path / 'lib')}"
    assert len(folders(tmp_path / "lib")) == 1


def test_refresh_lets_go_of_versions_another_process_replaced(tmp_path: Path, md_file: Path) -> None:
    """A long-lived Engine (a server's) that another Engine (a build process) re-indexed under:
    `refresh` drops the opened and browsed versions the catalog no longer names."""
    server = engine_over(tmp_path / "lib", tmp_path / "cache")
    server.index(md_file, graph=False)
    assert server.ask("Which parser reads spans?", doc="handbook.md", method="bm25").evidence
    assert server.tree("handbook.md").root.children  # browsed too
    old = server.library.get("handbook.md").folder
    builder = engine_over(tmp_path / "lib", tmp_path / "cache")
    assert builder.index(md_file, graph=False, force=True).status == "replaced"
    del builder
    assert old.is_dir()  # the server's cache still holds it
    server.refresh()
    assert gone(old)
    assert server.ask("Which parser reads spans?", doc="handbook.md", method="bm25").evidence
    assert len(folders(tmp_path / "lib")) == 1
