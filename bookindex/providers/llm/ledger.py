"""Per-stage accounting of LLM use (calls, cache hits, tokens, seconds), attached to every result."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class StageUsage:
    calls: int = 0  # provider requests that returned a completion
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens served from the provider's KV cache (llamacpp)
    seconds: float = 0.0  # wall time spent waiting on the provider (summed over threads)
    retries: int = 0  # failed attempts that were retried
    errors: int = 0  # requests that failed for good

    def add(self, other: "StageUsage") -> None:
        for key, value in asdict(other).items():
            setattr(self, key, getattr(self, key) + value)


class Ledger:
    """Thread-safe usage counters keyed by stage label ("sections", "extract", "answer", ...)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stages: dict[str, StageUsage] = {}

    def record(self, stage: str, **delta: float) -> None:
        with self._lock:
            usage = self._stages.setdefault(stage, StageUsage())
            for key, value in delta.items():
                setattr(usage, key, getattr(usage, key) + value)

    def stage(self, stage: str) -> StageUsage:
        with self._lock:
            return StageUsage(**asdict(self._stages.get(stage, StageUsage())))

    def total(self) -> StageUsage:
        with self._lock:
            total = StageUsage()
            for usage in self._stages.values():
                total.add(usage)
            return total

    def snapshot(self) -> dict[str, Any]:
        """{"stages": {stage: {...}}, "total": {...}}, plain JSON-ready dicts."""
        with self._lock:
            stages = {name: _rounded(asdict(u)) for name, u in sorted(self._stages.items())}
        return {"stages": stages, "total": _rounded(asdict(self.total()))}

    def reset(self) -> None:
        with self._lock:
            self._stages.clear()


def _rounded(d: dict[str, Any]) -> dict[str, Any]:
    d["seconds"] = round(d["seconds"], 3)
    return d
