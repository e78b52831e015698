"""API keys and roles, shared by the REST and the MCP server.

Keys come from the environment variables the settings name (`server.api_keys_env`,
`server.admin_keys_env`; BOOKINDEX_API_KEYS and BOOKINDEX_ADMIN_KEYS by default), comma-separated.
A read key may ask and browse; an admin key may also upload, delete and cancel. A request gives
its key as `Authorization: Bearer KEY` or `X-API-Key: KEY`, or (the web inspector's key form)
as the HttpOnly, SameSite=Strict cookie `COOKIE`. With no key configured the server
runs open, which `check_bind` allows on a loopback host only.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Literal

from bookindex.core.config import Settings
from bookindex.core.errors import ConfigError

Role = Literal["read", "admin"]
COOKIE = "bookindex_key"  # set by the inspector's key form (/ui/login): HttpOnly, SameSite=Strict


@dataclass(frozen=True)
class Keys:
    read: frozenset[str]
    admin: frozenset[str]

    @classmethod
    def from_env(cls, settings: Settings, environ: Mapping[str, str] | None = None) -> "Keys":
        env = os.environ if environ is None else environ
        return cls(read=_split(env.get(settings.server.api_keys_env, "")),
                   admin=_split(env.get(settings.server.admin_keys_env, "")))

    @property
    def open(self) -> bool:
        """No key configured: every request is admitted as admin (loopback only)."""
        return not self.read and not self.admin

    def role_of(self, key: str | None) -> Role | None:
        """The role a presented key grants, or None; compared in constant time."""
        if self.open:
            return "admin"
        if not key:
            return None
        if any(hmac.compare_digest(key, k) for k in self.admin):
            return "admin"
        if any(hmac.compare_digest(key, k) for k in self.read):
            return "read"
        return None


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carries: `Authorization: Bearer KEY`, else `X-API-Key`, else the
    inspector's cookie."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return headers.get("x-api-key") or cookie_key(headers.get("cookie", "")) or None


def cookie_key(header: str) -> str | None:
    """The key in a Cookie header's `COOKIE`, or None (also for a malformed header)."""
    if COOKIE not in header:
        return None
    try:
        jar = SimpleCookie()
        jar.load(header)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value.strip() or None if morsel is not None else None


def allows(role: Role | None, needed: Role) -> bool:
    return role == "admin" or (role == "read" and needed == "read")


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, keys: Keys, settings: Settings) -> str:
    """Refuse to serve a non-loopback host with no key; return the start-up line about auth."""
    if keys.open:
        if not is_loopback(host):
            raise ConfigError(f"refusing to serve on {host} without API keys: set "
                              f"${settings.server.api_keys_env} and/or ${settings.server.admin_keys_env} "
                              "(comma-separated), or bind 127.0.0.1")
        return (f"auth: OPEN (no keys in ${settings.server.api_keys_env} / ${settings.server.admin_keys_env});"
                " anyone on this machine can read, upload and delete")
    return f"auth: {len(keys.read)} read key(s), {len(keys.admin)} admin key(s); every route but /health needs one"


def _split(raw: str) -> frozenset[str]:
    return frozenset(k.strip() for k in raw.split(",") if k.strip())
