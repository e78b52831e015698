"""Pure ASGI middleware (no per-request task or body buffering, so streaming is untouched):
API-key checks for every route but the open ones, and a body-size cap on uploads.

Both answer with problem documents themselves, before any route runs. The MCP server's HTTP
app is wrapped in the same `KeyGuard`, so one key works for REST and MCP.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import quote

from bookindex.server.auth import Grant, Keys, Role, allows, presented_key
from bookindex.server.problem import PROBLEM_JSON, Problem, problem_body
from bookindex.server.sessions import COOKIE, Sessions

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
    """401 without a valid key (with `WWW-Authenticate: Bearer`). The key's grant, its id (for
    the access log) and its one-library role go to `scope["state"]` (`grant`, `key_id`, `role`)
    for the routes, which check the library they serve. Open paths (and paths under
    `open_prefixes`) skip the check. With `sessions`, a request without a key header may carry an
    inspector session cookie instead. With `login` set, a browser's GET of a page under
    `login_prefix` (or that `is_page` accepts) without a key is sent to that form (303) instead
    of a 401 document."""

    def __init__(self, app: ASGIApp, keys: Keys, open_paths: frozenset[str] = frozenset({"/health"}),
                 needed: Role = "read", open_prefixes: tuple[str, ...] = (), login: str | None = None,
                 login_prefix: str = "/ui/", sessions: Sessions | None = None,
                 is_page: Callable[[str], bool] | None = None) -> None:
        self.app = app
        self.keys = keys
        self.open_paths = open_paths
        self.needed = needed
        self.open_prefixes = open_prefixes
        self.login = login
        self.login_prefix = login_prefix
        self.is_page = is_page or (lambda path: path.startswith(login_prefix))  # a browser's page
        self.sessions = sessions

    def grant_of(self, headers: dict[str, str]) -> tuple[Grant | None, str | None]:
        """The request's grant and the id the log shows ("invalid" for an unknown key)."""
        key = presented_key(headers)
        if key is not None or self.sessions is None or self.keys.open:
            grant = self.keys.grant(key)
            return grant, (grant.id if grant else ("invalid" if key else None))
        key_id = self.sessions.key_id(session_cookie(headers.get("cookie", "")))
        grant = self.keys.by_id(key_id) if key_id else None
        return grant, (grant.id if grant else None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        grant, key_id = self.grant_of(headers)
        state = scope.setdefault("state", {})
        state.update(grant=grant, key_id=key_id, role=grant.role if grant else None)
        path = scope.get("path", "")
        if path not in self.open_paths and not path.startswith(self.open_prefixes or ("\0",)):
            if grant is None and self.login and scope.get("method") == "GET" and self.is_page(path):
                await send_redirect(send, f"{self.login}?next={quote(path, safe='/')}")
                return
            if grant is None:
                detail = ("missing API key: send 'Authorization: Bearer KEY' or 'X-API-Key: KEY'"
                          if not presented_key(headers) else "invalid API key")
                await send_problem(send, path, 401, detail, {"WWW-Authenticate": "Bearer"})
                return
            if not allows(grant, self.needed):
                await send_problem(send, path, 403, f"this endpoint needs an {self.needed} key")
                return
        await self.app(scope, receive, send)


def session_cookie(header: str) -> str | None:
    """The inspector's session id in a Cookie header, or None (also for a malformed header)."""
    if COOKIE not in header:
        return None
    try:
        jar = SimpleCookie()
        jar.load(header)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return (morsel.value.strip() or None) if morsel is not None else None


async def send_redirect(send: Send, location: str) -> None:
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


class BodyTooLarge(Problem):
    def __init__(self, limit: int, what: str = "upload") -> None:
        super().__init__(413, f"request body over the {limit / 2**20:.1f} MiB {what} limit")


BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class BodyLimit:
    """Cap request bodies (POST, PUT, PATCH) of the paths `applies` accepts (all by default): by
    Content-Length before anything is read, else while the body streams in (chunked), so an
    oversized body is refused before it is parsed or held in memory. `what` names the limit."""

    def __init__(self, app: ASGIApp, limit: int, applies: Callable[[str], bool] | None = None,
                 what: str = "upload") -> None:
        self.app = app
        self.limit = limit
        self.applies = applies
        self.what = what

    def _applies(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope.get("method") not in BODY_METHODS:
            return False
        return self.applies is None or self.applies(scope.get("path", ""))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._applies(scope):
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers", []):
            if k.lower() == b"content-length" and (not v.isdigit() or int(v) > self.limit):
                await send_problem(send, scope["path"], 413, str(BodyTooLarge(self.limit, self.what)),
                                   {"Connection": "close"})
                return
        seen = 0
        too_large = False
        answered = False
        problem = str(BodyTooLarge(self.limit, self.what))

        async def limited() -> Message:
            nonlocal seen, too_large
            msg = await receive()
            if msg.get("type") == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    too_large = True
                    raise BodyTooLarge(self.limit, self.what)
            return msg

        async def answer(msg: Message) -> None:
            """The app's reply, unless the body ran over: then the 413 instead of whatever the
            app made of the interrupted read (FastAPI calls it a body it could not parse, 400)."""
            nonlocal answered
            if too_large:
                if not answered and msg["type"] == "http.response.start":
                    answered = True
                    await send_problem(send, scope["path"], 413, problem, {"Connection": "close"})
                return
            if msg["type"] == "http.response.start":
                answered = True
            await send(msg)

        try:
            await self.app(scope, limited, answer)
        except BodyTooLarge:
            if not answered:
                await send_problem(send, scope["path"], 413, problem, {"Connection": "close"})
