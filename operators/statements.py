"""A line item's value at a fiscal year, found in the document's own tables.

`operators.formula` turns "what is the FY2016 working capital ratio? Define it as total current
assets divided by total current liabilities" into items ("total current assets" at 2016); this
module reads each one off the tables of the tree: the row whose label holds the item's words (by
stem, every one of them; the label with the fewest other words wins) and the column whose header
holds the year ("2016", "December 31, 2016", "January 28, 2023"). Every table of the document is
read, not only the ranked evidence: a ratio's two items are often on two statements.

Which table, when several print the row: a table under the heading of a statement the question
names or that prints the item ("Consolidated Balance Sheets", by `glossary.STATEMENT_TITLES`)
first, then the best label, then the earlier table (the statements precede the notes that repeat
their rows). A table declares its unit in its own text or its section's ("in millions", "(in
thousands)"); a value is kept with that scale so that items of two tables compute together.

An item named in other words than statements print it ("capex", "COGS", "PP&E", "revenue") is
also looked up by the line items `glossary.line_item_names` gives for it.
"""

from __future__ import annotations

import hashlib
import re
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from bookindex.core.model import DocumentTree, Node
from bookindex.core.pipe_tables import pipe_rows
from bookindex.core.quantities import CURRENCY, DIGITS, SCALE_WORD, YEAR, scale_factor
from bookindex.operators.formula import Item, Value
from bookindex.operators.glossary import STATEMENT_TITLES, line_item_names
from bookindex.operators.reader import _column_headers, _merge_units, _row_records, cell_value
from bookindex.providers.lexical import stem_words, word_stems

_SCALE = re.compile(rf"\bin\s+({SCALE_WORD}s)\b|\(\s*({SCALE_WORD}s)\b|\$\s*(?:in\s+)?(000|mm|m)\b", re.I)
_YEAR = re.compile(YEAR)
# names of amounts that may be negative: a result, a change, a balance of gains and losses
_SIGNED = re.compile(r"\b(?:net|change|increase|decrease|income|loss|gain|effect|earnings|profit|ebit|ebitda|"
                     r"margin|cash\s+flows?|deficit|surplus|balance)\b", re.I)
_JOINED = re.compile(r"\band\b|&(?!\w)|\bor\b", re.I)  # "and", "&", "or" joining two things; "PP&E" joins none
OWN_WORDS = 0.02  # what a row gains for holding the question's own name of the item, not a glossary one
MIN_FIT = 0.4  # a label at most 2.5 times as long as the item's name: a longer one is another line item
_TRAILING_SIGN = re.compile(rf"\s+[{CURRENCY}]$")
_ASIDE = re.compile(r"\([^()]*\)")  # "(used in)", "(loss)": an aside a label puts in brackets


@dataclass(frozen=True)
class _Row:
    label: str
    stems: frozenset[str]
    values: tuple[tuple[str, str], ...]  # (year, cell)

    @property
    def sequence(self) -> tuple[str, ...]:
        """The label's stems in order, an aside in brackets left out: "Net cash provided by (used
        in) operating activities" names the item "net cash provided by operating activities"."""
        return _stem_sequence(_ASIDE.sub(" ", self.label))


@dataclass(frozen=True)
class _Table:
    node_id: str
    page: int
    order: int
    statements: frozenset[str]  # the statements whose heading it is under
    scale: float
    rows: tuple[_Row, ...]


def _amount(cell: str) -> float | None:
    """A printed amount as a number: "(1,234)" and "−1,234" negative, "$" and "%" dropped."""
    if cell.strip() in ("—", "–", "-"):
        return 0.0
    s = cell.strip().replace("−", "-").replace("–", "-")
    s = "".join(ch for ch in s if ch not in f"{CURRENCY}%, ")
    neg = s.startswith("(") and s.endswith(")") or s.startswith("-")
    s = s.strip("()-")
    try:
        v = float(s)
    except ValueError:
        return None
    return -v if neg else v


def _statements_of(titles: list[str]) -> frozenset[str]:
    heads = [word_stems(t) for t in titles if t]
    return frozenset(st for st, alts in STATEMENT_TITLES.items()
                     if any(w and w <= h for h in heads for w in map(word_stems, alts)))


def _scale_of(texts: list[str]) -> float:
    for t in texts:
        m = _SCALE.search(t)
        if m:
            return scale_factor(next(g for g in m.groups() if g)) or 1.0
    return 1.0


def _year_columns(rows: list[list[str]], width: int) -> list[str]:
    """The year each column's header names ("" for none): the header rows are the rows before
    the first row with a number under a label, and the rows that hold only years."""
    headers = []
    for r in rows[:6]:
        if _row_records(r) and not all(_YEAR.fullmatch(c) for c in r if c and c[0].isdigit()):
            break
        headers.append(r)
    cols = _column_headers(headers, width)
    out = []
    for c in cols:
        ys = _YEAR.findall(c)
        out.append(ys[-1] if len(set(ys)) == 1 else "")
    return out


# the tables of each tree in use, dropped with the tree
_CACHE: weakref.WeakKeyDictionary[DocumentTree, tuple[_Table, ...]] = weakref.WeakKeyDictionary()
# where a tree's tables were stored when it was indexed (`offer_stored`): the records, or None
_STORED: weakref.WeakKeyDictionary[DocumentTree, Callable[[], Any]] = weakref.WeakKeyDictionary()


def tables(tree: DocumentTree) -> tuple[_Table, ...]:
    """Every table of `tree` read into rows of (year, cell) by column (cached per tree): the
    stored copy where the tree's folder offers one of this code (`offer_stored`), else read from
    the tree (tens of milliseconds on a filing: most of a first question's open of it)."""
    hit = _CACHE.get(tree)
    if hit is None:
        load = _STORED.pop(tree, None)
        stored = from_records(load()) if load is not None else None
        hit = _CACHE[tree] = stored if stored is not None else _tables(tree)
    return hit


def offer_stored(tree: DocumentTree, load: Callable[[], Any]) -> None:
    """`load()` gives the records (`to_records`) stored with `tree` when it was indexed, or None:
    read on the tree's first `tables` call instead of reading every table again."""
    _STORED[tree] = load


@lru_cache(maxsize=1)
def reader_fingerprint() -> str:
    """sha256 of the source of every module that decides how tables are read into rows: stored
    records of other code are read again, never trusted (the fingerprint of no source is "")."""
    digest = hashlib.sha256()
    for module in ("bookindex.operators.statements", "bookindex.operators.reader", "bookindex.operators.glossary",
                   "bookindex.core.pipe_tables", "bookindex.core.quantities", "bookindex.providers.lexical"):
        path = getattr(sys.modules.get(module), "__file__", None)
        try:
            digest.update(Path(path).read_bytes() if path else b"")
        except OSError:
            return ""
    return digest.hexdigest()


def to_records(found: tuple[_Table, ...]) -> dict[str, Any]:
    """The tables as plain JSON data, marked with the code that read them (`reader_fingerprint`)."""
    return {"reader": reader_fingerprint(),
            "tables": [[t.node_id, t.page, t.order, sorted(t.statements), t.scale,
                        [[r.label, sorted(r.stems), [list(v) for v in r.values]] for r in t.rows]] for t in found]}


def from_records(data: Any) -> tuple[_Table, ...] | None:
    """`to_records`' tables again; None when they were read by other code or are malformed."""
    if not isinstance(data, dict) or not data.get("reader") or data["reader"] != reader_fingerprint():
        return None
    try:
        return tuple(_Table(str(nid), int(page), int(order), frozenset(sts), float(scale),
                            tuple(_Row(label, frozenset(stems), tuple((y, c) for y, c in values))
                                  for label, stems, values in rows))
                     for nid, page, order, sts, scale, rows in data["tables"])
    except (KeyError, TypeError, ValueError):
        return None


_MONTH_DAY = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b,?", re.I)
_AMOUNT_TEXT = rf"(?:(?:\$\s?)?\(?-?\$?\s?{DIGITS}\)?%?|[—–](?=\s|$))"  # a dash: nothing


def year_line(text: str, least: int = 2) -> tuple[str, ...]:
    """The years a short line of column heads lists in order ("December 31, 2018 2017", "(Millions)
    2018 2017 2016"), at least `least` of them; () for any other text, a sentence that mentions
    years among them."""
    if len(text) > 160:
        return ()
    years = tuple(dict.fromkeys(_YEAR.findall(text)))
    rest = _YEAR.sub(" ", _MONTH_DAY.sub(" ", text))
    return years if least <= len(years) <= 6 and not re.search(r"\d", rest) else ()


_NUMERIC_WORD = re.compile(rf"\$?\(?-?\$?{DIGITS}\)?%?|[—–]")


@lru_cache(maxsize=8)
def _text_run(n: int) -> re.Pattern[str]:
    """A label of at most 120 characters, then `n` amounts, then the next label or the end."""
    return re.compile(rf"(?P<label>[A-Za-z](?:[A-Za-z,.'’&/:;\s-]|\([A-Za-z ]+\)){{0,120}}?)\s*"
                      rf"(?P<nums>(?:{_AMOUNT_TEXT}\s*){{{n}}})(?=\s*[A-Za-z]|\s*$)")


def _text_rows(text: str, years: tuple[str, ...]) -> list[_Row]:
    """The rows of the statement whose years are `years` that a text block prints: a label and
    as many amounts as years, one to a line or run together ("Cash and cash equivalents $ 1,677.8
    $ 450.0 Receivables 1,615.1 1,679.7 ...", a statement the layout parser read as prose)."""
    n = len(years)
    words = text.split()
    amounts = sum(1 for w in words if _NUMERIC_WORD.fullmatch(w))
    if amounts < n or amounts < 0.15 * len(words):  # prose that mentions a few numbers
        return []
    run = _text_run(n)
    out = []
    for m in run.finditer(" ".join(words)):
        nums = [x.replace(" ", "") for x in re.findall(_AMOUNT_TEXT, m.group("nums"))]
        label = m.group("label").strip(" $:;,").lower()
        if len(nums) == n and label:
            out.append(_Row(label, label_stems(label), tuple(zip(years, nums))))
    return out


# a new label inside a cell: a capitalised word after a word in lower case ("... expenses Research, ...")
_LABEL_START = re.compile(r"(?<=[a-z)]) (?=[A-Z][a-z])")


def _unstack(row: list[str]) -> list[list[str]]:
    """Rows the layout parser stacked into one: a label cell holding k labels and every value
    cell k amounts ("Selling, general and administrative expenses Research, development and
    related expenses | 7,602 1,821 | 6,626 1,870") are k rows, each amount under its column."""
    label_at = next((j for j, c in enumerate(row) if c and not _NUMERIC_WORD.fullmatch(c.split()[0])), None)
    if label_at is None:
        return [row]
    values = [(j, c.split()) for j, c in enumerate(row) if j != label_at and c]
    counts = {len(v) for _, v in values}
    if len(counts) != 1 or (k := counts.pop()) < 2 or not all(_NUMERIC_WORD.fullmatch(w) for _, v in values for w in v):
        return [row]
    labels = _LABEL_START.split(row[label_at])
    if len(labels) != k:
        return [row]
    out = []
    for i in range(k):
        part = list(row)
        part[label_at] = labels[i]
        for j, v in values:
            part[j] = v[i]
        out.append(part)
    return out


def _table_rows_read(node_content: str, listed: tuple[str, ...]) -> tuple[list[_Row], tuple[str, ...]]:
    """A table's rows by year: by its header's years, else by the years `listed` above it, each
    row's amounts in order. Returns the rows and the years the table reads."""
    # "Net sales $ | 32,765 $ | 31,657": a currency sign the parser left at a cell's end is the next cell's
    rows = [_merge_units([_TRAILING_SIGN.sub("", c) for c in r]) for r in pipe_rows(node_content)]
    rows = [part for r in rows for part in _unstack(r)]
    if len(rows) < 2:
        return [], listed
    years = _year_columns(rows, max(len(r) for r in rows))
    read: list[_Row] = []
    # the last row of words alone, the sums by year of the rows under it, and how many they are
    heading, summed = "", 0
    since: dict[str, float] = {}

    def by_year(recs: list[tuple[int, str, str]]) -> tuple[tuple[str, str], ...]:
        if any(years):
            return tuple((years[j], cell) for j, cell, _ in recs if j < len(years) and years[j])
        if listed and len(recs) == len(listed):
            return tuple((y, cell) for y, (_, cell, _) in zip(listed, recs))
        return ()

    for r in rows:
        recs = _row_records(r)
        if not recs:
            words = [c for c in r if c.strip() and not cell_value(c)]
            if any(cell_value(c) for c in r) and all(len(c.strip()) == 1 and c.strip() in CURRENCY for c in words):
                # a row of amounts alone closing the rows under a heading ("Revenues" ... "| | 9,680,140"):
                # their total, when it is their sum to within one printed unit a row (each was rounded)
                vals = by_year([(j, cell_value(c), heading) for j, c in enumerate(r) if c and cell_value(c)])
                if heading and vals and summed >= 2 and all(
                        (v := _amount(cell)) is not None and y in since and abs(v - since[y]) <= summed
                        for y, cell in vals):
                    label = f"total {heading}"
                    read.append(_Row(label, label_stems(label), vals))
                heading, since, summed = "", {}, 0
            elif words:
                heading, since, summed = " ".join(words).lower(), {}, 0
            continue
        vals = by_year(recs)
        if vals:
            read.append(_Row(recs[0][2], label_stems(recs[0][2]), vals))
            for y, cell in vals:
                since[y] = since.get(y, 0.0) + (_amount(cell) or 0.0)
            summed += 1
    return read, (tuple(dict.fromkeys(y for y in years if y)) if any(years) else listed)


def _level(tree: DocumentTree, node: Node) -> int:
    """The level of the heading `node` is under (its own, for a heading)."""
    if node.type == "section":
        return node.level
    parent = tree.nodes.get(node.parent) if node.parent else None
    return parent.level if parent is not None else 0


def _tables(tree: DocumentTree) -> tuple[_Table, ...]:
    out: list[_Table] = []
    # a statement often sets its column years above its table as a line of text ("December 31,
    # 2018 2017"): each row's amounts are those years in order, in the tables and text rows that
    # follow under the same heading ("Total net revenues 6,489 7,500 7,017"). The years may be
    # blocks of their own one after the other ("February 2, 2019", "February 3, 2018"), or
    # headings the layout parser made of them ("May 31, 2020"), which do not end the statement.
    listed: tuple[str, ...] = ()
    # one-year blocks: (right edge, reading position, year); None for a block without a box. Column
    # heads are set right-aligned over their numbers, and a head run into other words ("2017 (In
    # millions, ...)") still ends at its column's right edge
    single: list[tuple[float | None, int, str]] = []
    scale_text = ""
    depth, years_page = 0, 0  # the level of the heading the years were set under, and their page
    context: list[str] = []  # the titles of the last heading that is not a date, and above it
    for order, node in enumerate(tree.walk()):
        if node.type == "document":
            continue
        content = node.content
        ys = year_line(node.title if node.type == "section" else content, least=1) \
            if node.type in ("section", "text") else ()
        if len(ys) == 1:
            single.append((node.bbox[2] if node.bbox else None, len(single), ys[0]))
            if len(single) >= 2:
                # a statement's years run in order; when the parser read their blocks in no order of
                # years, the blocks' right edges give the columns left to right
                read_order = [y for _, _, y in single]
                monotonic = read_order in (sorted(read_order), sorted(read_order, reverse=True))
                boxed = all(x is not None for x, _, _ in single)
                ordered = single if monotonic or not boxed else sorted(single, key=lambda b: (b[0] or 0.0, b[1]))
                listed = tuple(dict.fromkeys(y for _, _, y in ordered))
                depth, years_page = _level(tree, node), node.page_idx
            continue
        single = []
        if ys:
            listed = ys
            scale_text = content if _SCALE.search(content) else scale_text
            depth, years_page = _level(tree, node), node.page_idx
            continue
        if node.type == "section":
            # a short heading inside a statement ("Assets", "Current liabilities") keeps its years, which
            # the parser may set at any level; a statement's title, a long heading or a later page ends them
            if (not listed or node.level < depth or _statements_of([node.title]) or len(node.title.split()) > 6
                    or node.page_idx > years_page + 1):
                listed, scale_text, depth = (), "", 0
            context = [p.title for p in tree.parent_path(node) if p.title] + [node.title]
            continue
        if node.type == "table":
            rows, listed = _table_rows_read(content, listed)
        elif node.type == "text":
            if _SCALE.search(content[:200]) and len(content) < 200:
                scale_text = content
            rows = _text_rows(content, listed) if listed else []
        else:
            continue
        if not rows:
            continue
        titles = [p.title for p in tree.parent_path(node) if p.title]
        scale = _scale_of([content[:400], scale_text, *reversed(titles), *reversed(context)])
        statements = _statements_of(titles) | _statements_of(context)
        out.append(_Table(node.id, node.page_idx + 1, order, statements, scale, tuple(rows)))
    return tuple(out)


@lru_cache(maxsize=1024)
def _names(name: str) -> tuple[tuple[frozenset[str], bool], ...]:
    """The stems of `name` and of what statements call it, each with whether it joins two things
    ("property, plant and equipment")."""
    return tuple(dict.fromkeys((label_stems(n), bool(_JOINED.search(n))) for n in (name, *line_item_names(name))
                               if label_stems(n)))


# the function words a row label and an item's name may differ by; "other", "total", "net" are not
# among them: "other current liabilities" is not "current liabilities"
_FUNCTION_WORDS = frozenset("a an the of and or to for in on by from with at as its their".split())


@lru_cache(maxsize=8192)
def _stem_sequence(label: str) -> tuple[str, ...]:
    """The stems of a label's words, in order, function words left out."""
    words = [w for w in re.findall(r"[a-z0-9]+(?:[&'’][a-z0-9]+)*", label.lower()) if w not in _FUNCTION_WORDS]
    return tuple(stem_words(words))


def label_stems(text: str) -> frozenset[str]:
    return frozenset(_stem_sequence(text))


def _fit(name: frozenset[str], joined: bool, row: _Row) -> float:
    """How well a row's label names the item whose stems are `name`: the share of the label's
    stems that are the item's, 0 unless the label holds them all, next to each other ("total
    current liabilities" is not "total liabilities"), and joins no second item to them ("total
    liabilities and stockholders' equity") unless the item's own name does."""
    if not name <= row.stems or (not joined and _JOINED.search(row.label)):
        return 0.0
    at = [k for k, st in enumerate(row.sequence) if st in name]
    if at and at[-1] - at[0] + 1 > len(at):
        return 0.0
    share = len(name) / len(row.stems | name)
    # "total current liabilities" before "other current liabilities": the row that sums the item
    return share + 0.01 if row.stems - name == {"total"} else share


def find(tree: DocumentTree, item: Item, statements: frozenset[str] = frozenset()) -> Value | None:
    """The value of `item` at its year in the tables of `tree`; None when no row names it in a
    column of that year. `statements`: the statements the question names or that print its terms
    (`glossary`), whose tables are read first; an item's own "from the ... statement" too."""
    if not item.year:
        return None
    wanted = set(statements)
    if item.statement:
        wanted |= _statements_of([item.statement])
    names = _names(item.name)
    best: tuple[tuple[float, float, int], _Table, _Row, str] | None = None
    for t in tables(tree):
        for r in t.rows:
            # the question's own words first, then what statements call the item
            fit = max((_fit(n, joined, r) + (OWN_WORDS if k == 0 else 0.0) for k, (n, joined) in enumerate(names)),
                      default=0.0)
            if fit < MIN_FIT:
                continue
            cells = [c for y, c in r.values if y == item.year and _amount(c) is not None]
            if not cells:
                continue
            key = (1.0 if wanted and t.statements & wanted else 0.5 if t.statements else 0.0, fit, -t.order)
            if best is None or key > best[0]:
                best = (key, t, r, cells[0])
    if best is None:
        return None
    _, t, r, cell = best
    amount = _amount(cell)
    assert amount is not None
    if amount < 0 and not _SIGNED.search(item.name):
        # a statement prints an outflow or an expense in brackets by its convention ("(848)" interest
        # expense, "(1,577)" purchases of equipment); "capex" or "interest expense" names its size
        amount = -amount
    return Value(amount, cell, r.label, item.year, t.node_id, t.page, t.scale)
