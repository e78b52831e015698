"""How many columns or rows a table has, read from its grid: "How many columns does Table 2
have?", "how many rows does the largest table in the appendix contain?".

The table is the one the question names by its label, else the only table of the question's
range, else the one a size superlative picks ("largest" / "smallest": by the area of its box on
the page). Columns and rows count only where they hold text: a parser's empty spacer columns
(a cell under a spanning header, a gutter) are layout, not columns of the table, and so is a
gutter holding a few cells of text drawn off the edge of the column beside it. Rows are the rows
below the header row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bookindex.core.model import DocumentTree, Node
from bookindex.core.pipe_tables import pipe_rows
from bookindex.operators.lookup import named_part
from bookindex.providers.nlp import english_if_installed

# "how many columns / rows" of a table the question also names
_SHAPE = re.compile(r"\bhow many\s+(columns?|rows?)\b", re.I)
_TABLE = re.compile(r"\btables?\b", re.I)
# the size a superlative asks for: its lemma's direction (bigger or smaller box)
_LARGER = ("large", "big", "wide", "long", "tall")
_SMALLER = ("small", "little", "narrow", "short")
SPILL_SHARE = 0.1  # a column with text in fewer of the rows may be a gutter's spill (`_spilled`)


@dataclass(frozen=True)
class Shape:
    """A table's extent: the rows below its header and the columns, each holding text."""

    rows: int
    columns: int


def asked_dimension(question: str) -> str | None:
    """'columns' or 'rows' when the question asks how many a table has, else None."""
    m = _SHAPE.search(question)
    if not m or not _TABLE.search(question):
        return None
    return "columns" if m.group(1).lower().startswith("column") else "rows"


def grid(node: Node) -> list[list[str]]:
    """The table's cells row by row, from its Markdown text (separator lines dropped)."""
    return pipe_rows(node.text)


def shape(node: Node) -> Shape:
    """Rows (below the header) and columns that hold text, a gutter's spilled cells aside
    (`_spilled`)."""
    rows = grid(node)
    if not rows:
        return Shape(0, 0)
    width = max(len(r) for r in rows)
    columns = sum(any(j < len(r) and r[j] for r in rows) and not _spilled(rows, j) for j in range(width))
    body = sum(any(c for c in r) for r in rows[1:])
    return Shape(body, columns)


def _spilled(rows: list[list[str]], j: int) -> bool:
    """Column j is a gutter the parser split off a column: text in few of the rows (under
    SPILL_SHARE of those holding any), each time beside an empty cell of a neighbouring column
    in the same row (the words belong to that column, drawn a little off its edge)."""
    filled = [r for r in rows if any(r)]
    mine = [r for r in filled if j < len(r) and r[j]]
    if not mine or len(mine) >= SPILL_SHARE * len(filled):
        return False
    return all(any(0 <= k < len(r) and not r[k] for k in (j - 1, j + 1)) for r in mine)


def _size_direction(question: str) -> int:
    """+1 for "largest"-like superlatives, -1 for "smallest"-like, 0 for none (spaCy's tags)."""
    nlp = english_if_installed()
    if nlp is None:
        return 0
    for tok in nlp(question):
        if tok.tag_ in ("JJS", "RBS"):
            if tok.lemma_.lower() in _LARGER or tok.lower_.removesuffix("est") in _LARGER:
                return 1
            if tok.lemma_.lower() in _SMALLER or tok.lower_.removesuffix("est") in _SMALLER:
                return -1
    return 0


def _area(n: Node) -> float:
    b = n.bbox
    return float((b[2] - b[0]) * (b[3] - b[1])) if b else 0.0


def pick_table(tree: DocumentTree, question: str, candidates: list[str]) -> tuple[Node, str] | None:
    """The table the question asks about and how it was chosen; None when it names none and
    the candidates hold several tables with no superlative to choose by."""
    part = named_part(tree, question)
    if part is not None and tree.nodes[part.node_id].type == "table":
        return tree.nodes[part.node_id], part.label
    tables = [tree.nodes[i] for i in candidates if tree.nodes[i].type == "table"]
    if len(tables) == 1:
        return tables[0], "the only table"
    direction = _size_direction(question) if tables else 0
    if direction:
        best = max(tables, key=lambda n: direction * _area(n))
        return best, f"the {'largest' if direction > 0 else 'smallest'} of {len(tables)} tables by area"
    return None
