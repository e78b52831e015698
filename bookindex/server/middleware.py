"""Pure ASGI middleware (no per-request task or body buffering, so streaming is untouched):
API-key checks for every route but the open ones, and a body-size cap on uploads.

Both answer with problem documents themselves, before any route runs. The MCP server's HTTP
app is wrapped in the same `KeyGuard`, so one key works for REST and MCP.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import quote

from bookindex.server.auth import Keys, Role, allows, presented_key
from bookindex.server.problem import PROBLEM_JSON, Problem, problem_body

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def send_problem(send: Send, path: str, status: int, detail: str,
                       headers: dict[str, str] | None = None) -> None:
    body = json.dumps(problem_body(status, detail, path)).encode()
    hdrs = [(b"content-type", PROBLEM_JSON.encode()), (b"content-length", str(len(body)).encode())]
    hdrs += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body})


class KeyGuard:
    """401 without a valid key (with `WWW-Authenticate: Bearer`); the role goes to
    `scope["state"]["role"]` for routes that need admin. Open paths (and paths under
    `open_prefixes`) skip the check. With `login` set, a browser's GET of a page under
    `login_prefix` without a key is sent to that key form (303) instead of a 401 document."""

    def __init__(self, app: ASGIApp, keys: Keys, open_paths: frozenset[str] = frozenset({"/health"}),
                 needed: Role = "read", open_prefixes: tuple[str, ...] = (), login: str | None = None,
                 login_prefix: str = "/ui/") -> None:
        self.app = app
        self.keys = keys
        self.open_paths = open_paths
        self.needed = needed
        self.open_prefixes = open_prefixes
        self.login = login
        self.login_prefix = login_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        role = self.keys.role_of(presented_key(headers))
        scope.setdefault("state", {})["role"] = role
        path = scope.get("path", "")
        if path not in self.open_paths and not path.startswith(self.open_prefixes or ("\0",)):
            if role is None and self.login and scope.get("method") == "GET" and path.startswith(self.login_prefix):
                await send_redirect(send, f"{self.login}?next={quote(path, safe='/')}")
                return
            if role is None:
                detail = ("missing API key: send 'Authorization: Bearer KEY' or 'X-API-Key: KEY'"
                          if not presented_key(headers) else "invalid API key")
                await send_problem(send, path, 401, detail, {"WWW-Authenticate": "Bearer"})
                return
            if not allows(role, self.needed):
                await send_problem(send, path, 403, f"this endpoint needs an {self.needed} key")
                return
        await self.app(scope, receive, send)


async def send_redirect(send: Send, location: str) -> None:
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


class BodyTooLarge(Problem):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over the {limit / 2**20:.1f} MiB upload limit")


class BodyLimit:
    """Cap request bodies of POSTs to `paths`: by Content-Length at once, else while reading."""

    def __init__(self, app: ASGIApp, limit: int, paths: frozenset[str]) -> None:
        self.app = app
        self.limit = limit
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") not in self.paths:
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers", []):
            if k.lower() == b"content-length" and v.isdigit() and int(v) > self.limit:
                await send_problem(send, scope["path"], 413, str(BodyTooLarge(self.limit)))
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            msg = await receive()
            if msg.get("type") == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)  # a route handler turns it into the 413
            return msg

        await self.app(scope, limited, send)
