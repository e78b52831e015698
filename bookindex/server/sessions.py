"""Inspector login sessions, kept on the server: the browser's cookie holds a random session id,
never a key.

A session is a small JSON file `<dir>/<sha256(id)>.json` with the key's id (not the key) and its
expiry, so every worker process of `serve --workers N` knows it, and a stolen copy of the folder
holds no usable cookie (file names are digests of the ids). Logging out deletes the file; an
expired one is deleted when next seen.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import time
from pathlib import Path

from bookindex.core.atomic import write_json_atomic

COOKIE = "bookindex_session"  # HttpOnly, SameSite=Strict; its value is a session id


class Sessions:
    def __init__(self, folder: Path, ttl_s: float) -> None:
        self.folder = folder
        self.ttl_s = ttl_s

    def _file(self, session_id: str) -> Path:
        return self.folder / f"{hashlib.sha256(session_id.encode('utf-8')).hexdigest()}.json"

    def create(self, key_id: str) -> str:
        """A new session for the key with this id; returns the session id (the cookie value)."""
        session_id = secrets.token_urlsafe(32)
        self.folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self._file(session_id), {"key_id": key_id, "expires": time.time() + self.ttl_s})
        return session_id

    def key_id(self, session_id: str | None) -> str | None:
        """The key id of a live session, or None (unknown, malformed or expired)."""
        if not session_id or len(session_id) > 128:
            return None
        path = self._file(session_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or float(data.get("expires", 0)) < time.time():
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        key_id = data.get("key_id")
        return key_id if isinstance(key_id, str) else None

    def end(self, session_id: str | None) -> None:
        if session_id and len(session_id) <= 128:
            self._file(session_id).unlink(missing_ok=True)
