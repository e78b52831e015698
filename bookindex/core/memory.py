"""Memory in a long-running process: freed memory given back, and the cyclic garbage collector.

A library-wide pass (the document router reads every document's tree) and the eviction of an
opened document free hundreds of megabytes of small objects; glibc's allocator keeps most of it
in the process (a server over 50 filings stayed at 1.5 GB with 133 MB of live Python objects).
`malloc_trim(0)` returns the free pages at the top and inside the heap. Elsewhere than glibc
(musl, macOS, Windows) this is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_freed_memory() -> bool:
    """Ask the C allocator to return free memory to the system; whether it could be asked."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


# Passes over the older generations: one over the middle generation every OLDER_PASSES young
# ones, a full pass every FULL_PASSES of those. A full pass walks every opened document's objects
# (about a second over a 50-filing library). Opened documents are freed by reference counting when
# they leave the cache: with the collector off for 129 questions over that library, it then found
# 6,450 objects in cycles, and the memory stayed flat.
OLDER_PASSES = 50
FULL_PASSES = 1000


def space_out_collections(gen0_threshold: int) -> None:
    """Run CPython's cyclic collector less often in a server process.

    A server keeps millions of long-lived objects (each opened document's tree and graph, the
    router's catalogue). With the default thresholds (700, 10, 10) a collection runs every 700
    net allocations and the older generations' passes walk all of them: answering 43 questions
    over a 50-filing library spent 10.5 s of 35 s in the collector (docs/benchmarks.md, "A library
    of filings"). Reference counting still frees everything that is not a cycle at once; cycles
    wait a little longer. 0 keeps Python's default.
    """
    if gen0_threshold > 0:
        gc.set_threshold(gen0_threshold, OLDER_PASSES, FULL_PASSES)


def freeze_long_lived() -> None:
    """Take every object alive now out of all later collections (`gc.freeze`): after a server's
    warm-up, the models and the library's router live as long as the process, and walking them
    again in every full pass only costs time. They are still freed by reference counting."""
    gc.collect()
    gc.freeze()
