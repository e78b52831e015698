"""Freed memory given back to the system (bookindex.core.memory)."""

from __future__ import annotations

import gc
import sys

from bookindex.core.config import Settings, load_settings
from bookindex.core.memory import (
    FULL_PASSES,
    OLDER_PASSES,
    freeze_long_lived,
    release_freed_memory,
    space_out_collections,
)


def test_release_freed_memory_asks_glibc_on_linux() -> None:
    big = [bytearray(1024) for _ in range(20_000)]  # 20 MB of small blocks, then freed
    del big
    assert release_freed_memory() is sys.platform.startswith("linux")


def test_space_out_collections_sets_the_thresholds_or_leaves_them() -> None:
    before = gc.get_threshold()
    try:
        space_out_collections(50_000)
        assert gc.get_threshold() == (50_000, OLDER_PASSES, FULL_PASSES)
        space_out_collections(0)  # 0: left as it is
        assert gc.get_threshold() == (50_000, OLDER_PASSES, FULL_PASSES)
    finally:
        gc.set_threshold(*before)


def test_servers_space_out_collections_by_default() -> None:
    assert Settings().server.gc_threshold > 700  # CPython's default, a third of a question's time
    assert load_settings(overrides={"server.gc_threshold": 0}).server.gc_threshold == 0


def test_freeze_long_lived_takes_live_objects_out_of_collections() -> None:
    kept = [{"n": i} for i in range(1000)]
    try:
        freeze_long_lived()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()
