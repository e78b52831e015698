"""No filesystem path of the server in what a client sees.

A library's documents, errors and pages are described to clients by name: a document's source is
its file name, an error that names the library folder names it by its folder name. `Redactor`
knows the server's private folders (library roots, the cache, skill folders, the home folder)
and rewrites any absolute path under one of them to its last component; `RedactBodies` applies it
to every JSON, problem, HTML and event-stream body and every header the app sends, so a message
written anywhere below (the Engine, the parser, a template) cannot leak a path. The REST routes
and the MCP tools also describe documents by name explicitly (`public_document`), because a
document's source may lie outside every known folder.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, MutableMapping
from pathlib import Path
from typing import Any

from bookindex.engine import DocumentInfo

Scope = MutableMapping[str, Any]
TEXT_TYPES = (b"application/json", b"application/problem+json", b"text/html", b"text/event-stream",
              b"text/plain")
PATH_CHARS = r"[^\s'\"<>,;:)(\]\[{}]*"  # what may follow a folder inside one path in a message


class Redactor:
    """Rewrites `<private folder>/rest/of/path` to `path` (its last part) in strings and in
    JSON-like values. A folder is matched as written and as resolved (symlinks)."""

    def __init__(self, folders: Iterable[str | Path] = ()) -> None:
        self._folders: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()
        self.add(*folders)

    def add(self, *folders: str | Path) -> None:
        with self._lock:
            known = set(self._folders)
            for f in folders:
                if not str(f):
                    continue
                for form in {os.path.abspath(os.path.expanduser(str(f))), str(Path(f).expanduser().resolve())}:
                    if len(form) > 1:  # never "/" itself
                        known.add(form.rstrip("/"))
            if known == self._folders:
                return
            alts = "|".join(re.escape(f) for f in sorted(known, key=len, reverse=True))
            self._pattern = re.compile(rf"(?:{alts})(?![\w.-])(?:/{PATH_CHARS})?")
            self._folders = known

    @property
    def folders(self) -> frozenset[str]:
        return frozenset(self._folders)

    def text(self, s: str) -> str:
        if self._pattern is None or "/" not in s:
            return s
        return self._pattern.sub(lambda m: Path(m.group(0).rstrip("/")).name or "", s)

    def value(self, obj: Any) -> Any:
        """A JSON-like value with every string redacted."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {k: self.value(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.value(v) for v in obj]
        return obj


def public_document(info: DocumentInfo) -> DocumentInfo:
    """A document as a client sees it: its source by file name only (in the manifest too)."""
    name = Path(info.source).name if info.source else None
    manifest = dict(info.manifest)
    if "source" in manifest:
        manifest["source"] = Path(str(manifest["source"])).name
    return info.model_copy(update={"source": name, "manifest": manifest})


def default_folders() -> list[Path]:
    """Folders every server keeps private: the home folder and the working directory."""
    return [Path.home(), Path.cwd()]


class RedactBodies:
    """ASGI middleware: redact the text bodies (JSON, problem details, HTML, event streams) and
    the headers of every response. Whole bodies are rewritten in one piece (Content-Length
    fixed); an event stream chunk by chunk (one event per chunk), so streaming is untouched."""

    def __init__(self, app: Any, redactor: Redactor) -> None:
        self.app = app
        self.redactor = redactor

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        red = self.redactor
        start: dict[str, Any] | None = None
        chunks: list[bytes] = []
        stream = False

        async def wrapped(msg: MutableMapping[str, Any]) -> None:
            nonlocal start, stream
            if msg["type"] == "http.response.start":
                headers = [(k, red.text(v.decode("latin-1")).encode("latin-1")) for k, v in msg.get("headers", [])]
                ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if not ctype.startswith(TEXT_TYPES):
                    await send({**msg, "headers": headers})
                    return
                stream = ctype.startswith(b"text/event-stream")
                if stream:
                    await send({**msg, "headers": headers})
                    return
                start = {**msg, "headers": headers}
                return
            if msg["type"] != "http.response.body":
                await send(msg)
                return
            if stream:
                body = msg.get("body", b"")
                if body:
                    body = red.text(body.decode("utf-8", "replace")).encode()
                await send({**msg, "body": body})
                return
            if start is None:
                await send(msg)
                return
            chunks.append(msg.get("body", b""))
            if msg.get("more_body"):
                return
            body = red.text(b"".join(chunks).decode("utf-8", "replace")).encode()
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, wrapped)
