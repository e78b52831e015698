"""Key phrases of a cluster without an LLM: what its documents share that its siblings do not.

Each document's opening (title + the first `DOC_CHARS` characters, where a help article or an
abstract says what it is about) is parsed once by spaCy's small English pipeline; its noun
chunks, cut at line breaks, stripped of stop words, numbers and punctuation and lemmatised, give
the document's phrases together with every shorter phrase ending at the same head word ("custom
domain name" also counts as "domain name" and "name", so "domain name" is found in a document
that writes "your domain name"). A cluster's phrases are ranked by class-based TF-IDF: the share
of its documents that use a phrase times log(1 + N / df) over the corpus. The clusters of one
level partition the corpus, so the corpus frequency is the frequency across the cluster and its
siblings: a phrase every cluster uses ("wix", "study") weighs little, one only this cluster uses
weighs most.

A label must be true of most of the cluster, not only of its nearest documents: a phrase is
kept for a label only when every one of its words occurs in more than `LABEL_COVERAGE` (half) of
the members' texts, and it must tell the cluster apart: its words together at least `LIFT` times as
common in the cluster as in the rest of the corpus (words every document uses describe none).
Nothing here is a word list of ours; spaCy's stop words are the only filter.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bookindex.providers.nlp import english
from bookindex.skills.model import CorpusDocument

if TYPE_CHECKING:  # spaCy is imported on first use (bookindex.providers.nlp)
    from spacy.tokens import Span, Token

DOC_CHARS = 600        # of a document's text parsed after its title
MAX_WORDS = 4          # of one phrase
LABEL_COVERAGE = 0.5   # a label phrase's words are in more than this share of the members' texts
LABEL_WORDS = 5        # a label has at most this many words (the folder-name rule)
LIFT = 2.0             # a label phrase's words are at least this many times as common in the cluster as outside it
CANDIDATES = 50        # of the most distinctive phrases, considered for a label
SPECIFIC = 0.5         # a longer phrase replaces a kept part of it when it scores this share of it
BATCH = 64


@dataclass(frozen=True)
class DocPhrases:
    """What one document says: the phrases of its opening and the words of its whole text."""

    phrases: frozenset[str]
    words: frozenset[str]


Run = list[tuple[str, bool]]  # a chunk's content words: (lemma, tagged a proper noun)


def parse(docs: Sequence[CorpusDocument]) -> list[DocPhrases]:
    """The phrases of each document's title and opening, and the words of its whole text, in order.

    spaCy does not lemmatise proper nouns, and a help centre's Title Case titles are tagged as
    such ("Wix Bookings", "Products"): a proper noun ending in -s or -es is folded to the singular
    when the corpus uses that singular as a common noun, so "bookings" and "booking" count as one."""
    nlp = english(("ner",))
    texts = [f"{d.title}\n{d.text[:DOC_CHARS]}" for d in docs]
    runs: list[list[Run]] = []
    nouns: set[str] = set()
    for doc in nlp.pipe(texts, batch_size=BATCH):
        runs.append([run for chunk in doc.noun_chunks for run in _runs(chunk)])
        nouns.update(_word(t) for t in doc if t.pos_ == "NOUN" and _content(t))
    out = []
    for d, doc_runs in zip(docs, runs):
        phrases: set[str] = set()
        for run in doc_runs:
            words = [_singular(w, nouns) if propn else w for w, propn in run]
            for start in range(max(0, len(words) - MAX_WORDS), len(words)):
                phrases.add(" ".join(words[start:]))
        text_words = set(WORD.findall(f"{d.title}\n{d.text}".lower()))
        out.append(DocPhrases(frozenset(phrases), frozenset(text_words | {_singular(w, nouns) for w in text_words})))
    return out


WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]")


def _singular(word: str, nouns: set[str]) -> str:
    """`word` without a plural -s / -es when the corpus uses that form as a common noun."""
    for suffix in ("s", "es"):
        if word.endswith(suffix) and word[:-len(suffix)] in nouns:
            return word[:-len(suffix)]
    return word


def _content(tok: Token) -> bool:
    """A word worth a phrase: not a stop word, number, pronoun, determiner or punctuation, and
    with at least two letters."""
    return (not (tok.is_stop or tok.is_punct or tok.is_space or tok.like_num or tok.like_url or tok.like_email)
            and tok.pos_ not in ("PRON", "DET", "NUM", "SYM", "X")
            and sum(ch.isalpha() for ch in tok.text) >= 2 and WORD.fullmatch(tok.text.lower()) is not None)


def _word(tok: Token) -> str:
    return (tok.lemma_ or tok.text).lower().strip("-'")


def _runs(chunk: Span) -> list[Run]:
    """The chunk's content words, split where anything else (a line break, a number) sits
    between them, so a title and the next line do not join into one phrase."""
    runs: list[Run] = [[]]
    for tok in chunk:
        if _content(tok):
            runs[-1].append((_word(tok), tok.pos_ == "PROPN"))
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if r]


@dataclass
class Ranked:
    phrase: str
    score: float     # class-based TF-IDF
    coverage: float  # share of members whose text holds every word of the phrase


class KeyPhrases:
    """The corpus's phrases, parsed on first use (a compile with an LLM never needs them)."""

    def __init__(self, corpus: Sequence[CorpusDocument]) -> None:
        self.corpus = list(corpus)
        self._parsed: dict[str, DocPhrases] | None = None
        self._df: Counter[str] = Counter()
        self._postings: dict[str, set[int]] = {}

    @property
    def parsed(self) -> dict[str, DocPhrases]:
        if self._parsed is None:
            self._parsed = dict(zip((d.id for d in self.corpus), parse(self.corpus)))
            for i, p in enumerate(self._parsed.values()):
                self._df.update(p.phrases)
                for w in p.words:
                    self._postings.setdefault(w, set()).add(i)
        return self._parsed

    def corpus_hits(self, phrase: str) -> int:
        """How many documents of the corpus hold every word of `phrase` (as `coverage` counts)."""
        sets = sorted((self._postings.get(w, set()) for w in phrase.split()), key=len)
        return len(set(sets[0]).intersection(*sets[1:])) if sets else 0

    def tells_apart(self, r: Ranked, members: int) -> bool:
        """Whether the phrase's words are at least `LIFT` times as common among the members as in
        the rest of the corpus (for a cluster holding most of the corpus, the rest is its siblings)."""
        inside = r.coverage * members
        rest = len(self.parsed) - members
        if rest <= 0:
            return True
        outside = max(0.0, self.corpus_hits(r.phrase) - inside) / rest
        return r.coverage >= LIFT * outside

    def rank(self, docs: Sequence[CorpusDocument]) -> list[Ranked]:
        """The members' phrases, most distinctive first (ties by the phrase: deterministic)."""
        parsed = self.parsed
        members = [parsed[d.id] for d in docs if d.id in parsed]
        if not members:
            return []
        n = len(parsed)
        tf: Counter[str] = Counter()
        for m in members:
            tf.update(m.phrases)
        out = []
        for phrase, count in tf.items():
            if count < 2 and len(members) > 1:  # one document's phrase says nothing of the cluster
                continue
            share, df = count / len(members), max(1, self._df[phrase])
            words = phrase.split()
            covered = sum(all(w in m.words for w in words) for m in members) / len(members)
            out.append(Ranked(phrase, share * math.log1p(n / df), covered))
        out.sort(key=lambda r: (-r.score, r.phrase))
        return out

    def key_phrases(self, docs: Sequence[CorpusDocument], n: int) -> list[str]:
        """Up to n distinctive phrases, none a part of a better one ("domain" after "domain name")."""
        return _distinct(self.rank(docs), n)

    def label(self, docs: Sequence[CorpusDocument]) -> str:
        """The best distinctive phrase whose words occur in most members (more than `LABEL_COVERAGE`), at
        least `LIFT` times as often as in the rest of the corpus, and a second multi-word one when there is
        one (at most `LABEL_WORDS` words in all). A cluster where no distinctive phrase is common
        to most members gets the one most members use; "" when it has none."""
        ranked = self.rank(docs)[:CANDIDATES]
        told = [r for r in ranked if self.tells_apart(r, sum(d.id in self.parsed for d in docs))]
        kept = _distinct([r for r in told if r.coverage > LABEL_COVERAGE], 2)
        if not kept:
            best = max(told, key=lambda r: (r.coverage, r.score), default=None)
            return best.phrase if best is not None else ""
        words = kept[0].split()
        if len(kept) > 1 and len(kept[1].split()) > 1:  # a second phrase, not a lone (often generic) word
            more = [w for w in kept[1].split() if w not in words]
            if len(words) + len(more) <= LABEL_WORDS:
                words += more
        return " ".join(words)


def _distinct(ranked: Sequence[Ranked], n: int) -> list[str]:
    """Up to n phrases, best first, none sharing its word set with another: a phrase inside a
    kept one is skipped, and a longer phrase holding a kept one takes its place when it scores at
    least `SPECIFIC` of it ("domain name" for "domain": more specific, nearly as common)."""
    kept: list[Ranked] = []
    for r in ranked:
        words = set(r.phrase.split())
        inside = [i for i, k in enumerate(kept) if words <= set(k.phrase.split())]
        holds = [i for i, k in enumerate(kept) if set(k.phrase.split()) < words]
        if inside:
            continue
        if holds:
            i = holds[0]
            if r.score >= SPECIFIC * kept[i].score and len(holds) == 1:
                kept[i] = r
            continue
        if len(kept) < n:
            kept.append(r)
    return [k.phrase for k in kept]
