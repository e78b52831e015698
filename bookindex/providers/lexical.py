"""The one lexical (BM25) index and analyser: Text_Reasoning, library routing and the baselines.

`LexicalIndex` scores a fixed list of passages with bm25s; an `Analyser` turns passages and
queries into terms the way `bm25s.tokenize` does, with bm25s's stopword lists and optionally a
Snowball stemmer (PyStemmer), so no word list or suffix rule is maintained here. Words are kept
whole by default: on MMLongBench dev, stemming cost bookindex 0.024 R@5 (docs/benchmarks.md).
`tokenize` is the default
analyser, which operators also use for term overlap. `document_lexical_index` indexes a
document's leaves by their "lexical" node text (content with its section titles,
`bookindex.core.model.node_text`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

from bookindex.core.model import LEAF_TYPES, DocumentTree, node_text

# NLTK's English list as bm25s ships it ("en_plus"): it also drops question words (what, how,
# does, which ...), which Lucene's 33-word list ("en") keeps.
STOPWORDS = frozenset(STOPWORDS_EN_PLUS)
# bm25s's default pattern (words of two or more characters) plus single digits ("Figure 3", "page 5")
TOKEN_PATTERN = r"(?u)\b\w\w+\b|\b\d\b"

_stemmers = threading.local()  # PyStemmer objects are not thread-safe: one per thread and algorithm


def _stemmer(algorithm: str) -> Stemmer.Stemmer:
    per_thread: dict[str, Stemmer.Stemmer] | None = getattr(_stemmers, "by_algorithm", None)
    if per_thread is None:
        per_thread = _stemmers.by_algorithm = {}
    st = per_thread.get(algorithm)
    if st is None:
        st = per_thread[algorithm] = Stemmer.Stemmer(algorithm)
    return st


@dataclass(frozen=True)
class Analyser:
    """Lower-case, split by `token_pattern`, drop `stopwords`, then stem with the Snowball
    algorithm `stemmer` (PyStemmer; "english" is Porter2, None keeps words whole).

    The default is the one analyser of passages and queries everywhere (Text_Reasoning, routing,
    the bm25/hybrid baselines); docs/benchmarks.md has the variants measured against it.
    """

    stopwords: frozenset[str] = STOPWORDS
    stemmer: str | None = None
    token_pattern: str = TOKEN_PATTERN

    def many(self, texts: Sequence[str]) -> list[list[str]]:
        """The terms of each text, in order: the steps of `bm25s.tokenize`, without its per-call
        set-up (progress bars, vocabulary ids), which cost ~0.3 ms a call, ten times the work
        itself, and operators analyse every section title and answer sentence one by one."""
        split = re.compile(self.token_pattern).findall
        terms = [[t for t in split(text.lower()) if t not in self.stopwords] for text in texts]
        if self.stemmer:
            stem = _stemmer(self.stemmer).stemWords
            terms = [stem(t) for t in terms]
        return terms

    def __call__(self, text: str) -> list[str]:
        return self.many([text])[0]


ANALYSER = Analyser()


def tokenize(text: str) -> list[str]:
    """The default analyser's terms of `text` (lower-cased, without stopwords)."""
    return ANALYSER(text)


class LexicalIndex:
    """BM25 (bm25s, Lucene variant, k1 = 1.2, b = 0.75) over `texts`, row-aligned with `ids`."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str], *, analyser: Analyser = ANALYSER,
                 k1: float = 1.2, b: float = 0.75) -> None:
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        self._ids = list(ids)
        self.analyser = analyser
        self._bm25: bm25s.BM25 | None = None
        corpus = analyser.many(texts)
        if any(corpus):  # bm25s cannot index a corpus without a single term
            self._bm25 = bm25s.BM25(k1=k1, b=b)
            self._bm25.index(corpus, show_progress=False)

    @property
    def ids(self) -> list[str]:
        return self._ids

    def scores(self, query: str) -> np.ndarray:
        """One BM25 score per passage (zeros when the query has no indexable term)."""
        terms = self.analyser(query)
        if self._bm25 is None or not terms:
            return np.zeros(len(self._ids), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float32)


def document_lexical_index(tree: DocumentTree) -> LexicalIndex:
    """BM25 over a document's non-empty leaves, each with its section context, and its reference
    entries (parsing.entries), each indexed whole (`node_text`)."""
    leaves = [n for n in tree.walk() if (n.type in LEAF_TYPES and n.content.strip()) or
              (n.type == "section" and n.meta.get("entry"))]
    return LexicalIndex([n.id for n in leaves], [node_text(tree, n, "lexical") for n in leaves])
