"""BLAS threads of a server process: one by default (`server.blas_threads`).

A question's dense scoring is a matrix-vector product over the document's node vectors (6,155 x
384 for gnuplot.pdf). With OpenBLAS's default of one thread per core, the second thread spends
the product spinning while the cores are busy with other requests: measured on the shared 2-core
box, 8 ms of CPU per product with two threads against 0.4 ms with one, and 80 against 27 ms of
CPU per bench question (docs/benchmarks.md, "Serving"). A server gets its parallelism from
concurrent requests and `--workers` processes, not from threads inside one product.
"""

from __future__ import annotations

from typing import Any

_limits: list[Any] = []  # the active limit, kept for the life of the process


def limit_blas_threads(n: int) -> None:
    """Cap the BLAS libraries loaded in this process (numpy's and scipy's OpenBLAS) at `n` threads."""
    from threadpoolctl import threadpool_limits  # deferred: only server processes set it

    _limits.append(threadpool_limits(limits=n, user_api="blas"))
