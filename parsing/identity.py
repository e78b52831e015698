"""What a document says about itself on its cover: title, organisation and date, and for a
periodic report the form it was filed on, the period it covers and its fiscal year.

Users' files are called `report (3).pdf`, so nothing here reads the file name: only the parsed
blocks of the first pages with text (the cover, and the page after it when the cover is mostly an
image). A library of ten years of one company's filings is told apart by exactly these fields,
which the router matches against what a question names.

- **title**: the largest-font text on the cover, its lines in reading order.
- **organisation**: a securities filing's cover prints the registrant's name on the line above its
  caption "(Exact name of registrant as specified in its charter)" (letters a small-capitals font
  split off, "MGM R ESORTS", joined again); a press release names its issuer just before the
  "(EXCHANGE: TICKER)" it prints; a filing with neither gets the organisation spaCy's entity
  recogniser finds on the cover in the largest type and its first pages name most. Other
  documents get none: on papers and reports the small English model's organisations were column
  titles and acronyms (measured on the MMLongBench dev papers), and their title names what they are.
- **aliases**: the names the first pages say the organisation was formerly known by ("NORTHWIND
  INC. (formerly "NORTHWIND SYSTEMS INCORPORATED")", "changed its name from Northwind Systems
  Incorporated to Northwind Inc."; `parsing.org_names`): a renamed company's older filings print
  the old name on their covers.
- **employer_id**: the IRS Employer Identification Number a US filing's cover prints under its
  caption ("41-0907483"): the registrant's, unchanged when its legal name changes.
- **ticker**: only where the cover labels a symbol as one: the symbol in the rows under the
  "Trading Symbol(s)" column caption (its table's column, or the text between the caption and the
  next part of the cover, "Securities registered pursuant to Section 12(g)" or "Indicate by check
  mark"), "ticker symbol XYZ", or a listing "(NYSE: XYZ)" / "NYSE: XYZ". A word of the cover's own
  sentences ("PURSUANT TO SECTION 12(g)") is not a symbol; rows printed all in capitals say
  nothing by case, so they give none.
- **form**: the form number a filing prints on its cover ("FORM 10-K" -> "10-K").
- **period**: "quarter" for a quarterly report (form 10-Q, "quarterly period ended", a title that
  names a quarter), "year" for an annual one (form 10-K, "fiscal year ended" on the cover).
- **period_end**: the date after the first "... ended <date>" on the cover (a report's period).
- **fiscal_year_end**: the last day of the fiscal year the document reports on or in: an annual
  report's period end; for a quarter, the first anniversary on or after its period end of the
  "year ended <date>" its first pages cite (the fiscal year before it). A retailer's second
  quarter ending in July 2023 falls in the fiscal year ending in January 2024.
- **fiscal_year**: what the document calls its fiscal year: "fiscal YYYY" on its cover (Ulta's
  "Fourth Quarter Fiscal 2022" ended in January 2023), else the fiscal year end's year, else the
  year its first pages call "fiscal YYYY" most often, else period_end's year.
- **date**: an 8-K's "Date of Report", else the first date printed on the cover.

Companies name fiscal years by the calendar year they start in or the one they end in; a
question may use either ("FY2023" for Ulta's fiscal 2022), so `years()` gives both.
"""

from __future__ import annotations

import calendar
import re
from collections import Counter
from dataclasses import asdict, dataclass, fields
from datetime import date, timedelta
from typing import Any, Callable

from bookindex.core.errors import ConfigError
from bookindex.core.model import Block
from bookindex.core.pipe_tables import is_pipe_row, row_cells
from bookindex.core.quantities import FISCAL_SPELLED
from bookindex.parsing.org_names import former_names
from bookindex.providers.nlp import english

COVER_MIN_CHARS = 200  # a cover with less text than this (a picture) is read with the next page
FISCAL_PAGES = 6  # "fiscal YYYY" is counted on this many first pages with text
PRIOR_YEAR_PAGES = 12  # a quarterly report's "year ended <date>" is looked for on these first pages
MAX_TITLE_CHARS = 200
MAX_NAME_CHARS = 120
SAMPLE_CHARS = 60_000  # of the first pages' text, read by spaCy for the organisations they name

_MONTHS = "|".join(m for m in calendar.month_name if m)
_MONTHS_ABBR = "|".join(m for m in calendar.month_abbr if m)
_DATE = re.compile(rf"\b({_MONTHS}|(?:{_MONTHS_ABBR})\.?)\s+(\d{{1,2}}),?\s+(\d{{4}})\b", re.IGNORECASE)
_ENDED = re.compile(r"\bended\b[\s:]*", re.IGNORECASE)
_FORM = re.compile(r"\bform\s+(\d{1,2}-[A-Z]{1,2}(?:/A)?)\b", re.IGNORECASE)
_REGISTRANT = re.compile(r"name\s+of\s+registrant", re.IGNORECASE)
_SPACED_CAPS = re.compile(r"\b([A-Z]) (?=[A-Z]{2,}\b)")  # "R ESORTS": a small-capitals font's split
_QUARTERLY = re.compile(r"\bquarterly\s+(?:period|report)\b", re.IGNORECASE)
_QUARTER_TITLE = re.compile(r"\b(?:first|second|third|fourth)\s+quarter\b|\bQ[1-4]\b", re.IGNORECASE)
_ANNUAL = re.compile(r"\bfiscal\s+year\s+ended\b|\bannual\s+report\s+pursuant\b", re.IGNORECASE)
_YEAR_ENDED = re.compile(r"\byear\s+ended\s+", re.IGNORECASE)
_TRADING_SYMBOL = re.compile(r"trading\s+symbols?(?:\(s\))?", re.IGNORECASE)
_SYMBOL = re.compile(r"(?<![\w$./&-])[A-Z]{1,5}(?:\.[A-Z])?(?![\w/&-])")
_LISTING = re.compile(r"\(\s*(?:NYSE|NASDAQ|Nasdaq|[A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)?)\s*:\s*([A-Z]{1,5}(?:\.[A-Z])?)\s*\)")
_EXCHANGE_SYMBOL = re.compile(r"\b(?:NYSE|NASDAQ|Nasdaq)\s*:\s*([A-Z]{1,5}(?:\.[A-Z])?)(?![\w-])")
_TICKER_SYMBOL = re.compile(r"\b(?i:ticker\s+symbol)\s*(?:is\s+)?[:“\"']?\s*([A-Z]{1,5}(?:\.[A-Z])?)(?![\w-])")
_ROWS_END = re.compile(r"securities\s+registered\s+pursuant\s+to\s+section\s+12\s*\(g\)|indicate\s+by\s+check\s+mark",
                       re.IGNORECASE)
_HEADER_END = re.compile(r"on\s+which\s+registered\)?", re.IGNORECASE)
# the caption, its words apart where two captions' lines interleave ("(I.R.S. Employer incorporation ...) Identification No.)")
_EMPLOYER = re.compile(r"\bemployer\b.{0,80}?\bidentification\b", re.IGNORECASE | re.DOTALL)
_EIN = re.compile(r"(?<![\d-])\d{2}-\d{7}(?![\d-])")
_DATE_OF_REPORT = re.compile(r"date\s+of\s+report\b[^:\n]*:?\s*", re.IGNORECASE)
SYMBOL_WINDOW = 400  # characters after the "Trading Symbol" caption searched for the symbol
PRIOR_YEAR_DAYS = 400  # a quarter's fiscal year began at most this long before its period end


@dataclass(frozen=True)
class DocumentIdentity:
    """A document's identity as its cover states it; empty strings / None where it says nothing."""

    title: str = ""
    organisation: str = ""
    date: str = ""  # ISO date
    form: str = ""
    period_end: str = ""  # ISO date
    fiscal_year: int | None = None
    ticker: str = ""
    period: str = ""  # "quarter", "year" or ""
    fiscal_year_end: str = ""  # ISO date
    aliases: tuple[str, ...] = ()  # former names of the organisation, as its filing says them
    employer_id: str = ""  # the IRS Employer Identification Number on a US filing's cover

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v not in ("", None, ())}
        if "aliases" in out:
            out["aliases"] = list(out["aliases"])  # as JSON holds it, so a stored identity compares equal
        return out

    @classmethod
    def from_dict(cls, data: object) -> DocumentIdentity:
        """From a manifest's `identity` (empty for anything that is not a dict: an older manifest)."""
        if not isinstance(data, dict):
            return cls()
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "aliases" in values:
            aliases = values["aliases"]
            values["aliases"] = tuple(str(a) for a in aliases) if isinstance(aliases, (list, tuple)) else ()
        return cls(**values)

    def years(self) -> set[int]:
        """The fiscal years a question may call this document's: the document's own name for
        it and the calendar year its fiscal year ends in (empty when it states none)."""
        out = {self.fiscal_year} if self.fiscal_year else set()
        if self.fiscal_year_end[:4].isdigit():
            out.add(int(self.fiscal_year_end[:4]))
        return out

    def summary(self) -> str:
        """One line for listings: organisation, form, fiscal year (or date), else the title."""
        parts = [self.organisation or self.title[:60]]
        if self.form:
            parts.append(self.form)
        if self.fiscal_year:
            parts.append(f"FY{self.fiscal_year}")
        elif self.period_end or self.date:
            parts.append(self.period_end or self.date)
        return " · ".join(p for p in parts if p)


def identify(blocks: list[Block], *, nlp: Callable[[], Any] | None = english) -> DocumentIdentity:
    """Read the identity from a document's blocks (reading order). `nlp` makes the spaCy
    pipeline whose entity recogniser finds a filing's organisation when its cover has no
    registrant caption; it is called only then (None, or a pipeline that cannot load: skip)."""
    cover = cover_blocks(blocks)
    if not cover:
        return DocumentIdentity()
    cover_text = "\n".join(b.content for b in cover)
    first_text = "\n".join(b.content for b in _first_pages(blocks))
    period_end = _period_end(cover_text)
    report_date = _DATE_OF_REPORT.search(cover_text)
    first_date = (parse_date(cover_text[report_date.end():report_date.end() + 80]) if report_date else None) \
        or parse_date(cover_text)
    form_match = _FORM.search(cover_text)
    form = form_match.group(1).upper() if form_match else ""
    title = _title(cover)
    listing = _LISTING.search(first_text)
    organisation = _registrant(cover) or (_issuer(first_text, listing) if listing else "")
    if not organisation and form_match and nlp is not None:
        try:
            organisation = _organisation(cover, blocks, nlp())
        except ConfigError:  # spaCy's English model is not installed: no organisation
            organisation = ""
    period = _period(form, cover_text, title)
    early_text = "\n".join(b.content for b in _first_pages(blocks, PRIOR_YEAR_PAGES))
    year_end = _fiscal_year_end(period, period_end, early_text)
    return DocumentIdentity(
        title=title,
        organisation=organisation,
        date=first_date.isoformat() if first_date else "",
        form=form,
        period_end=period_end.isoformat() if period_end else "",
        fiscal_year=_stated_fiscal_year(title, cover_text) or (year_end.year if year_end else None)
        or _fiscal_year(blocks) or (period_end.year if period_end else None),
        ticker=_ticker(cover_text) or (listing.group(1) if listing else ""),
        period=period,
        fiscal_year_end=year_end.isoformat() if year_end else "",
        aliases=former_names(early_text, organisation),
        employer_id=_employer_id(cover_text),
    )


def cover_blocks(blocks: list[Block]) -> list[Block]:
    """The text blocks of the first page with text, and of the next page too when that first
    page holds little text (a cover picture with a caption)."""
    pages = sorted({b.page_idx for b in blocks if b.content.strip()})
    chosen: list[int] = []
    chars = 0
    for page in pages[:2]:
        chosen.append(page)
        chars += sum(len(b.content) for b in blocks if b.page_idx == page)
        if chars >= COVER_MIN_CHARS:
            break
    return [b for b in blocks if b.page_idx in chosen and b.content.strip() and b.type != "image"]


def parse_date(text: str) -> date | None:
    """The first "Month D, YYYY" date in `text` (full or abbreviated month names), or None."""
    for m in _DATE.finditer(text):
        month = _month_number(m.group(1))
        if not 1900 <= int(m.group(3)) <= 2100:
            continue
        try:
            return date(int(m.group(3)), month, int(m.group(2)))
        except ValueError:
            continue
    return None


def _month_number(name: str) -> int:
    name = name.rstrip(".").lower()
    for i in range(1, 13):
        if name in (calendar.month_name[i].lower(), calendar.month_abbr[i].lower()):
            return i
    raise ValueError(name)


def _period_end(text: str) -> date | None:
    for m in _ENDED.finditer(text):
        found = _DATE.match(text, m.end())
        if found:
            return parse_date(found.group(0))
    return None


def _first_pages(blocks: list[Block], n: int = FISCAL_PAGES) -> list[Block]:
    pages = sorted({b.page_idx for b in blocks if b.content.strip()})[:n]
    return [b for b in blocks if b.page_idx in pages]


def _stated_fiscal_year(title: str, cover_text: str) -> int | None:
    """The cover's "fiscal YYYY" (its title's first)."""
    for text in (title, cover_text):
        m = FISCAL_SPELLED.search(text)
        if m:
            return int(m.group(1))
    return None


def _period(form: str, cover_text: str, title: str) -> str:
    """"quarter" or "year": the span a periodic report covers, as its cover states it."""
    if form.startswith("10-Q") or _QUARTERLY.search(cover_text) or _QUARTER_TITLE.search(title):
        return "quarter"
    if form.startswith("10-K") or _ANNUAL.search(cover_text):
        return "year"
    return ""


def _fiscal_year_end(period: str, period_end: date | None, text: str) -> date | None:
    """An annual report's period end; for a quarter, the first anniversary on or after its period
    end of the latest "year ended <date>" of the year before it that `text` cites."""
    if period_end is None or not period:
        return None
    if period == "year":
        return period_end
    prior = [d for m in _YEAR_ENDED.finditer(text) if (found := _DATE.match(text, m.end()))
             and (d := parse_date(found.group(0))) and timedelta(0) <= period_end - d <= timedelta(PRIOR_YEAR_DAYS)]
    if not prior:
        return None
    last = max(prior)
    year = last.year
    while _anniversary(last, year) < period_end:
        year += 1
    return _anniversary(last, year)


def _anniversary(day: date, year: int) -> date:
    return day.replace(year=year, day=min(day.day, calendar.monthrange(year, day.month)[1]))


def _ticker(cover_text: str) -> str:
    """The symbol the cover labels as its trading symbol: under the "Trading Symbol(s)" caption
    (its table column, else the rows after it), else after "ticker symbol", else in "NYSE: XYZ";
    "" when the cover labels none."""
    m = _TRADING_SYMBOL.search(cover_text)
    if m:
        found = _column_symbol(cover_text, m) or _row_symbol(cover_text, m.end())
        if found:
            return found
    for labelled in (_TICKER_SYMBOL, _EXCHANGE_SYMBOL):
        hit = labelled.search(cover_text)
        if hit:
            return hit.group(1)
    return ""


def _column_symbol(text: str, caption: re.Match[str]) -> str:
    """The first symbol in the caption's column of the table (Markdown rows) the caption heads."""
    lines = text[text.rfind("\n", 0, caption.start()) + 1:].splitlines()
    header = row_cells(lines[0]) if is_pipe_row(lines[0]) else []
    column = next((j for j, c in enumerate(header) if _TRADING_SYMBOL.search(c)), None)
    if column is None:
        return ""
    for line in lines[1:]:
        if not is_pipe_row(line):
            break
        cells = row_cells(line)
        if column < len(cells) and re.fullmatch(_SYMBOL.pattern, cells[column]):
            return cells[column]
    return ""


def _row_symbol(text: str, start: int) -> str:
    """The first symbol (1-5 capitals standing alone) in the rows after the caption: past the rest
    of the column captions, before the next part of the cover. Rows all in capitals give none:
    there a symbol and a word of the class's title ("PER SHARE") look alike."""
    ends = _ROWS_END.search(text, start)
    end = min(ends.start() if ends else len(text), start + SYMBOL_WINDOW)
    header = _HEADER_END.search(text, start, end)
    start = header.end() if header else start
    if not any(c.islower() for c in text[start:end]):
        return ""
    for found in _SYMBOL.finditer(text, start, end):
        if not re.search(r"\bclass\s*$", text[max(0, found.start() - 12):found.start()], re.IGNORECASE):
            return found.group(0)  # "Class A Common Stock" names a share class, not a symbol
    return ""


def _employer_id(cover_text: str) -> str:
    """The first "NN-NNNNNNN" on a cover that captions an employer identification number."""
    if not _EMPLOYER.search(cover_text):
        return ""
    m = _EIN.search(cover_text)
    return m.group(0) if m else ""


def _issuer(text: str, listing: re.Match[str]) -> str:
    """The run of capitalised words just before a release's "(NYSE: MGM)": who issued it."""
    words: list[str] = []
    for word in reversed(text[:listing.start()].split()[-8:]):
        if not re.fullmatch(r"[A-Z0-9][\w&.,'’-]*", word) or "--" in word:
            break
        words.insert(0, word)
    return _clean(" ".join(words).rstrip(","), MAX_NAME_CHARS)


def _fiscal_year(blocks: list[Block]) -> int | None:
    """The year the first pages call "fiscal YYYY" most often."""
    counts = Counter(int(m.group(1)) for b in _first_pages(blocks) for m in FISCAL_SPELLED.finditer(b.content))
    if not counts:
        return None
    return counts.most_common(1)[0][0]


def _font_size(block: Block) -> float:
    try:
        return float(block.features.get("font_size") or 0)
    except (TypeError, ValueError):
        return 0.0


def _clean(text: str, limit: int) -> str:
    return re.sub(r"\s+", " ", text).strip()[:limit].strip()


def _title(cover: list[Block]) -> str:
    """The cover's largest-font text; with no font sizes (plain text, Markdown) its first title
    block, else its first line."""
    sized = [b for b in cover if _font_size(b) > 0 and any(c.isalpha() for c in b.content)]
    if sized:
        top = max(_font_size(b) for b in sized)
        return _clean(" ".join(b.content for b in sized if _font_size(b) >= top - 0.5), MAX_TITLE_CHARS)
    titles = [b for b in cover if b.type == "title"]
    first = (titles or cover)[0].content
    return _clean(first.strip().splitlines()[0] if first.strip() else "", MAX_TITLE_CHARS)


def _registrant(cover: list[Block]) -> str:
    """A filing's registrant: the last non-empty line before the "name of registrant" caption."""
    lines = [ln.strip() for b in cover for ln in b.content.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if _REGISTRANT.search(line) and i > 0:
            return _clean(_SPACED_CAPS.sub(r"\1", lines[i - 1].strip("() ")), MAX_NAME_CHARS)
    return ""


def _organisation(cover: list[Block], blocks: list[Block], nlp: Any) -> str:
    """The organisation the document is about: of the organisations spaCy finds on the cover,
    those in its largest type first, and among them the one the first pages name most often
    (an organisation whose words contain, or are contained in, a name they use)."""
    pages = sorted({b.page_idx for b in blocks if b.content.strip()})[:FISCAL_PAGES]
    sample = "\n".join(b.content for b in blocks if b.page_idx in pages)[:SAMPLE_CHARS]
    named: Counter[str] = Counter(_org_key(e.text) for e in nlp(sample).ents if e.label_ == "ORG")
    named.pop("", None)
    top = max((_font_size(b) for b in cover), default=0.0)
    best: tuple[float, float, int] | None = None
    choice = ""
    for i, b in enumerate(cover):
        for ent in nlp(b.content[:2000]).ents:
            key = _org_key(ent.text)
            if ent.label_ != "ORG" or len(key) < 2:
                continue
            words = set(key.split())
            mentions = sum(n for k, n in named.items() if set(k.split()) <= words or words <= set(k.split()))
            rank = (1.0 if _font_size(b) >= top - 0.5 else 0.0, float(mentions), -i)
            if best is None or rank > best:
                best, choice = rank, _clean(_strip_possessive(ent.text), MAX_NAME_CHARS)
    return choice


def _strip_possessive(name: str) -> str:
    return re.sub(r"[\u2019']s?$", "", name.strip()).strip()


def _org_key(name: str) -> str:
    return re.sub(r"\s+", " ", _strip_possessive(name)).lower().removeprefix("the ").strip()
