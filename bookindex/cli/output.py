"""The one place the CLI builds its rich consoles, so every command cuts its output the same way.

Output read on a terminal fits the terminal (rich asks it for its width). Output sent to a pipe
or a file is read later, in a log or by a program, where a line cut at 80 columns (rich's default
without a terminal, or `COLUMNS`) loses what was at its end: an operator's parameters in
`ask --explain`, a long document name in `list` or `stats`. There the console is as wide as any
line it is given: no wrapping, no cropping, no "…".
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

# Wider than any line a command prints. Rich pads nothing the CLI prints to the console width
# (tables are not expanded, trees and text are not justified), so a large width costs nothing.
UNCUT_WIDTH = 1_000_000


def make_console(stderr: bool = False, soft_wrap: bool = True, tty_min_width: int | None = None) -> Console:
    """A console on stdout (or stderr) that never cuts output going to a pipe or a file.

    `soft_wrap` keeps rich from breaking plain text at the width (streamed answer tokens print
    piece by piece, and rich cannot know the column a piece starts at). `tty_min_width`: on a
    terminal, lay tables out at least this wide; a wide table read in a narrow terminal is
    better overflowing than squeezed into columns one word wide."""
    from rich.console import Console  # deferred: only printing needs rich, and it is slow to import

    con = Console(stderr=stderr, highlight=False, soft_wrap=soft_wrap)
    if not is_terminal(con.file):
        con.width = UNCUT_WIDTH
    elif tty_min_width is not None and con.width < tty_min_width:
        con.width = tty_min_width
    return con


def is_terminal(stream: IO[str]) -> bool:
    """Whether `stream` is a terminal; a stream without isatty (a test's buffer) is not one."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed file
        return False
