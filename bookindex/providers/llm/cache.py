"""SQLite disk cache of LLM completions: a rerun makes zero calls, an interrupted batch resumes."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from bookindex.core.errors import ConfigError


def cache_key(provider: str, model: str, messages: Any, params: dict[str, Any]) -> str:
    """sha256 over a canonical JSON of everything that determines the completion."""
    payload = json.dumps(
        {"provider": provider, "model": model, "messages": messages, "params": params},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


OPEN_ATTEMPTS = 20  # ~10 s of backoff in all for a cache file another process is creating


class DiskCache:
    """key -> JSON value table in one SQLite file; safe across threads and processes (WAL)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = self._connect()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open LLM cache {self.path}: {exc}; set cache.path or "
                              "BOOKINDEX_CACHE_DIR to a writable directory, or use --no-cache") from None
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        """Open the file in WAL mode with its table.

        Switching a new file to WAL takes a lock SQLite does not wait for (its busy timeout does
        not apply), so processes that open the same new cache at once (`index --workers`) can get
        "database is locked" here; that is retried for up to ~10 s, then reported.
        """
        for attempt in range(OPEN_ATTEMPTS):
            conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, value TEXT NOT NULL,"
                             " created REAL NOT NULL)")
                return conn
            except sqlite3.OperationalError as exc:
                conn.close()
                if "locked" not in str(exc) or attempt == OPEN_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM completions WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO completions VALUES (?, ?, ?)",
                               (key, json.dumps(value, ensure_ascii=False), time.time()))

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class RecordingCache:
    """A cache that records every row it is given, on top of an optional backing cache.

    Why: a build on another machine (a Ray worker) cannot write the library user's SQLite file.
    The worker's client caches into this wrapper; the task returns `rows` with its result and the
    one writer merges them into its own cache (`merge_rows`), so a rerun anywhere hits the cache.
    """

    def __init__(self, backing: DiskCache | None = None) -> None:
        self.backing = backing
        self.rows: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            if key in self.rows:
                return self.rows[key]
        return self.backing.get(key) if self.backing is not None else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self.rows[key] = value
        if self.backing is not None:
            self.backing.put(key, value)

    def take(self) -> list[tuple[str, dict[str, Any]]]:
        """The rows recorded since the last take (one document's build), and forget them."""
        with self._lock:
            rows, self.rows = list(self.rows.items()), {}
        return rows


def merge_rows(cache: DiskCache | None, rows: list[tuple[str, dict[str, Any]]]) -> int:
    """Put a worker's new completions into `cache` (None: caching is off); the count merged."""
    if cache is None:
        return 0
    for key, value in rows:
        cache.put(key, value)
    return len(rows)
