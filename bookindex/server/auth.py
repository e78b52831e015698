"""API keys and what each may do, shared by the REST and the MCP server.

A key grants reading some libraries, writing some (upload, delete, cancel, re-index) and, for an
admin, creating and deleting libraries. Keys are held as SHA-256 digests only: the server never
keeps a key it could leak. Where they come from:

- `BOOKINDEX_API_KEYS` / `BOOKINDEX_ADMIN_KEYS` (names in `server.api_keys_env`,
  `server.admin_keys_env`), comma-separated plain keys: read keys read every library, admin keys
  read and write every library and manage libraries. A one-library set-up needs nothing else.
- Scoped keys, stored hashed: the TOML file `server.keys_file` (`[[keys]]` tables) and the JSON
  list in the environment variable `server.scoped_keys_env` (BOOKINDEX_SCOPED_KEYS), each entry
  `{id, sha256, read = [libraries], write = [libraries], admin = false}`; `"*"` is every library.

A request gives its key as `Authorization: Bearer KEY` or `X-API-Key: KEY`; the web inspector
logs in to a server-side session instead (`sessions`), so its cookie never holds a key. With no
key configured the server runs open, which `check_bind` allows on a loopback host only.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bookindex.core.config import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib
from bookindex.core.errors import ConfigError

Role = Literal["read", "admin"]
ALL = "*"  # in a grant's read / write list: every library


class KeySpec(BaseModel):
    """One scoped key as configured: its id (what logs show), the SHA-256 of the key, and the
    libraries it may read and write."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    read: list[str] = Field(default_factory=list)
    write: list[str] = Field(default_factory=list)
    admin: bool = False  # may create and delete libraries


@dataclass(frozen=True)
class Grant:
    """What one key may do."""

    id: str
    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    admin: bool = False

    def can_read(self, library: str) -> bool:
        return ALL in self.read or library in self.read or self.can_write(library)

    def can_write(self, library: str) -> bool:
        return ALL in self.write or library in self.write

    def readable(self, libraries: Iterable[str]) -> list[str]:
        return [name for name in libraries if self.can_read(name)]

    @property
    def role(self) -> Role:
        """The one-library role: admin when it writes every library."""
        return "admin" if ALL in self.write or self.admin else "read"


OPEN = Grant("open", frozenset({ALL}), frozenset({ALL}), admin=True)  # no keys configured (loopback)


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Keys:
    """The configured keys, by digest. `Keys(read, admin)` takes plain keys (as the environment
    variables give them) for every library; `scoped` adds configured grants by digest."""

    read: frozenset[str] = frozenset()
    admin: frozenset[str] = frozenset()
    scoped: tuple[tuple[str, Grant], ...] = ()
    _by_digest: dict[str, Grant] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        table = self._by_digest
        for k in self.read:
            d = digest(k)
            table[d] = Grant(f"read-{d[:8]}", frozenset({ALL}))
        for k in self.admin:
            d = digest(k)
            table[d] = Grant(f"admin-{d[:8]}", frozenset({ALL}), frozenset({ALL}), admin=True)
        for d, grant in self.scoped:
            table[d] = grant
        # the plain keys are not kept: only their digests, in the table
        object.__setattr__(self, "read", frozenset(digest(k) for k in self.read))
        object.__setattr__(self, "admin", frozenset(digest(k) for k in self.admin))

    @classmethod
    def from_env(cls, settings: Settings, environ: Mapping[str, str] | None = None) -> "Keys":
        env = os.environ if environ is None else environ
        specs = load_key_specs(settings, env)
        return cls(read=_split(env.get(settings.server.api_keys_env, "")),
                   admin=_split(env.get(settings.server.admin_keys_env, "")),
                   scoped=tuple((s.sha256, Grant(s.id, frozenset(s.read), frozenset(s.write), s.admin))
                                for s in specs))

    @property
    def open(self) -> bool:
        """No key configured: every request is admitted with every right (loopback only)."""
        return not self._by_digest

    def grant(self, key: str | None) -> Grant | None:
        """The grant a presented key carries, or None. The key is hashed first, so the lookup
        compares digests, not the secret."""
        if self.open:
            return OPEN
        if not key:
            return None
        return self._by_digest.get(digest(key))

    def by_id(self, key_id: str) -> Grant | None:
        """A grant by its id (a login session records the id, not the key)."""
        if self.open and key_id == OPEN.id:
            return OPEN
        return next((g for g in self._by_digest.values() if g.id == key_id), None)

    def role_of(self, key: str | None) -> Role | None:
        g = self.grant(key)
        return g.role if g is not None else None

    def describe(self) -> str:
        grants = list(self._by_digest.values())
        admins = sum(1 for g in grants if g.admin)
        return f"{len(grants)} key(s), {admins} of them admin"


def load_key_specs(settings: Settings, environ: Mapping[str, str]) -> list[KeySpec]:
    """The scoped keys of `server.keys_file` and of the environment variable
    `server.scoped_keys_env`; a malformed entry is a ConfigError naming it."""
    raw: list[tuple[str, Any]] = []
    if settings.server.keys_file:
        path = Path(settings.server.keys_file).expanduser()
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"server.keys_file {path.name}: {e}") from None
        raw += [(f"server.keys_file {path.name}, keys[{i}]", k) for i, k in enumerate(data.get("keys", []))]
    text = environ.get(settings.server.scoped_keys_env, "").strip()
    if text:
        try:
            items = json.loads(text)
        except ValueError as e:
            raise ConfigError(f"${settings.server.scoped_keys_env}: not a JSON list of keys ({e})") from None
        if not isinstance(items, list):
            raise ConfigError(f"${settings.server.scoped_keys_env}: a JSON list of keys is expected")
        raw += [(f"${settings.server.scoped_keys_env}[{i}]", k) for i, k in enumerate(items)]
    specs: list[KeySpec] = []
    for where, item in raw:
        try:
            specs.append(KeySpec.model_validate(item))
        except ValidationError as e:
            first = e.errors()[0]
            raise ConfigError(f"{where}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    ids = [s.id for s in specs]
    if len(ids) != len(set(ids)):
        raise ConfigError(f"scoped keys: duplicate id {next(i for i in ids if ids.count(i) > 1)!r}")
    return specs


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carries: `Authorization: Bearer KEY`, else `X-API-Key`."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return headers.get("x-api-key") or None


def allows(grant: Grant | None, needed: Role, library: str | None = None) -> bool:
    """Whether a grant may do what `needed` names (on `library`, or on every library)."""
    if grant is None:
        return False
    if needed == "read":
        return grant.can_read(library) if library is not None else bool(grant.read or grant.write or grant.admin)
    return grant.can_write(library) if library is not None else ALL in grant.write


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
                              "(comma-separated), or scoped keys (server.keys_file), or bind 127.0.0.1")
        return (f"auth: OPEN (no keys in ${settings.server.api_keys_env} / ${settings.server.admin_keys_env});"
                " anyone on this machine can read, upload and delete")
    return f"auth: {keys.describe()}; every route but /health needs one"


def _split(raw: str) -> frozenset[str]:
    return frozenset(k.strip() for k in raw.split(",") if k.strip())
