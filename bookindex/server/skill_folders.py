"""The compiled skill folders a server offers (`serve --skills DIR`, `mcp --skills DIR`), by
folder name; checked at start-up so a wrong path is a one-line error, not a 500 later. Free of
FastAPI: the CLI imports it for every command."""

from __future__ import annotations

from pathlib import Path

from bookindex.core.errors import InputError


def skill_folders(paths: list[str] | list[Path]) -> dict[str, Path]:
    """Folder name -> resolved path; InputError for a missing folder or a name used twice."""
    out: dict[str, Path] = {}
    for raw in paths:
        p = Path(raw).expanduser().resolve()
        if not (p / "skills.json").is_file():
            raise InputError(f"--skills {raw}: not a skill folder (no skills.json); build one with `bookindex skills build`")
        if p.name in out:
            raise InputError(f"--skills {raw}: a skill folder named {p.name!r} is already served ({out[p.name]})")
        out[p.name] = p
    return out
