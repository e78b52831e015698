"""Per-stage accounting of LLM use (calls, cache hits, tokens, seconds), attached to every result."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
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


# -- arithmetic on snapshots: what a question, a build or a library spent ---------------------------

def counters_delta(before: Mapping[str, Any], after: Mapping[str, Any], keys: Iterable[str]) -> dict[str, float]:
    """after[k] - before[k] for each counter in `keys` (a missing or None counter counts 0), unrounded:
    the usage of one stage, or of the totals, between two snapshots."""
    return {k: (after.get(k, 0) or 0) - (before.get(k, 0) or 0) for k in keys}


def usage_delta(before: Mapping[str, Any], after: Mapping[str, Any], *, keys: Sequence[str] | None = None,
                prefix: str = "") -> dict[str, dict[str, float]]:
    """Per-stage counters spent between two `Ledger.snapshot()`s: {stage: {counter: value}}.

    Only stages whose name starts with `prefix` and that spent something are kept; `keys` picks
    the counters (default: every numeric one of the later snapshot). Values are rounded to 3
    decimals, which leaves the integer counters as they are and the seconds readable.
    """
    out: dict[str, dict[str, float]] = {}
    for stage, now in after.get("stages", {}).items():
        if not stage.startswith(prefix):
            continue
        names = keys if keys is not None else [k for k, v in now.items() if isinstance(v, (int, float))]
        diff = {k: round(v, 3) for k, v in counters_delta(before.get("stages", {}).get(stage, {}), now, names).items()}
        if any(diff.values()):
            out[stage] = diff
    return out


def stages_total(stages: Mapping[str, Mapping[str, float]], keys: Sequence[str]) -> dict[str, float]:
    """The sum over `stages` ({stage: counters}) of each counter in `keys`, rounded to 3 decimals."""
    return {k: round(sum(v[k] for v in stages.values()), 3) for k in keys}


def add_snapshots(snapshots: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """The sum of several snapshots (e.g. the builds of a library's documents): {"stages", "total"},
    counter by counter; a missing (None or empty) snapshot adds nothing, non-numbers are skipped."""
    total: dict[str, float] = {}
    stages: dict[str, dict[str, float]] = {}
    for snap in snapshots:
        if not snap:
            continue
        for k, v in (snap.get("total") or {}).items():
            if isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + v
        for st, vals in (snap.get("stages") or {}).items():
            acc = stages.setdefault(st, {})
            for k, v in vals.items():
                if isinstance(v, (int, float)):
                    acc[k] = acc.get(k, 0) + v
    return {"stages": stages, "total": total}


def _rounded(d: dict[str, Any]) -> dict[str, Any]:
    d["seconds"] = round(d["seconds"], 3)
    return d
