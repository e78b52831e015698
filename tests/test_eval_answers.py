"""scripts/eval_answers.py: its options' errors and the tables it writes (no documents needed)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from script_loader import load_script


def script() -> ModuleType:
    return load_script("eval_answers")


@pytest.mark.parametrize(("args", "message"), [
    (["--ref-index", "LIB", "--method", "magic"], "--method"),
    (["--ref-index", "LIB", "--setting", "llm.provider"], "--setting"),
    (["--ref-index", "LIB", "--setting", "llm.provider=gpt"], "--setting"),
    (["--set", "nosuchsplit=/nonexistent"], "--set"),
])
def test_bad_options_exit_2_naming_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              args: list[str], message: str) -> None:
    argv = [str(tmp_path), *[str(tmp_path) if a == "LIB" else a for a in args], "--out", str(tmp_path / "out")]
    assert script().main(argv) == 2
    assert message in capsys.readouterr().err


def test_the_tables_compare_the_runs_per_set_and_type_and_count_refusals() -> None:
    m = script()

    def row(score: float, kind: str, asked: str, check: str | None) -> dict[str, object]:
        return {"score": score, "kind": kind, "asked": asked, "citation_check": check}

    runs = {"bookindex": {"dev": [row(1.0, "number", "quantity", None), row(0.0, "text", "describe", None)]},
            m.run_name("hybrid", 10, "llamacpp"): {
                "dev": [row(0.0, "number", "quantity", "not-answerable"), row(1.0, "text", "describe", "refused-extractive")]}}
    md = m.markdown("L", {"runs": runs, "sets": runs["bookindex"], "reference": []})
    assert "| dev | bookindex | 2 | **0.500** | 1.000 (1) | 0.000 (1) | 0 |" in md  # number, text
    assert "| dev | hybrid top-10 + llamacpp | 2 | **0.500** | 0.000 (1) | 1.000 (1) | 2 |" in md
    assert "By what the question asks for" in md and "| describe | quantity |" in md


def test_kind_restricts_to_the_question_types_the_tables_show() -> None:
    from bookindex.evaluation.short_answers import question_kind

    kinds = script().QUESTION_KINDS
    assert question_kind("How many pie charts are there in the paper?", "5", "Int") == "structure" in kinds
    assert question_kind("What was the revenue in 2019?", "5.2", "Float") in kinds
    assert question_kind("Who wrote the report?", "Pew", "Str") in kinds
    with pytest.raises(SystemExit):  # argparse names the choices and exits 2
        script().main(["data", "--kind", "pie", "--out", "/nonexistent"])
