"""What makes a span of text a *term* of the document rather than parsing debris.

The no-LLM extractor takes noun chunks and named entities from spaCy; on text parsed from a PDF
those spans also cover debris: a man-page reference cut at its bracket (`lintian(1`), a path
fragment glued to markup (`source/}lintian-override`), a table row read as prose
(`chmod | Utility`), a definition list's `label: value`, a sentence start (`Run lintian`). A term
has a shape, declared here as named features so a rejection says which one failed:

- its span starts and ends at word boundaries of the text: a span cut inside a word is first
  widened to the whole word (`share/man` inside `/usr/share/man` becomes the path), then judged;
- its brackets balance;
- it holds no markup or symbol characters (`{ } < > | = ; ©`...), only letters, digits and the
  punctuation names and paths are written with;
- a `/` appears only inside a path-shaped word (`/usr/bin`, `debian/control`, `TCP/IP`);
- no `label: value` colon, no list comma (dates and amounts, which NER types, may have one);
- it is no half of a word the layout broke ("OP- TIONAL"; `broken_at_edges`);
- it does not start with a verb form that opens a sentence (base or finite: `Run`, `Allow`):
  spaCy's tag (`opens_clause`), not a word list.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # spaCy is imported on first use (bookindex.providers.nlp)
    from spacy.tokens import Token

OPEN, CLOSE = "([{", ")]}"
# punctuation a name or a path is written with; any other punctuation or symbol is markup
NAME_PUNCT = set(".-_'’/()[]&+:#@,$~")
QUOTES = "\"'“”‘’`"
MAX_WIDEN = 48  # characters a span may grow to reach word boundaries (longer: a code line, a URL)
# a word with a slash: a path (absolute, relative, home) or a pair such as TCP/IP and/or
PATH_WORD = re.compile(r"(?:~|\.{1,2})?/?[\w.+@%-]+(?:/[\w.+@%*-]+)*/?")
LEAD_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-Z]\.(?:\d+\.)*\d*)\s+(?=\S)")
# Penn tags of a verb form that starts a clause rather than modifies a noun: VBN/VBG stay
# ("generated file", "building block")
CLAUSE_VERB_TAGS = ("VB", "VBD", "VBP", "VBZ")
FEATURES = ("no letter", "unbalanced brackets", "markup", "path debris", "label colon", "list comma",
            "broken word")


def balanced(s: str) -> bool:
    """Every bracket closes the last one opened, and all are closed."""
    stack: list[str] = []
    for ch in s:
        if ch in OPEN:
            stack.append(CLOSE[OPEN.index(ch)])
        elif ch in CLOSE:
            if not stack or stack.pop() != ch:
                return False
    return not stack


def _markup(ch: str) -> bool:
    if ch.isalnum() or ch.isspace() or ch in NAME_PUNCT:
        return False
    cat = unicodedata.category(ch)
    return not cat.startswith("M")  # combining marks belong to the letter before them


def _path_debris(name: str) -> bool:
    words = name.split(" ")
    for i, w in enumerate(words):
        if "/" not in w:
            continue
        if w == "/" or not PATH_WORD.fullmatch(w) or "//" in w.replace("://", ""):
            return True
        if w.endswith(("/", ".")) and i + 1 < len(words):  # "/home/ guest", "/usr/bin. ping"
            return True
    return False


def shape_faults(name: str, *, comma_ok: bool = False) -> list[str]:
    """The FEATURES `name` fails (empty: a term's shape). `comma_ok` for dates and amounts."""
    faults: list[str] = []
    if not re.search(r"[^\W\d_]", name):
        faults.append("no letter")
    if not balanced(name):
        faults.append("unbalanced brackets")
    if any(_markup(ch) for ch in name) or ("~" in name and not re.match(r"~/", name)):
        faults.append("markup")
    if _path_debris(name):
        faults.append("path debris")
    if re.search(r"\s:|:\s", name):
        faults.append("label colon")
    if "," in name and not comma_ok:
        faults.append("list comma")
    if re.search(r"\w-\s|\s-\w", name):
        faults.append("broken word")
    return faults


def strip_numbering(name: str) -> str:
    """A heading's number in front of a term ("3.7.6. /etc/sgml") is not part of it."""
    return LEAD_NUMBERING.sub("", name)


def widen_to_words(text: str, start: int, end: int) -> tuple[int, int]:
    """The span grown to the whitespace-delimited words it touches, less the sentence
    punctuation, quotes and unmatched brackets that then stand at its ends; unchanged when that
    would add more than MAX_WIDEN characters."""
    s, e = start, end
    while s > 0 and not text[s - 1].isspace():
        s -= 1
    while e < len(text) and not text[e].isspace():
        e += 1
    while e > end and (text[e - 1] in ".,;:!?" + QUOTES or (text[e - 1] in CLOSE and not balanced(text[s:e]))):
        e -= 1
    while s < start and (text[s] in QUOTES or (text[s] in OPEN and not balanced(text[s:e]))):
        s += 1
    if (start - s) + (e - end) > MAX_WIDEN:
        return start, end
    return s, e


def broken_at_edges(text: str, start: int, end: int) -> bool:
    """The span continues a word the layout broke before it ("OP- TIONAL", "/usr/ share/man"),
    or starts one it breaks after it ("OP-" then "TIONAL")."""
    j = start
    while j > 0 and text[j - 1].isspace():
        j -= 1
    if j < start and j >= 2 and text[j - 1] in "-/" and text[j - 2].isalnum():
        return True
    k = end
    while k < len(text) and text[k].isspace():
        k += 1
    return end >= 2 and text[end - 1] == "-" and text[end - 2].isalpha() and k > end and k < len(text) \
        and text[k].isalpha()


def opens_clause(tok: Token) -> bool:
    """A verb form opening its sentence, not a term's first word: spaCy tags it base or finite
    ("Run lintian(1)") or auxiliary. Inside a sentence a VB-tagged noun modifier stays ("lock files")."""
    return tok.pos_ == "AUX" or (tok.tag_ in CLAUSE_VERB_TAGS and bool(tok.is_sent_start))
