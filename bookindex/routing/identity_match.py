"""What a question names of a document's identity: its organisation, its fiscal year, its form.

Among ten years of one company's filings the words are nearly the same; the question's company,
fiscal year and filing type tell them apart, and they are matched here against what each
document's cover says it is (`parsing.identity`), never against its file name.

- **organisation**: the question writes the organisation's name without its legal suffix
  ("Best Buy" for "BEST BUY CO., INC."), its ticker ("BBY"), or its initials when the name has
  three words or more ("AMD"). A name's first word alone counts when the question writes it in
  capitals ("MGM" for "MGM Resorts International"); a one-word name ("Amazon", "Walmart") counts
  when the question capitalises it. A company is one organisation across its names: documents
  whose names differ only by legal form ("NORTHWIND INC.", "Northwind Incorporated"), whose cover
  prints one employer identification number, or one of which says it was formerly known by the
  other's name (`DocumentIdentity.aliases`), are grouped (`organisation_groups`), and a question
  naming any name of the group names every document of it: the older filings of a renamed company
  print its former legal name ("Northwind Systems Incorporated"), the question its current one.
- **year**: the fiscal years the question names ("FY2018", "FY 2018"), or a bare year ("growth in
  2022") when a document of the organisation the question names states that year as its own
  (the library says the year is a reporting period of that company); a document matches when
  one of its `years()` is named. The latest named year is the one a comparison is asked in
  ("between FY2021 and FY2022"): the filing of that year reports both. Among the organisation's
  documents a mismatch excludes: one stating only other years comes after all that state a named
  one, whatever its name or text shares with the question.
- **form**: the form the question names ("10-Q", "10-K", "8-K"), or a quarter ("Q2", "second
  quarter") for a document that reports on one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bookindex.core.quantities import FISCAL_YEAR, YEAR
from bookindex.parsing.identity import DocumentIdentity
from bookindex.parsing.org_names import FILLER, name_words, organisation_key

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9&'’]*")
_YEAR = re.compile(rf"\b({YEAR})\b")
_FORM = re.compile(r"\b(10-K|10-Q|8-K|20-F|10K|10Q|8K)\b", re.IGNORECASE)
_QUARTER = re.compile(r"\bQ[1-4]\b|\b(?:first|second|third|fourth)\s+(?:fiscal\s+)?quarter\b|\bquarterly\b",
                      re.IGNORECASE)


@dataclass(frozen=True)
class OrganisationName:
    """The ways a question may name one organisation."""

    words: tuple[str, ...]   # the name's words without legal suffixes, lowercased
    ticker: str = ""         # lowercased
    initials: str = ""       # of a name of three words or more, lowercased

    @classmethod
    def of(cls, ident: DocumentIdentity) -> OrganisationName:
        return cls.called(ident.organisation, ident.ticker)

    @classmethod
    def called(cls, name: str, ticker: str = "") -> OrganisationName:
        words = name_words(name)
        return cls(words=words, ticker=ticker.lower(),
                   initials="".join(w[0] for w in words) if len(words) >= 3 else "")

    def named_in(self, tokens: Sequence[str]) -> bool:
        """Whether the question's tokens (original case, possessives removed) name it."""
        if not self.words and not self.ticker:
            return False
        tokens = [t for t in tokens if t.lower() not in FILLER]   # as the name's words are read
        lower = [t.lower() for t in tokens]
        for code in (self.ticker, self.initials):
            if code and len(code) >= 2 and any(t == code and tok.isupper() for t, tok in zip(lower, tokens)):
                return True
        n = len(self.words)
        for i, tok in enumerate(tokens):
            if not n or lower[i] != self.words[0] or not (tok[:1].isupper() or tok[:1].isdigit()):
                continue
            if n == 1 or tuple(lower[i:i + n]) == self.words or tok.isupper() and len(tok) >= 2:
                return True
        return False


def question_tokens(question: str) -> list[str]:
    """The question's words in their case, possessives ("Walmart's", "Brightwater Foods'") removed."""
    return [re.sub(r"['’]s?$", "", t) for t in _TOKEN.findall(question)]


def named_years(question: str) -> set[int]:
    """The fiscal years a question names: "FY2018", "FY 2018", "fiscal 2018", "fiscal year 2018"."""
    return {int(m.group(1)) for m in FISCAL_YEAR.finditer(question)}


def named_form(question: str) -> str:
    """The form a question names ("10-Q"), "quarter" when it names a quarter, else ""."""
    m = _FORM.search(question)
    if m:
        form = m.group(1).upper()
        return form if "-" in form else f"{form[:-1]}-{form[-1]}"
    return "quarter" if _QUARTER.search(question) else ""


def names_of(ident: DocumentIdentity) -> list[OrganisationName]:
    """The names a question may call a document's organisation by: its cover's, with its ticker,
    and each former name its filing states."""
    return [OrganisationName.of(ident), *(OrganisationName.called(a) for a in ident.aliases)]


def organisation_groups(identities: Sequence[DocumentIdentity]) -> list[int]:
    """Per document, the index of the first document of its organisation: documents are one
    organisation when their names or former names have one key (legal forms aside), or their
    covers print one employer identification number; grouped transitively."""
    parent = list(range(len(identities)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, ident in enumerate(identities):
        marks = [f"name:{k}" for k in map(organisation_key, (ident.organisation, *ident.aliases)) if k]
        marks += [f"employer:{ident.employer_id}"] if ident.employer_id else []
        for mark in marks:
            j = first.setdefault(mark, i)
            a, b = root(i), root(j)
            parent[max(a, b)] = min(a, b)
    return [root(i) for i in range(len(identities))]


class IdentityMatcher:
    """Per document, what a question names of its identity (organisation, year, form)."""

    def __init__(self, identities: Sequence[DocumentIdentity]) -> None:
        self.identities = list(identities)
        self.names = [names_of(i) for i in self.identities]
        self.groups = organisation_groups(self.identities)
        self.years = [i.years() for i in self.identities]

    def organisation(self, question: str) -> list[float]:
        """1 for each document of an organisation the question names by any of its names (of
        any document of it), else 0."""
        tokens = question_tokens(question)
        named = {g for g, names in zip(self.groups, self.names) if any(n.named_in(tokens) for n in names)}
        return [1.0 if g in named else 0.0 for g in self.groups]

    def year(self, question: str, among: Sequence[bool] | None = None) -> list[float]:
        """Per document: 2 when it states the latest fiscal year the question names, 1 another
        named one, -1 when it states only others and some document (of `among`) states a named
        one, else 0."""
        named = self.asked_years(question)
        keep = list(among) if among is not None else [True] * len(self.years)
        if not named or not any(k and ys & named for k, ys in zip(keep, self.years)):
            return [0.0] * len(self.years)
        latest = max(named)
        return [0.0 if not ys else 2.0 if latest in ys else 1.0 if ys & named else -1.0 for ys in self.years]

    def form(self, question: str) -> list[float]:
        """1 for each document of the form the question names (or reporting on a quarter when
        it names one), else 0."""
        asked = named_form(question)
        if not asked:
            return [0.0] * len(self.identities)
        if asked == "quarter":
            return [1.0 if i.period == "quarter" else 0.0 for i in self.identities]
        return [1.0 if i.form == asked else 0.0 for i in self.identities]

    def asked_years(self, question: str) -> set[int]:
        """The fiscal years the question names; without "FY" or "fiscal", its bare years that a
        document of the organisation it names states as its fiscal year."""
        named = named_years(question)
        if named:
            return named
        bare = {int(y) for y in _YEAR.findall(question)}
        if not bare:
            return set()
        org = self.organisation(question)
        return bare if any(o and ys & bare for o, ys in zip(org, self.years)) else set()

    def names_a_period(self, question: str) -> bool:
        """Whether the question asks about a reporting period (a fiscal year, a form, a quarter):
        then what a document's cover says it is decides before its text does."""
        return bool(self.asked_years(question) or named_form(question))
