"""An organisation's name as one company is named across its filings: without its legal form, and
with the names its own filings say it was formerly known by.

A company's covers print its legal name, and legal names change: the covers of one company's
older filings say "Northwind Systems Incorporated", the newest "Northwind Inc.". The legal form
("Incorporated", "Inc.", "Corp.", "N.V.") is how the law classes the company, not what anyone
calls it; it is a closed class, kept here as data in one place (`LEGAL_FORMS`) for whatever reads
a name: the identity's aliases, the router's organisations, a question's naming of them. A former
name is read only where the filing ties it to its own registrant: "<the registrant's name>
(formerly known as <name>)", "changed its name from <name> to <the registrant's name>" or "name
change from <name> to <the registrant's name>"; a product "formerly codenamed" something, or
another company "formerly" something, is not the registrant's former name.
"""

from __future__ import annotations

import re

# legal forms of company names (dots removed: "N.V." -> "nv"), and the web suffix of "Amazon.com":
# no company is named by them, they end its legal name
LEGAL_FORMS = frozenset({
    "inc", "incorporated", "corp", "corporation", "co", "company", "companies", "cos", "ltd", "limited",
    "llc", "lc", "lp", "llp", "lllp", "plc", "nv", "bv", "sa", "sab", "sas", "sca", "spa", "srl", "sarl", "ag",
    "kgaa", "gmbh", "se", "ab", "asa", "oyj", "kk", "pty", "pte", "bhd", "tbk", "com",
})
# words no name is told apart by wherever they stand: a leading article, a connector written "&" as often
FILLER = frozenset({"the", "and"})
MAX_NAME_CHARS = 120
NAME_SLACK = 3  # words before "formerly" read beyond the registrant name's own count (its suffixes, "the Company")

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9&'’]*")
_INITIALS = re.compile(r"\b([A-Za-z])\.(?=[A-Za-z]{1,2}\b)")  # "N.V." -> "NV.", "S.p.A." -> "SpA."
_FORMERLY = re.compile(r"\b(?:formerly(?:\s+known\s+as)?|f/k/a|previously\s+known\s+as)\b[\s:]*", re.IGNORECASE)
_RENAMED = re.compile(r"\b(?:changed|changing)\s+(?:its|our|the\s+company['’]s)\s+(?:legal\s+|corporate\s+)?name\s+from\s+"
                      r"|\bname\s+change\s+from\s+", re.IGNORECASE)
_TO = re.compile(r"[\s,”\"’']*to\s+", re.IGNORECASE)
_QUOTES = {'"': '"', "“": "”", "'": "'", "‘": "’"}
# a run of capitalised words (with "of", "and", "&" between them, and ", Inc." after a comma)
_RUN_WORD = re.compile(r"\s*,?\s*([A-Z0-9&][\w&.'’-]*|of|and|de|the|for)(?=[\s,;:)”\"]|$)")


def name_words(name: str) -> tuple[str, ...]:
    """A name's words, lowercased, possessives removed, without its legal forms at the end
    ("Best Buy Co., Inc." -> best, buy), a leading "The" or an "and" anywhere."""
    joined = _INITIALS.sub(r"\1", name)
    words = [w for w in (re.sub(r"'s?$", "", t.lower().replace("’", "'")) for t in _TOKEN.findall(joined))
             if w not in FILLER]
    while words and words[-1] in LEGAL_FORMS:
        words.pop()
    return tuple(words)


def organisation_key(name: str) -> str:
    """What two legal names of one company have in common when they differ only by legal form
    ("NORTHWIND INC." and "Northwind Incorporated": "northwind"); "" for a name of legal words only."""
    return " ".join(name_words(name))


def former_names(text: str, organisation: str) -> tuple[str, ...]:
    """The names `text` says `organisation` was formerly known by: after "formerly (known as)"
    that follows the organisation's own name, or "changed its name from X to" the organisation.
    Each once (by its key), never the organisation's own key."""
    key = organisation_key(organisation)
    if not key:
        return ()
    span = len(_TOKEN.findall(organisation)) + NAME_SLACK
    found: list[str] = []
    for m in _FORMERLY.finditer(text):
        if _ends_with_name(text[max(0, m.start() - 4 * MAX_NAME_CHARS):m.start()], key, span):
            found.append(_name_at(text, m.end(), in_parentheses=_opened(text, m.start())))
    for m in _RENAMED.finditer(text):
        old, end = _name_and_end(text, m.end())
        to = _TO.match(text, end)
        if old and to and organisation_key(_name_at(text, to.end())) == key:
            found.append(old)
    out: dict[str, str] = {}
    for name in found:
        k = organisation_key(name)
        if k and k != key and k not in out and any(c.isalpha() for c in name):
            out[k] = name
    return tuple(out.values())


def _ends_with_name(before: str, key: str, span: int) -> bool:
    """Whether the text before a "formerly" ends with the organisation's name: some run of its
    last words, up to `span` of them, written as a name is (its first word capitalised), has the
    organisation's key ("our sales target, formerly ..." is no company "Target")."""
    tokens = _TOKEN.findall(_INITIALS.sub(r"\1", before))
    return any(organisation_key(" ".join(tokens[-n:])) == key and not tokens[-n][:1].islower()
               for n in range(1, min(span, len(tokens)) + 1))


def _opened(text: str, pos: int) -> bool:
    """Whether the phrase at `pos` opens a parenthesis: "Northwind Inc. (formerly ...)"."""
    return text[max(0, pos - 3):pos].rstrip().endswith("(")


def _name_at(text: str, pos: int, in_parentheses: bool = False) -> str:
    return _name_and_end(text, pos, in_parentheses)[0]


def _name_and_end(text: str, pos: int, in_parentheses: bool = False) -> tuple[str, int]:
    """The name starting at `pos` and where it ends: a quoted name to its closing quote, in
    parentheses to the closing one, else the run of capitalised words there, up to its first
    legal form or sentence end."""
    while pos < len(text) and text[pos].isspace():
        pos += 1
    window = text[pos:pos + MAX_NAME_CHARS + 2]
    if window[:1] in _QUOTES:
        close = window.find(_QUOTES[window[0]], 1)
        if close > 0:
            return _clean(window[1:close]), pos + close + 1
    if in_parentheses and ")" in window:
        close = window.index(")")
        return _clean(window[:close].strip("\"“”'‘’ ")), pos + close
    words: list[str] = []  # each with the separator before it
    end = pos
    while m := _RUN_WORD.match(text, end):
        word = m.group(1)
        if not words and not word[:1].isupper() and not word[:1].isdigit():
            break
        end = m.end()
        bare = word.rstrip(".,").replace(".", "").lower()
        stop = bare in LEGAL_FORMS or (word.endswith(".") and len(bare) > 1)
        if stop and bare not in LEGAL_FORMS:
            word = word.rstrip(".")  # a full stop after a word ends the sentence, not the name
        words.append((", " if "," in m.group(0)[:m.start(1) - m.start()] else " ") + word)
        if stop:
            break  # a legal form ends the name
    while words and words[-1].lstrip(", ") in ("of", "and", "de", "the", "for", "&"):
        words.pop()
    return _clean("".join(words)), end


def _clean(name: str) -> str:
    return re.sub(r"\s+", " ", name).strip(" ,;:")[:MAX_NAME_CHARS].strip()
