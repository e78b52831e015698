"""Pipe tables (GitHub Markdown) read back into cells: the one reader of the tables a tree stores.

Every parser writes a table node's text as a pipe table (`parsing.htmltable.rows_to_markdown`,
`parsing.pdf_tables`), and the reader, the table-shape operator, the cover's ticker column
(`parsing.identity`) and graph extraction read it back. Each used to split the lines itself, and
none honoured the writers' escape: a cell holding "|" is written "\\|" and was read as two cells,
which shifts every column after it. Here a row is split on unescaped pipes only.

markdown-it-py's table rule was measured against this reader (`scripts/bench_lexicon.py`) on the
stored trees of two libraries, the MMLongBench dev2 and handbook ones (202 table nodes): the same
cells in 176; in the other 26 it took the caption line under a table for one more row (GitHub's
lazy continuation); it read no table at all in any of 166 texts starting inside one, below its
header rule (an evidence passage, a table continued from the page before), where this reader
reads every one; and it took 714-1081 µs a table against 12-15, on the reader's per-question
path. So rows are split here.
"""

from __future__ import annotations

import re

# a Markdown table's header separator line ("|---|:--:|", "| --- | --- |")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")
_RULE_ROW = re.compile(r"[|\s:-]+")  # a row of nothing but rule marks (or of empty cells)
_CELL_BREAK = re.compile(r"(?<!\\)\|")


def is_pipe_row(line: str) -> bool:
    """Whether `line` is a row of a pipe table (it opens with "|")."""
    return line.lstrip().startswith("|")


def is_rule_row(line: str) -> bool:
    """Whether `line` holds no cell text: the header rule, or a row of empty cells."""
    return bool(_RULE_ROW.fullmatch(line.strip()))


def row_cells(line: str) -> list[str]:
    """The cells of one pipe-table row, stripped, an escaped "\\|" kept as "|" in its cell."""
    s = line.strip()
    if "\\|" not in s:  # the common row: no escape to honour
        return [c.strip() for c in s.strip("|").split("|")]
    s = s[1:] if s.startswith("|") else s
    s = s[:-1] if s.endswith("|") and not s.endswith("\\|") else s
    return [c.strip().replace("\\|", "|") for c in _CELL_BREAK.split(s)]


def pipe_rows(text: str) -> list[list[str]]:
    """The cells of every pipe-table row of `text`, row by row, the rule rows left out."""
    return [row_cells(ln) for ln in text.splitlines() if is_pipe_row(ln) and not is_rule_row(ln)]


def pipe_tables(text: str) -> list[list[list[str]]]:
    """The text's tables, each as its rows of cells: a run of pipe rows is one table, any other
    line ends it; rule rows are left out."""
    out: list[list[list[str]]] = []
    run: list[list[str]] = []
    for ln in [*text.splitlines(), ""]:
        if is_pipe_row(ln):
            if not is_rule_row(ln):
                run.append(row_cells(ln))
            continue
        if run:
            out.append(run)
        run = []
    return out
