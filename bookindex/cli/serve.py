"""`bookindex serve LIB` (REST API) and `bookindex mcp LIB` (MCP server): start-up only; the
servers themselves live in bookindex.server and bookindex.mcp_server."""

from __future__ import annotations

from pathlib import Path

import typer

from bookindex.cli.context import get_settings
from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.engine import Engine
from bookindex.mcp_server import run as run_mcp
from bookindex.server.launch import plan_libraries
from bookindex.server.launch import serve as run_rest
from bookindex.server.skill_folders import skill_folders
from bookindex.server.validate import LIBRARY_NAME


def with_skills(settings: Settings, folders: list[Path]) -> Settings:
    """The settings with `--skills` folders added to `server.skills` (checked at start-up)."""
    if not folders:
        return settings
    listed = list(settings.server.skills) + [str(f.expanduser().resolve()) for f in folders]
    skill_folders(listed)  # a missing folder or a duplicate name: one-line error, exit 2
    return settings.with_overrides({"server.skills": listed})


def named_libraries(items: list[str]) -> dict[str, Path]:
    """`--library NAME=PATH` options as a dict; a malformed one is an error naming it."""
    out: dict[str, Path] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not path or not LIBRARY_NAME.fullmatch(name):
            raise InputError(f"--library {item!r}: use NAME=PATH, NAME of letters, digits and '._-'")
        out[name] = Path(path)
    return out


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        ctx: typer.Context,
        library: Path = typer.Argument(..., metavar="LIB|ROOT",
                                       help="A library folder (created by the first upload), or a folder of libraries."),
        host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind; non-loopback needs API keys."),
        port: int = typer.Option(8000, "--port", help="TCP port."),
        named: list[str] = typer.Option([], "--library", metavar="NAME=PATH",
                                        help="Also serve the library at PATH as NAME (repeatable)."),
        folder_of_libraries: bool = typer.Option(False, "--libraries",
                                                 help="ROOT is a folder of libraries even while it holds none."),
        workers: int | None = typer.Option(None, "--workers", min=1, max=64,
                                           help="Server processes answering questions (default: server.workers; "
                                                "one per core for throughput); one of them runs the index jobs."),
        skills: list[Path] = typer.Option([], "--skills", metavar="DIR",
                                          help="A compiled skill folder to serve at /skills/<its name> (repeatable)."),
    ) -> None:
        """Serve a library over HTTP: REST API with OpenAPI docs at /docs, background indexing jobs.

        Keys: $BOOKINDEX_API_KEYS (read) and $BOOKINDEX_ADMIN_KEYS (admin), comma-separated."""
        settings = with_skills(get_settings(ctx), skills)
        run_rest(library, settings, host=host, port=port, workers=workers or settings.server.workers,
                 named=named_libraries(named), folder_of_libraries=folder_of_libraries)

    @app.command("mcp")
    def mcp(
        ctx: typer.Context,
        library: Path = typer.Argument(..., metavar="LIB|ROOT", help="A library folder, or a folder of libraries."),
        named: list[str] = typer.Option([], "--library", metavar="NAME=PATH",
                                        help="Also serve the library at PATH as NAME (repeatable)."),
        transport: str = typer.Option("stdio", "--transport", help="stdio (launched by an agent) or http."),
        host: str = typer.Option("127.0.0.1", "--host", help="HTTP transport: interface to bind."),
        port: int = typer.Option(8001, "--port", help="HTTP transport: TCP port (endpoint /mcp)."),
        skills: list[Path] = typer.Option([], "--skills", metavar="DIR",
                                          help="A compiled skill folder whose view / get_document tools to offer (repeatable)."),
        verbose: int = typer.Option(0, "--verbose", "-v", count=True,
                                    help="Log to stderr: -v INFO (refused calls, tracebacks), -vv DEBUG; "
                                         "default warnings only."),
    ) -> None:
        """Serve a library to agents over the Model Context Protocol (tools and resources)."""
        if transport not in ("stdio", "http"):
            raise InputError(f"--transport {transport!r}: use stdio or http")
        settings = with_skills(get_settings(ctx), skills)
        libraries, _ = plan_libraries(library, named_libraries(named))
        engines = {name: Engine(path, settings) for name, path in libraries.items()}
        for engine in engines.values():
            engine.require_library()
        run_mcp(engines, "http" if transport == "http" else "stdio", host=host, port=port, verbosity=verbose)
