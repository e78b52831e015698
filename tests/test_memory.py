"""Freed memory given back to the system (bookindex.core.memory)."""

from __future__ import annotations

import sys

from bookindex.core.memory import release_freed_memory


def test_release_freed_memory_asks_glibc_on_linux() -> None:
    big = [bytearray(1024) for _ in range(20_000)]  # 20 MB of small blocks, then freed
    del big
    assert release_freed_memory() is sys.platform.startswith("linux")
