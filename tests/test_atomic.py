"""bookindex.core.atomic: replace whole or not at all, leave no temporary file, never collide."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest

from bookindex.core import atomic
from bookindex.core.atomic import atomic_open, write_bytes_atomic, write_json_atomic, write_text_atomic
from bookindex.retrieval.plans import Plan
from bookindex.storage.vector_mirror import load_mirror, save_mirror


def test_each_writer_replaces_the_content(tmp_path: Path) -> None:
    f = tmp_path / "f"
    write_text_atomic(f, "old")
    write_text_atomic(f, "new – ünïcode")
    assert f.read_text(encoding="utf-8") == "new – ünïcode"
    write_bytes_atomic(f, b"\x00\x01")
    assert f.read_bytes() == b"\x00\x01"
    write_json_atomic(f, {"a": [1, "é"]})
    assert json.loads(f.read_text(encoding="utf-8")) == {"a": [1, "é"]}
    assert "é" in f.read_text(encoding="utf-8") and "\n  " in f.read_text(encoding="utf-8")
    write_json_atomic(f, {"a": [1, 2]}, indent=None)
    assert f.read_text(encoding="utf-8") == '{"a":[1,2]}'
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def test_json_default_serialises_odd_values(tmp_path: Path) -> None:
    write_json_atomic(tmp_path / "r.json", {"p": tmp_path}, default=str)
    assert json.loads((tmp_path / "r.json").read_text())["p"] == str(tmp_path)


def test_unserialisable_value_leaves_old_content_and_no_temp(tmp_path: Path) -> None:
    f = tmp_path / "c.json"
    write_json_atomic(f, {"v": 1})
    with pytest.raises(TypeError):
        write_json_atomic(f, {"v": object()})
    assert json.loads(f.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


def test_failure_midway_leaves_old_content_and_no_temp(tmp_path: Path) -> None:
    f = tmp_path / "m.npz"
    save_mirror(f, ["a"], np.ones((1, 2), np.float32))
    with pytest.raises(RuntimeError, match="disk gone"):
        with atomic_open(f, "wb") as fh:
            fh.write(b"partial bytes")
            raise RuntimeError("disk gone")
    ids, mat = load_mirror(f)
    assert ids == ["a"] and mat.tolist() == [[1.0, 1.0]]
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]


def test_failing_rename_leaves_old_content_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "plan.json"
    f.write_text("old plan")

    def refuse(src: str, dst: str) -> None:
        raise OSError("rename refused")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    plan = Plan(question="q", query_type="single-hop", steps=[])
    with pytest.raises(OSError, match="rename refused"):
        plan.save(f)
    assert f.read_text() == "old plan"
    monkeypatch.undo()
    plan.save(f)
    assert Plan.from_json(f.read_text()).question == "q"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_only_wb_and_w_modes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode"):
        with atomic_open(tmp_path / "x", "a"):
            pass


def test_new_files_get_umask_permissions_and_replacements_keep_theirs(tmp_path: Path) -> None:
    old_mask = os.umask(0o027)
    try:
        original = atomic._NEW_FILE_MODE
        atomic._NEW_FILE_MODE = 0o666 & ~0o027  # the module reads the umask once, at import
        try:
            write_text_atomic(tmp_path / "new", "x")
        finally:
            atomic._NEW_FILE_MODE = original
    finally:
        os.umask(old_mask)
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o640  # not mkstemp's 0o600
    kept = tmp_path / "kept"
    kept.write_text("x")
    kept.chmod(0o604)
    write_text_atomic(kept, "y")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o604


def test_default_mode_is_what_open_would_give(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    write_text_atomic(tmp_path / "atomic", "x")
    assert stat.S_IMODE((tmp_path / "atomic").stat().st_mode) == stat.S_IMODE((tmp_path / "plain").stat().st_mode)


def _hammer(path: str, tag: str, rounds: int) -> None:
    for i in range(rounds):
        write_json_atomic(Path(path), {"writer": tag, "i": i, "pad": tag * 2000})


def _check_whole(path: Path) -> None:
    data = json.loads(path.read_text())
    assert data["pad"] == data["writer"] * 2000


def test_two_threads_writing_one_path_never_collide(tmp_path: Path) -> None:
    f = tmp_path / "shared.json"
    errors: list[BaseException] = []
    seen: list[str] = []

    def run(tag: str) -> None:
        try:
            _hammer(str(f), tag, 60)
        except BaseException as exc:  # collected: a thread's exception would be lost
            errors.append(exc)

    def read() -> None:
        while any(t.is_alive() for t in writers):
            if f.exists():
                _check_whole(f)
                seen.append(json.loads(f.read_text())["writer"])

    writers = [threading.Thread(target=run, args=(t,)) for t in "ab"]
    for t in writers:
        t.start()
    read()
    for t in writers:
        t.join()
    assert errors == []
    _check_whole(f)
    assert [p.name for p in tmp_path.iterdir()] == ["shared.json"]


def test_two_processes_writing_one_path_never_collide(tmp_path: Path) -> None:
    f = tmp_path / "shared.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_hammer, args=(str(f), tag, 60)) for tag in "xy"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0]
    _check_whole(f)
    assert [p.name for p in tmp_path.iterdir()] == ["shared.json"]


def test_temporary_names_are_unique_and_in_the_target_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = atomic.tempfile.mkstemp

    def spy(*args: object, **kw: object) -> tuple[int, str]:
        fd, name = real(*args, **kw)  # type: ignore[arg-type]
        made.append(name)
        return fd, name

    monkeypatch.setattr(atomic.tempfile, "mkstemp", spy)
    for _ in range(3):
        write_text_atomic(tmp_path / "t.json", "x")
    assert len(set(made)) == 3
    assert all(Path(m).parent == tmp_path and Path(m).name.startswith(".t.json.") for m in made)
