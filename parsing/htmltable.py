"""HTML tables (MinerU's `table_body`) to rows and Markdown, so table nodes are searchable as text.

MinerU emits tables as HTML; retrieval and LLM prompts read Markdown more reliably. Spans
(colspan/rowspan) are expanded by repeating the cell text, which keeps columns aligned. The one
HTML-table reader: graph extraction reads a table node's `meta.html` with it too.
"""

from __future__ import annotations

from html import escape
from html.parser import HTMLParser


class _TableParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[tuple[str, int, int]]] = []
        self._row: list[tuple[str, int, int]] | None = None
        self._cell: list[str] | None = None
        self._span = (1, 1)
        self.header_rows = 0
        self._in_thead = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "thead":
            self._in_thead = True
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
            self._span = (_int(a.get("colspan")), _int(a.get("rowspan")))
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "thead":
            self._in_thead = False
        elif tag in ("td", "th") and self._cell is not None:
            if self._row is None:
                self._row = []
            self._row.append((" ".join("".join(self._cell).split()), *self._span))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            if self._in_thead:
                self.header_rows += 1
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _int(v: str | None) -> int:
    try:
        return max(1, int(v or 1))
    except ValueError:
        return 1


def html_table_rows(html: str) -> list[list[str]]:
    """Cell texts row by row, with colspan/rowspan expanded."""
    p = _TableParser()
    p.feed(html or "")
    p.close()
    grid: list[list[str]] = []
    pending: dict[tuple[int, int], str] = {}  # (row, col) -> text carried down by rowspan
    for r, row in enumerate(p.rows):
        out: list[str] = []
        col = 0
        cells = list(row)
        while cells or (r, col) in pending:
            if (r, col) in pending:
                out.append(pending.pop((r, col)))
                col += 1
                continue
            text, cspan, rspan = cells.pop(0)
            for _ in range(cspan):
                out.append(text)
                for k in range(1, rspan):
                    pending[(r + k, col)] = text
                col += 1
        grid.append(out)
    width = max((len(r) for r in grid), default=0)
    return [r + [""] * (width - len(r)) for r in grid]


def rows_to_markdown(rows: list[list[str]]) -> str:
    """A GitHub-style pipe table; the first row is the header."""
    if not rows:
        return ""
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
    width = len(rows[0])
    return "\n".join([line(rows[0]), "| " + " | ".join(["---"] * width) + " |"] + [line(r) for r in rows[1:]])


def rows_to_html(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table>{body}</table>"


def html_table_to_markdown(html: str) -> str:
    return rows_to_markdown(html_table_rows(html))
