#!/usr/bin/env python
"""The libraries measured for bookindex.core.quantities and bookindex.core.pipe_tables.

    python scripts/bench_lexicon.py                       # number words only
    python scripts/bench_lexicon.py /tmp/idx-a /tmp/idx-b # and pipe tables of these libraries

Number words: the table of words up to ninety-nine the reader kept before (`table_number`,
copied here as the baseline), text2num (what `core.quantities.word_number` calls) and
word2number (when installed), each on the cases below: right answers and microseconds a call.
Pipe tables: every table node of each library's stored trees read by `core.pipe_tables` and by
markdown-it-py's table rule: tables read alike, tables whose cells differ, tables read from their
third line on (a passage that starts inside a table, without the header rule) that each still
reads, and microseconds a table.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from markdown_it import MarkdownIt  # noqa: E402

from bookindex.core.model import DocumentTree  # noqa: E402
from bookindex.core.pipe_tables import pipe_tables  # noqa: E402
from bookindex.core.quantities import TENS, UNITS, spelled_number  # noqa: E402

# (text, the digits a count answer becomes; "" where the text is no whole number)
CASES = [("nine", "9"), ("zero", "0"), ("Eleven", "11"), ("nineteen", "19"), ("twenty", "20"),
         ("twenty-one", "21"), ("Twenty One", "21"), ("ninety nine", "99"), ("forty-two", "42"),
         ("one hundred", "100"), ("two hundred and five", "205"), ("three thousand", "3000"),
         ("Two-thirds", ""), ("one-third", ""), ("half", ""), ("first", ""), ("second", ""),
         ("none", ""), ("one of them", ""), ("twenty twenty", ""), ("nine eleven", ""),
         ("a dozen", ""), ("several", ""), ("ten percent", ""), ("one two", ""), ("the", ""),
         ("once", ""), ("seventh", ""), ("million", ""), ("two million", "2000000"),
         ("twelve", "12"), ("thirteen", "13"), ("fifty", "50"), ("sixty-six", "66"), ("twenty-zero", "")]


def table_number(text: str) -> str:
    """The reader's number-word table before core.quantities (the baseline)."""
    words = re.split(r"[\s-]+", text.strip().lower())
    if not 1 <= len(words) <= 2:
        return ""
    if len(words) == 1 and words[0] in UNITS:
        return str(UNITS.index(words[0]))
    if words[0] in TENS and (len(words) == 1 or words[1] in UNITS[1:10]):
        return str(20 + 10 * TENS.index(words[0]) + (UNITS.index(words[1]) if len(words) == 2 else 0))
    return ""


def _word2number() -> Callable[[str], str] | None:
    try:
        from word2number import w2n  # type: ignore[import-not-found]
    except ImportError:
        return None

    def read(text: str) -> str:
        try:
            return str(w2n.word_to_num(text))
        except ValueError:
            return ""
    return read


def number_words() -> None:
    readers = {"hand-written table": table_number, "text2num (core.quantities)": spelled_number,
               "word2number": _word2number()}
    print("| number words | right | wrong | µs a call |\n|---|---|---|---|")
    for name, read in readers.items():
        if read is None:
            print(f"| {name} | not installed | | |")
            continue
        wrong = [t for t, want in CASES if read(t) != want]
        t0 = time.perf_counter()
        for _ in range(100):
            for t, _want in CASES:
                read(t)
        us = (time.perf_counter() - t0) / (100 * len(CASES)) * 1e6
        print(f"| {name} | {len(CASES) - len(wrong)}/{len(CASES)} | {', '.join(wrong)} | {us:.1f} |")


def markdown_it_tables(text: str, md: MarkdownIt = MarkdownIt("commonmark").enable("table")) -> list[list[list[str]]]:
    """The tables markdown-it-py's table rule reads in `text`, as rows of cell texts."""
    out: list[list[list[str]]] = []
    rows: list[list[str]] = []
    row: list[str] | None = None
    for t in md.parse(text):
        if t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append(t.content.strip())
        elif t.type == "tr_close" and row is not None:
            rows.append(row)
            row = None
        elif t.type == "table_close":
            out.append(rows)
            rows = []
    return out


def _timed(read: Callable[[str], object], texts: list[str]) -> float:
    t0 = time.perf_counter()
    for t in texts:
        read(t)
    return (time.perf_counter() - t0) / max(1, len(texts)) * 1e6


def pipe_table_readers(library: Path) -> None:
    texts = [n.content for f in sorted(library.glob("docs/*/tree.json"))
             for n in DocumentTree.from_dict(json.loads(f.read_text())).walk() if n.type == "table" and "|" in n.content]
    same = sum(pipe_tables(t) == markdown_it_tables(t) for t in texts)
    cut = ["\n".join(t.splitlines()[2:]) for t in texts if len(t.splitlines()) > 3]
    print(f"| {library.name} | {len(texts)} | {same} | {len(texts) - same} | {len(cut)}: "
          f"{sum(bool(pipe_tables(t)) for t in cut)} / {sum(bool(markdown_it_tables(t)) for t in cut)} | "
          f"{_timed(pipe_tables, texts):.0f} / {_timed(markdown_it_tables, texts):.0f} |")


def main() -> int:
    number_words()
    if sys.argv[1:]:
        print("\n| library | tables | same cells | cells differ | cut tables read (ours / markdown-it) | µs a table (ours / markdown-it) |")
        print("|---|---|---|---|---|---|")
        for lib in sys.argv[1:]:
            pipe_table_readers(Path(lib))
    return 0


if __name__ == "__main__":
    sys.exit(main())
