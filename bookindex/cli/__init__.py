"""The `bookindex` command line. Feature modules add commands via `register(app)` (see app.py)."""

from bookindex.cli.context import CLIState, get_settings

__all__ = ["CLIState", "get_settings"]
