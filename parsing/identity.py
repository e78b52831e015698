"""What a document says about itself on its cover: title, organisation and date, and for a
periodic report the form it was filed on, the period it covers and its fiscal year.

Users' files are called `report (3).pdf`, so nothing here reads the file name: only the parsed
blocks of the first pages with text (the cover, and the page after it when the cover is mostly an
image). A library of ten years of one company's filings is told apart by exactly these fields,
which the router matches against what a question names.

- **title**: the largest-font text on the cover, its lines in reading order.
- **organisation**: a securities filing's cover prints the registrant's name on the line above its
  caption "(Exact name of registrant as specified in its charter)"; a filing whose cover has no
  such caption gets the organisation spaCy's entity recogniser finds on the cover in the largest
  type and its first pages name most. Other documents get none: on papers and reports the small
  English model's organisations were column titles and acronyms (measured on the MMLongBench dev
  papers), and their title names what they are.
- **form**: the form number a filing prints on its cover ("FORM 10-K" -> "10-K").
- **period_end**: the date after the first "... ended <date>" on the cover (a report's period).
- **fiscal_year**: the year the document calls "fiscal YYYY" / "fiscal year YYYY" most often on
  its first pages (a retailer's fiscal 2024 can end in 2023's summer), else period_end's year.
- **date**: the first date printed on the cover.
"""

from __future__ import annotations

import calendar
import re
from collections import Counter
from dataclasses import asdict, dataclass, fields
from datetime import date
from typing import Any, Callable

from bookindex.core.errors import ConfigError
from bookindex.core.model import Block
from bookindex.providers.nlp import english

COVER_MIN_CHARS = 200  # a cover with less text than this (a picture) is read with the next page
FISCAL_PAGES = 6  # "fiscal YYYY" is counted on this many first pages with text
MAX_TITLE_CHARS = 200
MAX_NAME_CHARS = 120
SAMPLE_CHARS = 60_000  # of the first pages' text, read by spaCy for the organisations they name

_MONTHS = "|".join(m for m in calendar.month_name if m)
_MONTHS_ABBR = "|".join(m for m in calendar.month_abbr if m)
_DATE = re.compile(rf"\b({_MONTHS}|(?:{_MONTHS_ABBR})\.?)\s+(\d{{1,2}}),?\s+(\d{{4}})\b", re.IGNORECASE)
_ENDED = re.compile(r"\bended\b[\s:]*", re.IGNORECASE)
_FORM = re.compile(r"\bform\s+(\d{1,2}-[A-Z]{1,2}(?:/A)?)\b", re.IGNORECASE)
_FISCAL = re.compile(r"\bfiscal(?:\s+year)?\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_REGISTRANT = re.compile(r"name\s+of\s+registrant", re.IGNORECASE)


@dataclass(frozen=True)
class DocumentIdentity:
    """A document's identity as its cover states it; empty strings / None where it says nothing."""

    title: str = ""
    organisation: str = ""
    date: str = ""  # ISO date
    form: str = ""
    period_end: str = ""  # ISO date
    fiscal_year: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", None)}

    @classmethod
    def from_dict(cls, data: object) -> DocumentIdentity:
        """From a manifest's `identity` (empty for anything that is not a dict: an older manifest)."""
        if not isinstance(data, dict):
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

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
    period_end = _period_end(cover_text)
    first_date = parse_date(cover_text)
    form_match = _FORM.search(cover_text)
    organisation = _registrant(cover)
    if not organisation and form_match and nlp is not None:
        try:
            organisation = _organisation(cover, blocks, nlp())
        except ConfigError:  # spaCy's English model is not installed: no organisation
            organisation = ""
    return DocumentIdentity(
        title=_title(cover),
        organisation=organisation,
        date=first_date.isoformat() if first_date else "",
        form=form_match.group(1).upper() if form_match else "",
        period_end=period_end.isoformat() if period_end else "",
        fiscal_year=_fiscal_year(blocks, cover) or (period_end.year if period_end else None),
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


def _fiscal_year(blocks: list[Block], cover: list[Block]) -> int | None:
    """The cover's "fiscal YYYY" (its title's first), else the first pages' most frequent one."""
    for text in (_title(cover), "\n".join(b.content for b in cover)):
        m = _FISCAL.search(text)
        if m:
            return int(m.group(1))
    pages = sorted({b.page_idx for b in blocks if b.content.strip()})[:FISCAL_PAGES]
    counts = Counter(int(m.group(1)) for b in blocks if b.page_idx in pages
                     for m in _FISCAL.finditer(b.content))
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
            return _clean(lines[i - 1].strip("() "), MAX_NAME_CHARS)
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
