"""What every parser returns, before section filtering turns it into a tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bookindex.core.model import Block


@dataclass
class OutlineEntry:
    """One PDF bookmark: level (1 = top), title, 0-based page (None when it has no target);
    x/y: the target point in points, top-left origin, when the bookmark names one."""

    level: int
    title: str
    page_idx: int | None
    x: float | None = None
    y: float | None = None


@dataclass
class ParsedDocument:
    """Blocks in reading order plus what section filtering and the manifest need."""

    blocks: list[Block]
    page_count: int
    parser: str
    outline: list[OutlineEntry] = field(default_factory=list)
    page_sizes: list[tuple[float, float]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    # Markdown/MinerU parsers may already know heading levels; then section filtering keeps them.
    levels_final: bool = False
