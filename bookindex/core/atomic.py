"""Atomic file writes: the one helper every catalog, manifest, index file and plan goes through.

A reader must see either the old file or the new one, never half of one, and two writers of the
same path must not trample each other's temporary file. So: write a temporary file with a unique
name (`tempfile.mkstemp`) in the target's own folder (same file system, so the rename is atomic),
flush and fsync it, `os.replace` it over the target, then fsync the folder so the rename itself
survives a crash. On any failure the temporary file is removed and the target is untouched.
With two concurrent writers the last rename wins, whole.

Hand-written on purpose: the PyPI package `atomicwrites` is archived (unmaintained since 2022),
and the rest is a dozen lines of the standard library.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any


def _umask() -> int:
    """The process umask (read once: os.umask can only be read by setting it, which is not
    thread-safe, and the umask does not change in a running bookindex process)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_NEW_FILE_MODE = 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb", *,
                encoding: str | None = None) -> Iterator[IO[Any]]:
    """Open a temporary file next to `path`; on a clean exit it replaces `path` atomically.

    `mode` is "wb" or "w" (text, `encoding` default utf-8). For writers that want a file object
    (`np.savez`, `json.dump`). If the block raises, `path` keeps its old content and the
    temporary file is removed. The new file gets the mode an ordinary `open` would give it
    (0o666 less the umask), or the mode of the file it replaces, instead of mkstemp's 0o600.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_open: mode must be 'wb' or 'w', not {mode!r}")
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=(encoding or "utf-8") if mode == "w" else None) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        try:
            perms = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            perms = _NEW_FILE_MODE
        os.chmod(tmp, perms)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable; some file systems refuse fsync on a folder, which is harmless."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace `path` with `data` atomically."""
    with atomic_open(path, "wb") as fh:
        fh.write(data)


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Replace `path` with `text` atomically."""
    write_bytes_atomic(path, text.encode(encoding))


def write_json_atomic(path: str | os.PathLike[str], data: Any, *, indent: int | None = 2,
                      default: Callable[[Any], Any] | None = None) -> None:
    """Replace `path` with `data` as UTF-8 JSON atomically (`indent=None`: compact separators).

    The value is serialised before the temporary file is created, so an unserialisable value
    raises TypeError with the old file and its folder untouched.
    """
    separators = (",", ":") if indent is None else None
    text = json.dumps(data, indent=indent, ensure_ascii=False, default=default, separators=separators)
    write_text_atomic(path, text)
