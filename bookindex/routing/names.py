"""The router's `name` signal: question words that name a document by its file name or title.

A 10-K is called `AMAZON_2017_10K.pdf`; a question about it says "Amazon" and "FY2017". Whole-
document BM25 sees those words too, but among thousands of others: "2017" appears in most reports.
Matched against the few words of each document's name, a year or a company name is strong
evidence, weighted by how few names carry it (IDF over the library's names) so a word many
names share counts little. A document whose name shares nothing with the question gets 0 and,
in the router's fusion, no rank at all (a sparse signal must not rank the rest by id).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

# words of file names that name no document: formats, versions, drafts, releases
STOP = frozenset({"pdf", "final", "final2", "report", "release", "draft", "the", "and", "for", "of", "v1", "v2",
                  "10k", "10-k", "doc", "docs", "manual", "user", "guide"})
_WORD = re.compile(r"[A-Za-z]+|\d+")
_HEXISH = re.compile(r"^[0-9a-f]{12,}$")


def name_words(text: str) -> set[str]:
    """The distinctive words of a name or question: letters of 3+ characters, 4-digit years
    ("FY2017" gives "2017"), lowercased; content hashes and format words left out."""
    out: set[str] = set()
    for raw in re.split(r"[\s_./\-]+", text):
        if _HEXISH.match(raw.lower()):
            continue
        for w in _WORD.findall(raw):
            w = w.lower()
            if w.isdigit():
                if len(w) == 4 and w[:2] in ("19", "20"):
                    out.add(w)
            elif len(w) >= 3 and w not in STOP and w != "fy":
                out.add(w)
    return out


def question_words(question: str) -> set[str]:
    """The words of a question that can name a document: fiscal years ("FY2015", "FY 2015" -> "2015"),
    all-capital tokens of 3+ letters (a ticker, an acronym) and runs of capitalised words joined
    ("Best Buy" -> "bestbuy", as file names write them). A bare year, a single capitalised word
    ("China", "Amazon") or a lowercase one ("pro mode") names a topic or a date as often as a
    document, and whole-document BM25 already weighs it: measured, they cost more than they gave."""
    out: set[str] = set()
    tokens = [t.replace(" ", "") for t in re.findall(r"FY ?\d{4}|[A-Za-z][A-Za-z'’&.-]*|\d+", question)]
    run: list[str] = []
    for i, tok in enumerate(tokens + [""]):
        word = re.sub(r"['’]s$", "", tok).strip(".'’-")
        fiscal = re.fullmatch(r"FY(\d{4})", word)
        if fiscal:
            out.add(fiscal.group(1))
        elif len(word) >= 3 and word.isalpha() and word.isupper():
            out.add(word.lower())
        if i > 0 and word[:1].isupper() and fiscal is None and word.isalpha():
            run.append(word.lower())
            continue
        if len(run) > 1:
            out.add("".join(run))
        run = []
    return out


class NameMatcher:
    """IDF-weighted overlap between a question's words and each document's name words."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)  # as given: a stored router keeps them (routing.stored)
        self.words = [name_words(n) for n in names]
        df: dict[str, int] = {}
        for ws in self.words:
            for w in ws:
                df[w] = df.get(w, 0) + 1
        n = max(1, len(names))
        self.idf = {w: math.log(1 + n / c) for w, c in df.items()}

    def scores(self, question: str) -> np.ndarray:
        q = question_words(question)
        return np.array([sum(self.idf[w] for w in ws & q) for ws in self.words], dtype=np.float32)


def joined_runs(text: str) -> list[str]:
    """Each run of capitalised words of a document's own text (a cover's title, its registrant)
    joined from its start: "Ulta Beauty Announces" gives "ultabeauty" and "ultabeautyannounces",
    so the run a question names (`question_words`: "Ulta Beauty's" -> "ultabeauty") is one of them."""
    out: list[str] = []
    run: list[str] = []
    for tok in re.findall(r"[A-Za-z0-9][A-Za-z0-9&.'’-]*|\S", text) + [""]:
        word = re.sub(r"[^A-Za-z0-9]", "", tok)
        if word[:1].isupper() or (run and word[:1].isdigit()):
            run.append(word.lower())
            continue
        out += ["".join(run[:n]) for n in range(2, len(run) + 1)]
        run = []
    return out
