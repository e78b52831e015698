"""A library on S3 or S3-compatible storage: `s3://bucket/prefix`.

Layout under the prefix is a library folder's: `library.json` and `docs/<doc_id>.<stamp>/...`
(generation folders, never changed once written), plus `lock.json` while a writer works.

- **Writer** (`writer_session`): takes the S3 writer lock (a conditional PUT of `lock.json`
  with `If-None-Match: *`: exactly one writer creates it), brings the local mirror up to date,
  runs the ordinary local library code on it (same builds, same atomic renames), then publishes:
  every generation folder S3 does not have yet, then `library.json` last. One PUT of a small
  object is atomic, so the catalog is the pointer switch: a reader sees the old library or the
  new one. Superseded generations are deleted from S3 after the new catalog is in place.
- **Readers** (`reader_root`): fetch `library.json`, download the generation folders they do not
  have into a local read-only mirror (one folder per generation, complete before it is renamed
  into place), then open the mirror as an ordinary library. Query processes never write to S3.
- **Credentials** only from the standard environment variables: AWS_ACCESS_KEY_ID,
  AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN), AWS_REGION / AWS_DEFAULT_REGION, and
  AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL for S3-compatible servers (MinIO, Ceph, R2, moto).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bookindex.core.atomic import write_bytes_atomic
from bookindex.core.config import Settings, cache_dir
from bookindex.core.errors import ConfigError, InputError
from bookindex.storage.catalog import CATALOG, Catalog
from bookindex.storage.lock import command_line

LOCK_KEY = "lock.json"
MIRRORS = "s3"  # under the cache directory: one local mirror folder per s3 library


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str  # without a trailing slash; may be empty

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def key(self, *parts: str) -> str:
        return "/".join([self.prefix, *parts]) if self.prefix else "/".join(parts)


def parse(target: str | os.PathLike[str]) -> S3Location | None:
    """The S3 location of `s3://bucket/prefix` (also as a pathlib.Path collapsed it, "s3:/..."),
    or None for a local folder."""
    text = os.fspath(target)
    if not (text.startswith("s3://") or text.startswith("s3:/")):
        return None
    rest = text[len("s3://"):] if text.startswith("s3://") else text[len("s3:/"):]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise InputError(f"{text}: no bucket; write s3://BUCKET/PREFIX")
    return S3Location(bucket, prefix.strip("/"))


def client() -> Any:
    """A boto3 S3 client from the standard environment variables only."""
    try:
        import boto3  # deferred: only S3 libraries need it (pip install 'bookindex[s3]')
    except ImportError:
        raise ConfigError("an s3:// library needs boto3: pip install 'bookindex[s3]'") from None
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        raise ConfigError("an s3:// library needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
    return boto3.session.Session().client(
        "s3", aws_access_key_id=key, aws_secret_access_key=secret,
        aws_session_token=os.environ.get("AWS_SESSION_TOKEN") or None,
        region_name=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        endpoint_url=os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None)


def mirror_root(loc: S3Location, settings: Settings | None = None, role: str = "read") -> Path:
    """The local mirror of an S3 library: a plain library folder under the cache directory. The
    writer ("write") has its own, so a reader's sync on the same machine never touches a
    writer's unpublished generations."""
    digest = hashlib.sha256(f"{os.environ.get('AWS_ENDPOINT_URL_S3') or os.environ.get('AWS_ENDPOINT_URL') or ''}"
                            f"|{loc.uri}".encode()).hexdigest()[:12]
    return cache_dir(settings) / MIRRORS / f"{loc.bucket}-{digest}-{role}"


def _error_code(exc: Exception) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def _get(s3: Any, loc: S3Location, key: str) -> bytes | None:
    try:
        return bytes(s3.get_object(Bucket=loc.bucket, Key=loc.key(key))["Body"].read())
    except Exception as exc:
        if _error_code(exc) in ("NoSuchKey", "404", "NotFound"):
            return None
        if _error_code(exc) == "NoSuchBucket":
            raise InputError(f"{loc.uri}: no such bucket") from None
        raise


def read_catalog(s3: Any, loc: S3Location) -> dict[str, Any] | None:
    raw = _get(s3, loc, CATALOG)
    return json.loads(raw) if raw is not None else None


def _generations(s3: Any, loc: S3Location) -> set[str]:
    """Generation folder names present on S3 (one LIST with a delimiter per 1,000)."""
    names: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=loc.bucket, Prefix=loc.key("docs", ""),
                                                             Delimiter="/"):
        for p in page.get("CommonPrefixes") or []:
            names.add(p["Prefix"].rstrip("/").rsplit("/", 1)[-1])
    return names


def _download_generation(s3: Any, loc: S3Location, name: str, root: Path) -> None:
    """docs/<name>/ into the mirror: into a private folder first, renamed into place complete."""
    final = root / "docs" / name
    if final.is_dir():
        return  # generations are immutable: present means complete
    tmp = root / ".tmp" / f"dl-{name}-{uuid.uuid4().hex[:8]}"
    base = loc.key("docs", name, "")
    found = False
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=loc.bucket, Prefix=base):
        for obj in page.get("Contents") or []:
            rel = obj["Key"][len(base):]
            if not rel or rel.startswith("/") or ".." in rel.split("/"):
                continue
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(loc.bucket, obj["Key"], str(target))
            found = True
    if not found:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"{loc.uri}: generation docs/{name} is missing on S3 (deleted by a newer "
                         "writer while reading?); run the command again")
    (root / "docs").mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, final)
    except OSError:  # another process finished the same generation first
        shutil.rmtree(tmp, ignore_errors=True)


def sync_down(s3: Any, loc: S3Location, root: Path) -> bool:
    """Make the local mirror `root` equal to the S3 library; False when S3 holds no library yet.
    Runs under the mirror's local writer lock, so its own sweep removes superseded generations
    no local reader holds."""
    catalog = read_catalog(s3, loc)
    root.mkdir(parents=True, exist_ok=True)
    local = Catalog.open(root)
    with local.writer(f"s3 sync {loc.uri}"):
        if catalog is None:
            with contextlib.suppress(FileNotFoundError):
                (root / CATALOG).unlink()
        else:
            for entry in catalog.get("documents", {}).values():
                _download_generation(s3, loc, entry["dir"], root)
            write_bytes_atomic(root / CATALOG, json.dumps(catalog, indent=2).encode("utf-8"))
        local.refresh()
    return catalog is not None


def publish(s3: Any, loc: S3Location, root: Path) -> dict[str, int]:
    """Upload the mirror's new generation folders, then library.json last (the atomic pointer
    switch), then delete the generations the new catalog no longer names."""
    catalog_path = root / CATALOG
    if not catalog_path.exists():
        return {"uploaded": 0, "deleted": 0}
    catalog = json.loads(catalog_path.read_text(encoding="utf-8"))
    live = {e["dir"] for e in catalog["documents"].values()}
    present = _generations(s3, loc)
    uploaded = 0
    for name in sorted(live - present):
        folder = root / "docs" / name
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            s3.upload_file(str(f), loc.bucket, loc.key("docs", name, f.relative_to(folder).as_posix()))
        uploaded += 1
    s3.put_object(Bucket=loc.bucket, Key=loc.key(CATALOG), Body=catalog_path.read_bytes(),
                  ContentType="application/json")
    deleted = 0
    for name in sorted(present - live):
        keys = [{"Key": o["Key"]} for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=loc.bucket, Prefix=loc.key("docs", name, "")) for o in page.get("Contents") or []]
        for k in range(0, len(keys), 1000):
            s3.delete_objects(Bucket=loc.bucket, Delete={"Objects": keys[k:k + 1000], "Quiet": True})
        deleted += 1
    return {"uploaded": uploaded, "deleted": deleted}


@contextlib.contextmanager
def s3_lock(s3: Any, loc: S3Location, command: str | None = None) -> Iterator[None]:
    """The S3 writer lock: `lock.json` created with a conditional PUT (If-None-Match: *), so
    of two writers exactly one succeeds; deleted on release. A crashed writer leaves it behind:
    the error names its holder, and deleting the object (after checking) frees the library."""
    record = {"host": socket.gethostname(), "pid": os.getpid(), "command": command or command_line(),
              "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        s3.put_object(Bucket=loc.bucket, Key=loc.key(LOCK_KEY), Body=json.dumps(record).encode(), IfNoneMatch="*")
    except Exception as exc:
        if _error_code(exc) in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
            holder = _get(s3, loc, LOCK_KEY) or b"{}"
            raise InputError(f"{loc.uri}: the library is locked by {holder.decode(errors='replace')}; if that "
                             f"writer is dead, delete s3://{loc.bucket}/{loc.key(LOCK_KEY)}") from None
        if _error_code(exc) == "NoSuchBucket":
            raise InputError(f"{loc.uri}: no such bucket") from None
        raise
    try:
        yield
    finally:
        s3.delete_object(Bucket=loc.bucket, Key=loc.key(LOCK_KEY))


@contextlib.contextmanager
def writer_session(loc: S3Location, settings: Settings | None = None,
                   command: str | None = None) -> Iterator[Path]:
    """Hold the S3 lock, yield the up-to-date local mirror to change with the ordinary library
    code, then publish what was committed (also after a failure: every committed state of the
    mirror is a consistent library)."""
    s3 = client()
    root = mirror_root(loc, settings, "write")
    with s3_lock(s3, loc, command):
        sync_down(s3, loc, root)
        try:
            yield root
        finally:
            publish(s3, loc, root)


def reader_root(loc: S3Location, settings: Settings | None = None) -> Path:
    """The local read-only mirror of an S3 library, brought up to date (reads S3, never writes)."""
    s3 = client()
    root = mirror_root(loc, settings)
    if not sync_down(s3, loc, root):
        raise InputError(f"{loc.uri}: no bookindex library here (index documents with "
                         f"`bookindex index PATH -i {loc.uri}`)")
    return root
