"""Concurrent writers and readers, and builds killed with SIGKILL at every stage.

Both run real processes (the CLI entry point, or `DocumentLibrary.add` with an `on_event` hook that
kills its own process), with the shared hashing embedder and no LLM. The stress test runs for
$BOOKINDEX_STRESS_SECONDS (default 60) and then stops by itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fakes import FakeEmbedder
from library_helpers import handbook_markdown

from bookindex.indexing.library import DocumentLibrary
from bookindex.storage.lock import LibraryBusy

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
STRESS_SECONDS = float(os.environ.get("BOOKINDEX_STRESS_SECONDS", "60"))

# One worker process of the stress test: a writer re-indexes every document in a loop (options
# alternate, so each run is a real rebuild and a generation swap); a reader asks in a loop, through
# the CLI (a fresh Engine per question) or through one long-lived Engine (as a server would).
WORKER = textwrap.dedent('''
    import contextlib, io, json, os, sys, time
    from pathlib import Path
    from fakes import FakeEmbedder
    from bookindex.cli.app import main
    from bookindex.engine import Engine
    from bookindex.services.providers import ProviderSet
    from bookindex.indexing.library import DocumentLibrary

    emb = FakeEmbedder()
    DocumentLibrary.embedder = property(lambda self: emb)
    ProviderSet.embedder = property(lambda self: emb)
    role, lib, deadline, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    docs = sys.argv[5:]
    counts = {"role": role, "runs": 0, "failed": 0, "errors": [], "statuses": {}}

    def cli(args):
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                main(args)
        except SystemExit as e:
            code = int(e.code or 0)
        else:
            code = 0
        for status in ("added", "replaced", "unchanged", "retried"):
            if f"1 {status}" in err.getvalue():
                counts["statuses"][status] = counts["statuses"].get(status, 0) + 1
        if code:  # the report names what went wrong
            counts["errors"].append(f"exit {code}: {err.getvalue()[-300:]}")
        return code

    engine = Engine(lib) if role == "engine-reader" else None
    k = 0
    while time.time() < deadline:
        k += 1
        doc = docs[k % len(docs)]
        if role == "writer":
            args = ["index", "--no-graph", "-q", "-i", lib, doc] + (["--no-tables"] if (k // 2) % 2 else [])
            rc = cli(args)
        elif role == "cli-reader":
            rc = cli(["ask", lib, "What does the parser read?", "--doc", Path(doc).name, "--json"])
        else:
            try:
                ans = engine.ask("What does the parser read?", doc=Path(doc).name)
                rc = 0 if ans.evidence else 1
            except Exception as e:  # counted, not raised: the test reports every failure
                rc = 1
                counts["errors"].append(f"{type(e).__name__}: {e}"[:300])
        counts["runs"] += 1
        if rc:
            counts["failed"] += 1
    Path(out).write_text(json.dumps(counts))
''')

# Index one document, killing this process with SIGKILL when the build reports `event`.
KILLER = textwrap.dedent('''
    import os, signal, sys
    from fakes import FakeEmbedder
    from bookindex.indexing.library import DocumentLibrary

    lib, src, event = sys.argv[1], sys.argv[2], sys.argv[3]

    def hook(name, info):
        if name == event:
            os.kill(os.getpid(), signal.SIGKILL)

    DocumentLibrary.open(lib, embedder=FakeEmbedder()).add(src, on_event=hook, graph=True)
    sys.exit(3)  # the event never came
''')

KILL_POINTS = ("locked", "parse_start", "parsed", "tree", "embed_start", "embed_done", "graph_start",
               "graph_done", "commit", "catalog")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(TESTS)])
    return env


def _content(root: Path) -> dict[str, str]:
    """The library's content: catalog and committed documents (locks, leases, .tmp excluded)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] in (".lock", ".tmp", ".leases", ".leases.lock"):
            continue
        out[rel.as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def _new_id(src: Path) -> str:
    return hashlib.sha256(src.read_bytes()).hexdigest()[:16]


def _sum_statuses(results: list[dict]) -> dict[str, int]:
    total: dict[str, int] = {}
    for r in results:
        for k, v in r["statuses"].items():
            total[k] = total.get(k, 0) + v
    return total


def _catalog(root: Path) -> dict:
    return json.loads((root / "library.json").read_text())["documents"]


def test_writers_and_readers_stress(tmp_path: Path) -> None:
    """4 writers re-index the same documents while 4 readers ask: no failed ask, no lost
    document, no temp folder left."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "handbook.md").write_text(handbook_markdown())
    (src / "notes.md").write_text("# Notes\n\nThe parser reads spans and lines.\n\n## More\n\nDetails of the parser.\n")
    lib = tmp_path / "lib"
    library = DocumentLibrary.open(lib, embedder=FakeEmbedder())
    for f in src.iterdir():
        library.add(f, graph=False)
    del library
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    deadline = time.time() + STRESS_SECONDS
    roles = ["writer"] * 4 + ["cli-reader"] * 2 + ["engine-reader"] * 2
    procs = []
    for k, role in enumerate(roles):
        out = tmp_path / f"out{k}.json"
        procs.append((subprocess.Popen([sys.executable, str(worker), role, str(lib), str(deadline), str(out),
                                        *map(str, sorted(src.iterdir()))], env=_env(), cwd=tmp_path,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), out))
    results = []
    for proc, out in procs:
        try:
            _, err = proc.communicate(timeout=STRESS_SECONDS + 180)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("a worker did not stop by itself")
        assert proc.returncode == 0, err.decode()[-2000:]
        results.append(json.loads(out.read_text()))
    asks = sum(r["runs"] for r in results if r["role"] != "writer")
    failed_asks = sum(r["failed"] for r in results if r["role"] != "writer")
    reindexes = sum(r["runs"] for r in results if r["role"] == "writer")
    failed_writes = sum(r["failed"] for r in results if r["role"] == "writer")
    summary = {"seconds": STRESS_SECONDS, "per_worker": [[r["role"], r["runs"], r["failed"]] for r in results],
               "writer_statuses": _sum_statuses(results), "asks": asks, "failed_asks": failed_asks, "reindexes": reindexes,
               "failed_reindexes": failed_writes, "errors": [e for r in results for e in r["errors"]][:5]}
    print("stress:", json.dumps(summary))
    (tmp_path / "stress.json").write_text(json.dumps(summary))
    if os.environ.get("BOOKINDEX_STRESS_REPORT"):
        Path(os.environ["BOOKINDEX_STRESS_REPORT"]).write_text(json.dumps(summary))
    assert asks > 0 and reindexes > 0
    assert failed_asks == 0, summary
    assert failed_writes == 0, summary
    docs = _catalog(lib)
    assert sorted(e["name"] for e in docs.values()) == ["handbook.md", "notes.md"]
    for e in docs.values():
        assert (lib / "docs" / e["dir"] / "tree.json").is_file()
    assert not (lib / ".tmp").exists()
    # the next writer sweeps versions the last readers still held; nothing else is left
    DocumentLibrary.open(lib, embedder=FakeEmbedder()).add(src / "notes.md", graph=False)
    assert sorted(p.name for p in (lib / "docs").iterdir()) == sorted(e["dir"] for e in _catalog(lib).values())
    assert not list((lib / ".leases").rglob("*.lease")) if (lib / ".leases").exists() else True


@pytest.mark.parametrize("event", KILL_POINTS)
def test_kill_9_during_a_build_leaves_the_old_library(event: str, tmp_path: Path) -> None:
    src = tmp_path / "handbook.md"
    src.write_text(handbook_markdown())
    lib = tmp_path / "lib"
    first = DocumentLibrary.open(lib, embedder=FakeEmbedder()).add(src, graph=True)
    old_id = first.doc_id
    del first
    before = _content(lib)
    src.write_text(handbook_markdown() + "\n# 4 Appendix\n\nA changed document, re-indexed.\n")
    killer = tmp_path / "killer.py"
    killer.write_text(KILLER)
    proc = subprocess.run([sys.executable, str(killer), str(lib), str(src), event], env=_env(), cwd=tmp_path,
                          capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    after = _content(lib)
    if event == "catalog":  # killed between moving the new version in and committing the catalog:
        # the catalog and the committed version are untouched; the orphan folder is swept next run
        after = {k: v for k, v in after.items() if not k.startswith(f"docs/{_new_id(src)}.")}
    assert after == before, f"killed at {event}: the library changed"
    assert list(_catalog(lib)) == [old_id]
    # the re-run takes the lock the dead build held, removes its temp folder and completes
    again = DocumentLibrary.open(lib, embedder=FakeEmbedder()).add(src, graph=True)
    assert again.status == "replaced" and again.doc_id != old_id
    assert not (lib / ".tmp").exists()
    assert [p.name for p in (lib / "docs").iterdir()] == [again.dir.name]
    assert again.tree.find_section("4 Appendix") is not None


def test_second_writer_of_the_same_file_waits_then_finds_it_current(tmp_path: Path) -> None:
    """Two processes index one file at once: one builds it, the other waits and reports it unchanged."""
    src = tmp_path / "handbook.md"
    src.write_text(handbook_markdown())
    script = tmp_path / "index_one.py"
    script.write_text(textwrap.dedent('''
        import sys
        from fakes import FakeEmbedder
        from bookindex.indexing.library import DocumentLibrary
        doc = DocumentLibrary.open(sys.argv[1], embedder=FakeEmbedder()).add(sys.argv[2], graph=True)
        print(doc.status)
    '''))
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "lib"), str(src)], env=_env(),
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1].decode()[-1000:] for o in outs]
    assert sorted(o[0].decode().strip() for o in outs) == ["added", "unchanged"]


def test_a_refused_writer_is_told_who_holds_the_lock(tmp_path: Path) -> None:
    src = tmp_path / "handbook.md"
    src.write_text(handbook_markdown())
    holder = DocumentLibrary.open(tmp_path / "lib", embedder=FakeEmbedder())
    other = DocumentLibrary.open(tmp_path / "lib", embedder=FakeEmbedder())
    waited: list[object] = []
    with holder.writer("bookindex index big.pdf -i lib"):
        with pytest.raises(LibraryBusy, match=rf"pid {os.getpid()} \(bookindex index big.pdf -i lib\) since 20"):
            with other.writer("second", wait=False):
                pass
        with pytest.raises(LibraryBusy, match="still locked"):
            with other.writer("third", wait=True, timeout=0.3, on_wait=waited.append):
                pass
        assert waited and waited[0]["command"] == "bookindex index big.pdf -i lib"  # type: ignore[index]
        with holder.writer("nested"):  # re-entrant in the holding thread
            assert holder.add(src, graph=False).status == "added"
    with other.writer("after", wait=False):
        assert (tmp_path / "lib" / ".lock").read_text().startswith("{")
    assert (tmp_path / "lib" / ".lock").read_text() == ""
