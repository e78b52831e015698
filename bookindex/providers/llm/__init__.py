"""The LLM layer: `get_llm(settings)` returns the LLMClient every stage calls through."""

from __future__ import annotations

import threading
from pathlib import Path

from bookindex.core.config import Settings, cache_dir
from bookindex.core.errors import ConfigError
from bookindex.core.protocols import UsageLedger
from bookindex.providers.llm.cache import DiskCache, cache_key
from bookindex.providers.llm.client import LLMClient
from bookindex.providers.llm.ledger import Ledger
from bookindex.providers.llm.providers import (
    Completion,
    LlamaCppProvider,
    NoneProvider,
    OpenAIProvider,
    Provider,
    TransientError,
    image_part,
    user_message,
)

__all__ = ["LLMClient", "Ledger", "DiskCache", "Completion", "Provider", "TransientError",
           "get_llm", "make_provider", "open_cache", "cache_key", "image_part", "user_message"]

_CACHES: dict[Path, DiskCache] = {}
_CACHES_LOCK = threading.Lock()


def open_cache(settings: Settings) -> DiskCache | None:
    """The shared SQLite completion cache, or None when caching is off (--no-cache)."""
    if not settings.cache.enabled:
        return None
    path = cache_dir(settings) / "llm.sqlite"
    with _CACHES_LOCK:
        if path not in _CACHES:
            _CACHES[path] = DiskCache(path)
        return _CACHES[path]


def make_provider(settings: Settings, section: str = "llm") -> Provider:
    cfg = getattr(settings, section)
    if cfg.provider == "none":
        return NoneProvider(section)
    if cfg.provider == "openai":
        return OpenAIProvider(cfg, section)
    if cfg.provider == "llamacpp":
        return LlamaCppProvider(cfg, section, cache_root=cache_dir(settings))
    raise ConfigError(f"{section}.provider: unknown provider {cfg.provider!r}; "
                      "use none, openai or llamacpp")


def get_llm(settings: Settings, section: str = "llm", ledger: UsageLedger | None = None) -> LLMClient:
    """The client for `settings.llm` (or `settings.vlm` with section="vlm"); `ledger` shares
    another client's usage counters (the VLM of a build counts into the LLM's)."""
    return LLMClient(make_provider(settings, section), getattr(settings, section),
                     cache=open_cache(settings), ledger=ledger, section=section)
