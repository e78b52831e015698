"""The arithmetic a question asks of a document's figures, read from the question itself.

"What is the FY2016 working capital ratio? Define working capital ratio as total current assets
divided by total current liabilities", "what is current liabilities to total liabilities for
COSTCO in FY2021?", "the FY2015 - FY2017 3 year average net profit margin", "the year-over-year
change in revenue from FY2016 to FY2017": the answer is printed on no page; it is computed from
line items that are. An extractive reader can only quote a span, so without an LLM these
questions went unanswered. This module turns the question into an expression over line items
and fiscal years (`formula`); `operators.statements` finds each item's value in the document's
tables, and `evaluate` computes the result with every value it used.

What the question says decides the expression, in this order:
- a definition the question gives ("X is defined as: E", "Define X as E"), E read as arithmetic
  over phrases (`+ - * /`, "divided by", "plus", "minus", "times", brackets, numbers); a phrase
  that another definition names is replaced by that definition ("CCC is defined as DIO + DSO -
  DPO. DIO is defined as ...");
- "A to B ratio" / "ratio of A to B" (A / B), "A as a % of B" (A / B, in percent), "X margin"
  (X over revenue, in percent), "growth rate" / "change in X from FY a to FY b" (relative change
  of an amount, the difference of a ratio), "an N year average of M" over the years named.
A phrase inside an expression may carry its own years: "average X between FY a and FY b" (the
mean of both), "change in X between FY a and FY b" (the later less the earlier), "FY2019 X".
Anything else is not a computed question, and `formula` returns None.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from bookindex.core.quantities import (
    CURRENCY,
    FISCAL_PREFIX,
    FISCAL_YEAR,
    SCALE_WORD,
    UNITS,
    YEAR,
    YEAR_MAYBE_FISCAL,
    scale_factor,
    scale_name,
    word_number,
)

# "FY2015 - FY2017", "FY2019 – FY2020", "between FY2018 and FY2019", "from FY2016 to FY2017"
_RANGE = re.compile(rf"(?:\bbetween\s+|\bfrom\s+)?\b{FISCAL_PREFIX}?({YEAR})\s*"
                    rf"(?:-|–|—|\bto\b|\band\b|\bthrough\b)\s*{FISCAL_PREFIX}?({YEAR})\b", re.I)
_DECIMALS = re.compile(r"\bround\w*\s+(?:\w+\s+){0,3}?to\s+(?:the\s+)?(\w+)\s+decimal", re.I)
_ASKED_SCALE = re.compile(rf"\b(?:in\s+(?:units\s+of\s+)?(?:usd|us\$|\$)?\s*|usd\s+)({SCALE_WORD}s)\b", re.I)
_PERCENT = re.compile(r"%|\bpercent(?:s|age)?\b", re.I)
# what a definition looks like: "DPO is defined as: E", "X here is defined as E", "Define X as E"
_DEFINED = re.compile(r"(?P<name>[^.:;?]{1,80}?)\s+(?:\w+\s+)?(?:is|are)\s+defined\s+as\s*:?\s*(?P<expr>.+)", re.I)
_DEFINE = re.compile(r"\bdefine\s+(?P<name>[^.:;?]{1,80}?)\s+as\s*:?\s*(?P<expr>.+)", re.I)
_SENTENCE_END = re.compile(r"(?<![\d.])[.?!](?=\s+[A-Z(]|\s*$)|\?")
_TOKEN = re.compile(r"\(|\)|\bdivided\s+by\b|\bmultiplied\s+by\b|\btimes\b|\bplus\b|\bminus\b|"
                    r"(?<=\s)[-–+*×x](?=\s)|/|(?<![\w.])\d+(?:\.\d+)?(?![\w.])", re.I)
_OPS = {"+": "+", "plus": "+", "-": "-", "–": "-", "minus": "-", "*": "*", "×": "*", "x": "*", "times": "*",
        "multiplied by": "*", "/": "/", "divided by": "/"}
# a clause naming the statement an item is read from: "from the cash flow statement"
_FROM_STATEMENT = re.compile(r"\s*\b(?:from|in|on|of)\s+the\s+([\w\s]{0,30}?(?:statements?|sheet))\b", re.I)
# words that frame a phrase without naming its line item
_FRAME = re.compile(r"^(?:the|a|an|annual|its|their|company's|total\s+amount\s+of)\s+|\s+(?:amount|balance|figure|value)$", re.I)
_AVERAGE = re.compile(r"^(?:the\s+)?average\s+(?:of\s+)?(?:the\s+)?(.+?)\s+(?:between|from|for)\s+(.+)$", re.I)
_CHANGE = re.compile(r"^(?:the\s+)?change\s+in\s+(?:the\s+)?(.+?)\s+(?:between|from)\s+(.+)$", re.I)
_LEADING_YEAR = re.compile(rf"^{FISCAL_PREFIX}({YEAR})\s+(.+)$", re.I)
_TRAILING_YEAR = re.compile(rf"^(.+?)\s+(?:in|for|of|at)\s+(?:the\s+)?{FISCAL_PREFIX}({YEAR})$", re.I)


@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Item:
    """A line item at a fiscal year ("" until the question's year is known), and the statement
    the question says it is read from ("" when it names none)."""

    name: str
    year: str = ""
    statement: str = ""


@dataclass(frozen=True)
class Op:
    op: str
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class Mean:
    parts: tuple["Expr", ...]


Expr = Num | Item | Op | Mean


@dataclass(frozen=True)
class Formula:
    """What to compute: `expr` over line items, in percent or not, rounded as asked."""

    expr: Expr
    percent: bool
    decimals: int | None
    what: str  # the question's name for the result ("working capital ratio")
    scale: float | None = None  # the unit an amount is asked in ("Answer in USD millions": 1e6)


@dataclass(frozen=True)
class Value:
    """A line item's value as the document prints it: the number, its cell, where it is."""

    amount: float
    cell: str
    label: str
    year: str
    node_id: str
    page: int
    scale: float = 1.0  # the unit the table declares ("in millions": 1e6)


@dataclass
class Result:
    value: float
    used: list[tuple[Item, Value]] = field(default_factory=list)


Lookup = Callable[[Item], Value | None]


def _sentences(text: str) -> list[str]:
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append(text[start:m.end()].strip())
        start = m.end()
    if text[start:].strip():
        out.append(text[start:].strip())
    return [s for s in out if s]


def _norm(phrase: str) -> str:
    return " ".join(phrase.lower().replace("’", "'").split()).strip(" .,:;?()")


def definitions(question: str) -> dict[str, str]:
    """The names the question defines and the expression text of each, in order."""
    out: dict[str, str] = {}
    for s in _sentences(question):
        m = _DEFINE.search(s) or _DEFINED.search(s)
        if not m:
            continue
        name = _norm(re.sub(r"^(?:and|then|here|where|with)\s+", "", m.group("name").strip(), flags=re.I))
        expr = m.group("expr").strip().rstrip(".?! ")
        full = re.sub(r"\s*\(([A-Za-z&]{2,6})\)\s*$", "", name)  # "days payable outstanding (dpo)"
        for key in {name, full, *re.findall(r"\(([a-z&]{2,6})\)", name)}:
            out.setdefault(_norm(key), expr)
    return out


def _years(text: str) -> list[str]:
    return [m.group(1) for m in YEAR_MAYBE_FISCAL.finditer(text)]


def _year_span(text: str) -> list[str]:
    """The years a range names, both ends included ("FY2015 - FY2017": 2015, 2016, 2017)."""
    m = _RANGE.search(text)
    if not m:
        return _years(text)
    a, b = sorted((int(m.group(1)), int(m.group(2))))
    return [str(y) for y in range(a, b + 1)] if b - a <= 10 else [str(a), str(b)]


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        if text[pos:m.start()].strip():
            out.append(text[pos:m.start()].strip())
        tok = m.group(0)
        out.append(_OPS.get(" ".join(tok.lower().split()), tok))
        pos = m.end()
    if text[pos:].strip():
        out.append(text[pos:].strip())
    # a phrase token next to a phrase token is one phrase; "x" between two words is a letter
    merged: list[str] = []
    for t in out:
        if merged and not _is_syntax(t) and not _is_syntax(merged[-1]):
            merged[-1] = f"{merged[-1]} {t}"
        else:
            merged.append(t)
    return merged


def _is_syntax(tok: str) -> bool:
    return tok in ("(", ")", "+", "-", "*", "/") or bool(re.fullmatch(r"\d+(?:\.\d+)?", tok))


class _Parser:
    """Arithmetic over phrases: expr := term (('+'|'-') term)*; term := factor (('*'|'/') factor)*;
    factor := number | '(' expr ')' | phrase."""

    def __init__(self, tokens: list[str], phrase: Callable[[str], Expr | None]) -> None:
        self.toks, self.i, self.phrase = tokens, 0, phrase

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> str:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expr(self) -> Expr | None:
        return self._chain(("+", "-"), self.term)

    def term(self) -> Expr | None:
        return self._chain(("*", "/"), self.factor)

    def _chain(self, ops: tuple[str, str], operand: Callable[[], Expr | None]) -> Expr | None:
        """Operands joined by `ops`, left to right."""
        left = operand()
        while left is not None and self.peek() in ops:
            op = self.take()
            right = operand()
            if right is None:
                return None
            left = Op(op, left, right)
        return left

    def factor(self) -> Expr | None:
        tok = self.peek()
        if tok is None or tok in (")", "+", "*", "/"):
            return None
        self.take()
        if tok == "-":
            inner = self.factor()
            return Op("-", Num(0.0), inner) if inner is not None else None
        if tok == "(":
            inner = self.expr()
            if self.peek() != ")":
                return None
            self.take()
            return inner
        if re.fullmatch(r"\d+(?:\.\d+)?", tok):
            return Num(float(tok))
        return self.phrase(tok)


def parse_expression(text: str, defs: dict[str, str], depth: int = 0) -> Expr | None:
    """An expression from its text; None when it does not parse or names nothing."""
    parser = _Parser(_tokens(text), lambda p: _phrase(p, defs, depth))
    out = parser.expr()
    return out if out is not None and parser.peek() is None else None


def _phrase(text: str, defs: dict[str, str], depth: int) -> Expr | None:
    """A phrase of an expression: a defined name, "average X between FY a and FY b", "change in X
    between ...", "FY2019 X", "X in FY2019", or a line item."""
    statement = ""
    m = _FROM_STATEMENT.search(text)
    if m:
        statement, text = _norm(m.group(1)), (text[:m.start()] + text[m.end():]).strip()
    key = _norm(text)
    if key in defs and depth < 4:
        return parse_expression(defs[key], defs, depth + 1)
    m = _AVERAGE.match(key)
    if m:
        years = _year_span(m.group(2))
        inner = _phrase(m.group(1), defs, depth)
        return Mean(tuple(at_year(inner, y) for y in years)) if inner is not None and len(years) >= 2 else None
    m = re.match(r"^average\s+(?:of\s+)?(?:the\s+)?(.+)$", key)
    if m:  # "average long-term debt": of the year asked and the one before
        inner = _phrase(m.group(1), defs, depth)
        return Mean((at_year(inner, "@-1"), at_year(inner, "@0"))) if inner is not None else None
    m = _CHANGE.match(key)
    if m:
        years = _year_span(m.group(2))
        inner = _phrase(m.group(1), defs, depth)
        return Op("-", at_year(inner, years[-1]), at_year(inner, years[0])) \
            if inner is not None and len(years) >= 2 else None
    m = _LEADING_YEAR.match(key)
    if m:
        inner = _phrase(m.group(2), defs, depth)
        return at_year(inner, m.group(1)) if inner is not None else None
    m = _TRAILING_YEAR.match(key)
    if m:
        inner = _phrase(m.group(1), defs, depth)
        return at_year(inner, m.group(2)) if inner is not None else None
    name = key
    while True:
        trimmed = _FRAME.sub("", name).strip()
        if trimmed == name:
            break
        name = trimmed
    if not re.search(r"[a-z]", name) or len(name) > 80:
        return None
    return Item(name, "", statement)


def at_year(expr: Expr, year: str) -> Expr:
    """`expr` with every item that names no year of its own read at `year`."""
    if isinstance(expr, Item):
        if expr.year.startswith("@") and year.isdigit():  # a year relative to the one asked
            return Item(expr.name, str(int(year) + int(expr.year[1:])), expr.statement)
        return expr if expr.year else Item(expr.name, year, expr.statement)
    if isinstance(expr, Op):
        return Op(expr.op, at_year(expr.left, year), at_year(expr.right, year))
    if isinstance(expr, Mean):
        return Mean(tuple(at_year(p, year) for p in expr.parts))
    return expr


def _divides(expr: Expr) -> bool:
    return (isinstance(expr, Op) and (expr.op == "/" or _divides(expr.left) or _divides(expr.right))) or \
        (isinstance(expr, Mean) and any(_divides(p) for p in expr.parts))


# the metric a question asks for, by the words around it
_RATIO_TO = re.compile(r"(?:what\s+(?:is|was|are|were)\s+)?(?:the\s+)?(?P<a>[\w&'’,\s-]+?)\s+to\s+"
                       r"(?P<b>[\w&'’\s-]+?)\s+ratio\b", re.I)
_RATIO_OF = re.compile(r"\bratio\s+of\s+(?P<a>[\w&'’\s-]+?)\s+to\s+(?P<b>[\w&'’\s-]+?)(?=\s+(?:for|in|of|at|as)\b|[?.,]|$)", re.I)
_AS_SHARE = re.compile(r"(?P<a>[\w&'’\s-]+?)\s+as\s+an?\s+(?:%|percent(?:age)?)\s+of\s+(?:the\s+)?"
                       r"(?P<b>[\w&'’\s-]+?)(?=\s+(?:for|in|of|at|from)\b|[?.,]|$)", re.I)
# "using FY2022 Adjusted EBIT as the numerator and annual Interest Expense as the denominator"
_FRACTION = re.compile(r"\b(?:using|with|taking)\s+(?P<a>[\w&'’\s-]+?)\s+as\s+the\s+numerator\s+and\s+"
                       r"(?P<b>[\w&'’\s-]+?)\s+as\s+the\s+denominator", re.I)
_MARGIN = re.compile(r"(?P<a>[\w&'’\s-]+?)\s+(?:%\s*)?margins?\b(?=\s*(?:\(|for|in|of|at|from|change|[?.,]|$))", re.I)
_AVERAGE_OF = re.compile(rf"\b(?:\d+|{'|'.join(UNITS)})[\s-]+years?\s+average\s+(?:of\s+)?(?:the\s+)?"
                         r"(?P<m>.+?)(?=\s+(?:for|of|in|at)\s+(?-i:[A-Z0-9])|[?]|$)", re.I)
_GROWTH = re.compile(r"\b(?:(?:year[\s-]+over[\s-]+year|yoy|annual)\s+)?(?:percentage\s+)?(?:change|growth(?:\s+rate)?|increase|decrease)"
                     r"\s+(?:of|in)\s+(?:the\s+)?(?P<x>[\w&'’\s-]+?)\s+(?:from|between)\s+(?P<y>.+?)(?:[?.]|$)", re.I)
_GROWTH_RATE = re.compile(r"(?P<x>[\w&'’\s-]+?)\s+growth\s+rate\b", re.I)
_FRAME_WORDS = re.compile(r"^(?:(?:what|how|is|was|the|of|for|in|fy\s?\d{4}|fy|\d{4}|[-–]|\d+\s+years?|"
                          r"three|two|year|company's|its)\s+)+", re.I)


def _asking(question: str) -> str:
    """The sentence that asks: the one ending in a question mark, else the one opening with
    what/how/calculate, else the whole question."""
    sents = _sentences(question)
    for s in sents:
        if s.endswith("?") and not (_DEFINE.search(s) or _DEFINED.search(s)):
            return s
    for s in sents:
        if re.search(r"\b(?:what|how|calculate|compute)\b", s, re.I) and not (_DEFINE.search(s) or _DEFINED.search(s)):
            return s
    return question


def _clean(phrase: str) -> str:
    """A metric's words without the question's frame ("what is the FY2019", "Amazon's")."""
    p = phrase.strip()
    p = re.sub(r"^.*?\b(?:what\s+(?:is|was|are|were)|calculate|compute)\s+", "", p, flags=re.I)
    # "Amazon's ", "Best Buy's ", "MGM Resorts' "
    p = re.sub(r"^(?:[A-Z0-9][\w&.]*(?:\s[A-Z][\w&.]*)*(?:['’]s|(?<=s)['’])\s+)", "", p)
    p = _FRAME_WORDS.sub("", p)
    return _norm(p)


# a question that asks for a value ("what is", "how much", "calculate"), not a yes/no or a cause
_ASKS_VALUE = re.compile(r"\bwhat\s+(?:is|was|are|were|would\s+be)\b|\bwhat['’]s\b|\bhow\s+much\b|\bcalculate\b|\bcompute\b", re.I)
_YES_NO = re.compile(r"^\s*(?:did|does|do|is|was|were|are|has|have|had|can|could|will|would|should)\b", re.I)
_ITEM_ASKED = re.compile(r"\bwhat\s+(?:is|was|were|are)\s+(?:the\s+)?(?P<x>.+?)\s*\??$", re.I)


def _line_item(ask: str) -> Item | Op | None:
    """"What is the year end FY2019 total amount of inventories for Best Buy?": one line item
    at a fiscal year, asked in a filing's words (a year written "FY2019" or "fiscal 2019")."""
    if not FISCAL_YEAR.search(ask):
        return None
    m = _ITEM_ASKED.search(ask)
    if not m:
        return None
    x = re.sub(r"\([^)]*\)", " ", m.group("x"))  # "(in USD millions)"
    x = re.sub(r"\s+(?:for|of|at|by)\s+(?-i:[A-Z0-9]).*$", "", x, flags=re.I)  # "for Best Buy"
    x = re.sub(r"^(?:[A-Z0-9][\w&.]*(?:\s[A-Z][\w&.]*)*['’]s\s+)", "", x)
    x = FISCAL_YEAR.sub(" ", x)
    x = re.sub(r"\b(?:in|for|at)\s*$|\byear[\s-]+end(?:ed|ing)?\b|\b(?:total\s+)?amount(?:\s+of)?\b", " ", x, flags=re.I)
    parts = re.split(r"\s+to\s+", x.strip())
    # "current liabilities to total liabilities" is the first over the second; not "attributable to",
    # "related to": an adjective's or a participle's complement
    if len(parts) == 2 and not re.search(r"(?:able|ed|ing)$", parts[0]):
        a, b = (_phrase(p, {}, 0) for p in parts)
        return Op("/", a, b) if isinstance(a, Item) and isinstance(b, Item) else None
    found = _phrase(x, {}, 0)
    return found if isinstance(found, Item) and 1 <= len(found.name.split()) <= 8 else None


def _metric(text: str, defs: dict[str, str]) -> tuple[Expr, bool, bool] | None:
    """(expression, whether it is a share in percent by its wording, whether it is a ratio) of
    the metric `text` names."""
    named = text
    text = re.sub(r"\s*\([^()]*\)", "", text)  # "depreciation and amortization (D&A from cash flow statement) % margin"
    m = _AS_SHARE.search(text)
    if m:
        a, b = _phrase(_clean(m.group("a")), defs, 0), _phrase(_clean(m.group("b")), defs, 0)
        if a is not None and b is not None:
            return Op("/", a, b), True, True
    m = _RATIO_OF.search(text) or _RATIO_TO.search(text)
    if m:
        a, b = _phrase(_clean(m.group("a")), defs, 0), _phrase(_clean(m.group("b")), defs, 0)
        if a is not None and b is not None:
            return Op("/", a, b), False, True
    m = _FRACTION.search(text)
    if m:
        a, b = _phrase(_clean(m.group("a")), defs, 0), _phrase(_clean(m.group("b")), defs, 0)
        if a is not None and b is not None:
            return Op("/", a, b), False, True
    m = _MARGIN.search(text)
    if m:
        a = _phrase(_clean(m.group("a")), defs, 0)
        if a is not None:
            return Op("/", a, Item("revenue")), True, True
    key = f"{_clean(named)} | {_norm(named)}"
    for name, expr_text in defs.items():  # a defined metric named in the asking words
        if name and re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", key):
            expr = parse_expression(expr_text, defs)
            if expr is not None:
                return expr, False, _divides(expr)
    return None


def formula(question: str) -> Formula | None:
    """The computation `question` asks for, or None when it asks for none (module docstring)."""
    f = _formula(" ".join(question.split()))
    if f is None:
        return None
    m = _ASKED_SCALE.search(question)
    return replace(f, scale=scale_factor(m.group(1))) if m and not _divides(f.expr) else f


def _formula(q: str) -> Formula | None:
    defs = definitions(q)
    ask = _asking(q)
    if _YES_NO.match(ask) or not (defs or _ASKS_VALUE.search(ask)):
        return None  # "Did X increase ...?", "What drove ...?": no value is asked
    years = _years(ask) or _years(q)
    percent = bool(_PERCENT.search(q))
    m = _DECIMALS.search(q)
    decimals = None
    if m:
        d = m.group(1).lower()
        decimals = int(d) if d.isdigit() else word_number(d)
    m = _AVERAGE_OF.search(ask)
    if m:
        span = _year_span(ask)
        found = _metric(m.group("m"), defs)
        if found is None or len(span) < 2:
            return None
        expr, share, _ = found
        if not _divides(expr) and not share:
            percent = False
        return Formula(Mean(tuple(at_year(expr, y) for y in span)), percent or share, decimals,
                       _clean(m.group("m")))
    m = _GROWTH.search(ask)
    if m or re.search(r"\bgrowth\s+rate\b", ask, re.I):
        span = _year_span(m.group("y") if m else ask)
        rate = _GROWTH_RATE.search(ask)
        subject = m.group("x") if m else rate.group("x") if rate else ""
        if len(span) < 2 or not subject:
            return None
        found = _metric(subject, defs)
        a, b = span[0], span[-1]
        if found is not None and found[2]:  # the change of a ratio is the difference of its values
            expr = found[0]
            return Formula(Op("-", at_year(expr, b), at_year(expr, a)), percent or found[1], decimals,
                           _clean(subject))
        item = _phrase(_clean(subject), defs, 0)
        if item is None:
            return None
        later, earlier = at_year(item, b), at_year(item, a)
        growth = re.search(r"\bgrowth\b|%|percent", ask + q, re.I)
        expr = Op("/", Op("-", later, earlier), earlier) if growth else Op("-", later, earlier)
        return Formula(expr, bool(growth), decimals, _clean(subject))
    found = _metric(ask, defs)
    if found is None and defs:  # a question that defines a name asks for it
        defined = parse_expression(next(iter(defs.values())), defs)
        found = (defined, False, _divides(defined)) if defined is not None else None
    if found is None:
        item = _line_item(ask)
        if item is None or not years:
            return None
        ratio = isinstance(item, Op)
        return Formula(at_year(item, years[-1]), percent and ratio, decimals, _clean(ask))
    expr, share, ratio = found
    year = years[-1] if years else ""
    return Formula(at_year(expr, year) if year else expr, (percent and ratio) or share, decimals, _clean(ask))


def evaluate(expr: Expr, lookup: Lookup) -> Result | None:
    """The value of `expr` with each item's value from `lookup`; None when an item is not found
    or a division is by zero."""
    if isinstance(expr, Num):
        return Result(expr.value)
    if isinstance(expr, Item):
        v = lookup(expr)
        return Result(v.amount * v.scale, [(expr, v)]) if v is not None else None
    if isinstance(expr, Mean):
        parts = [evaluate(p, lookup) for p in expr.parts]
        if any(p is None for p in parts) or not parts:
            return None
        done = [p for p in parts if p is not None]
        return Result(sum(p.value for p in done) / len(done), [u for p in done for u in p.used])
    left, right = evaluate(expr.left, lookup), evaluate(expr.right, lookup)
    if left is None or right is None:
        return None
    used = left.used + right.used
    if expr.op == "+":
        return Result(left.value + right.value, used)
    if expr.op == "-":
        return Result(left.value - right.value, used)
    if expr.op == "*":
        return Result(left.value * right.value, used)
    if right.value == 0:
        return None
    return Result(left.value / right.value, used)


def render(f: Formula, result: Result) -> str:
    """The result as a question asks it: in percent with one decimal unless it says how many, a
    ratio with two (three below one); an amount in the scale asked, else in its tables' own
    ("$3,215 million")."""
    value = result.value
    if _divides(f.expr) or f.percent:
        v = value * 100 if f.percent else value
        d = f.decimals if f.decimals is not None else (1 if f.percent else (2 if abs(v) >= 1 else 3))
        return f"{v:,.{d}f}%" if f.percent else f"{v:,.{d}f}"
    scales = {v.scale for _, v in result.used}
    if f.scale:  # a table that declares no unit is read as printed in the unit asked
        scale, word = (f.scale if scales != {1.0} else 1.0), ""
    else:
        scale = scales.pop() if len(scales) == 1 else 1.0
        word = f" {scale_name(scale)}" if scale_name(scale) else ""
    v = value / scale
    d = f.decimals if f.decimals is not None else (0 if float(v).is_integer() else 2)
    money = any(re.match(rf"\s*\(?\s*[{CURRENCY}]", v2.cell) for _, v2 in result.used) or f.scale is not None
    return f"{'-' if v < 0 else ''}{'$' if money else ''}{abs(v):,.{d}f}{word}"


def explain(result: Result, cite: Callable[[Value], str]) -> str:
    """The values a result was computed from, each with its year, label and citation (`cite`:
    the marker a value's table is cited by, "[2]")."""
    seen: dict[tuple[str, str], str] = {}
    for _, v in result.used:
        seen.setdefault((v.label, v.year), f"{v.label} {v.year}: {v.cell} {cite(v)}")
    return "; ".join(seen.values())
