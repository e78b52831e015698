"""Configuration: defaults < TOML file < BOOKINDEX_* env < CLI overrides, and source-aware errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookindex.core.config import Settings, cache_dir, load_settings, masked_settings
from bookindex.core.errors import ConfigError


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("BOOKINDEX_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no stray ./bookindex.toml


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults() -> None:
    s = load_settings()
    assert isinstance(s, Settings)
    assert s.llm.provider == "none" and s.vlm.provider == "none"
    assert s.embedding.provider == "sentence-transformers"
    assert s.cache.enabled is True
    assert s.source_of("llm.model") == "default"
    assert s.config_file is None


def test_precedence_file_env_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write(tmp_path / "my.toml", """
[llm]
provider = "openai"
model = "from-file"
timeout = 30
temperature = 0.5

[graph]
er_top_k = 3
""")
    monkeypatch.setenv("BOOKINDEX_LLM__MODEL", "from-env")
    monkeypatch.setenv("BOOKINDEX_LLM__TIMEOUT", "45")
    s = load_settings(cfg, {"llm.timeout": 60}, override_sources={"llm.timeout": "--set llm.timeout"})
    assert s.llm.provider == "openai" and s.source_of("llm.provider") == str(cfg)
    assert s.llm.model == "from-env" and s.source_of("llm.model") == "env BOOKINDEX_LLM__MODEL"
    assert s.llm.timeout == 60 and s.source_of("llm.timeout") == "--set llm.timeout"
    assert s.llm.temperature == 0.5
    assert s.graph.er_top_k == 3
    assert s.llm.max_retries == 4 and s.source_of("llm.max_retries") == "default"
    assert s.config_file == str(cfg)


def test_toml_in_working_directory_is_found(tmp_path: Path) -> None:
    write(tmp_path / "bookindex.toml", '[embedding]\nbatch_size = 7\n')
    assert load_settings().embedding.batch_size == 7


def test_bookindex_config_env_points_at_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write(tmp_path / "other.toml", '[cache]\nenabled = false\n')
    monkeypatch.setenv("BOOKINDEX_CONFIG", str(cfg))
    assert load_settings().cache.enabled is False


def test_nested_overrides_and_env_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKINDEX_RERANKER", '{"provider": "endpoint", "base_url": "http://x"}')
    s = load_settings(overrides={"retrieval": {"max_evidence": 3}})
    assert s.reranker.provider == "endpoint" and s.retrieval.max_evidence == 3
    assert s.source_of("retrieval.max_evidence") == "CLI override retrieval.max_evidence"


@pytest.mark.parametrize("env_name,value,key", [
    ("BOOKINDEX_LLM__PROVIDER", "gpt", "llm.provider"),
    ("BOOKINDEX_LLM__TIMEOUT", "soon", "llm.timeout"),
    ("BOOKINDEX_EMBEDDING__BATCH_SIZE", "0", "embedding.batch_size"),
])
def test_invalid_env_value_names_key_and_variable(monkeypatch: pytest.MonkeyPatch, env_name: str,
                                                  value: str, key: str) -> None:
    monkeypatch.setenv(env_name, value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    msg = str(err.value)
    assert key in msg and f"env {env_name}" in msg and "\n" not in msg


def test_invalid_file_value_names_the_file(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.toml", '[llm]\nprovider = "llamacpp"\nmax_concurrency = 0\n')
    with pytest.raises(ConfigError, match=r"llm\.max_concurrency.*c\.toml"):
        load_settings(cfg)


def test_invalid_cli_value_names_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"retrieval\.ppr_alpha.*--set retrieval\.ppr_alpha"):
        load_settings(overrides={"retrieval.ppr_alpha": "2"},
                      override_sources={"retrieval.ppr_alpha": "--set retrieval.ppr_alpha"})


def test_unknown_keys_are_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write(tmp_path / "c.toml", '[llm]\nmodle = "typo"\n')
    with pytest.raises(ConfigError, match=r"unknown configuration key 'llm\.modle'.*valid keys"):
        load_settings(cfg)
    cfg2 = write(tmp_path / "d.toml", '[llms]\nmodel = "x"\n')
    with pytest.raises(ConfigError, match=r"unknown configuration key 'llms'.*valid sections"):
        load_settings(cfg2)
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", "/tmp/x")  # not a settings key: ignored here
    load_settings()


def test_malformed_toml_is_one_line(tmp_path: Path) -> None:
    cfg = write(tmp_path / "bad.toml", '[llm\nprovider = "openai"\n')
    with pytest.raises(ConfigError) as err:
        load_settings(cfg)
    msg = str(err.value)
    assert msg.startswith(str(cfg)) and "malformed TOML" in msg and "line 1" in msg
    assert "\n" not in msg


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "nope.toml")


def test_cache_dir_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir(load_settings()) == tmp_path / ".cache" / "bookindex"
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir(load_settings()) == tmp_path / "c"
    assert cache_dir(load_settings(overrides={"cache.path": str(tmp_path / "d")})) == tmp_path / "d"


def test_masking_and_with_overrides() -> None:
    s = load_settings(overrides={"llm.base_url": "https://user:pw@example.com/v1"})
    shown = masked_settings(s)
    assert shown["llm"]["base_url"] == "https://***@example.com/v1"
    assert shown["llm"]["api_key_env"] == "OPENAI_API_KEY"  # a variable *name* is not secret
    s2 = s.with_overrides({"llm.max_tokens": 16})
    assert s2.llm.max_tokens == 16 and s.llm.max_tokens == 1024
    with pytest.raises(ConfigError):
        s.with_overrides({"llm.max_tokens": -1})
