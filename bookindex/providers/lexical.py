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

import hashlib
import json
import logging
import re
import threading
import unicodedata
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

from bookindex.core.atomic import write_json_atomic
from bookindex.core.model import LEAF_TYPES, DocumentTree, Node, node_text
from bookindex.core.pipe_tables import TABLE_RULE

# NLTK's English list as bm25s ships it ("en_plus"): it also drops question words (what, how,
# does, which ...), which Lucene's 33-word list ("en") keeps.
STOPWORDS = frozenset(STOPWORDS_EN_PLUS)
# bm25s's default pattern (words of two or more characters) plus single digits ("Figure 3", "page 5")
TOKEN_PATTERN = r"(?u)\b\w\w+\b|\b\d\b"

# U+FB00-FB06 (ff, fi, fl, ffi, ffl, long st, st) as the letters Unicode's compatibility form gives
LIGATURES = str.maketrans({c: unicodedata.normalize("NFKC", c) for c in map(chr, range(0xFB00, 0xFB07))})

_HYPHENATED = re.compile(r"(?<![\w-])[a-z]+(?:-[a-z]+)+(?![\w-])")  # "read-only", "built-in", "e-mail"

_stemmers = threading.local()  # PyStemmer objects are not thread-safe: one per thread and algorithm


def _stemmer(algorithm: str) -> Stemmer.Stemmer:
    per_thread: dict[str, Stemmer.Stemmer] | None = getattr(_stemmers, "by_algorithm", None)
    if per_thread is None:
        per_thread = _stemmers.by_algorithm = {}
    st = per_thread.get(algorithm)
    if st is None:
        st = per_thread[algorithm] = Stemmer.Stemmer(algorithm)
    return st


def stem_words(words: list[str], algorithm: str = "english") -> list[str]:
    """`words` stemmed by the Snowball `algorithm` (PyStemmer; "english" is Porter2), with this
    thread's stemmer."""
    return _stemmer(algorithm).stemWords(words)


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
    # typographic ligatures read as their letters: a PDF typeset by TeX prints "ﬁle" for "file",
    # and a query typed on a keyboard never matches the glyph (part of the fingerprint, so an
    # index stored before is rebuilt)
    fold_ligatures: bool = True

    def many(self, texts: Sequence[str]) -> list[list[str]]:
        """The terms of each text, in order: the steps of `bm25s.tokenize`, without its per-call
        set-up (progress bars, vocabulary ids), which cost ~0.3 ms a call, ten times the work
        itself, and operators analyse every section title and answer sentence one by one."""
        split = re.compile(self.token_pattern).findall
        fold = LIGATURES if self.fold_ligatures else {}
        terms = [[t for t in split(text.lower().translate(fold)) if t not in self.stopwords] for text in texts]
        if self.stemmer:
            terms = [stem_words(t, self.stemmer) for t in terms]
        return terms

    def __call__(self, text: str) -> list[str]:
        return self.many([text])[0]

    def query(self, text: str) -> list[str]:
        """The terms a query is scored with: its words, and each word it writes with hyphens as
        one word too ("read-only" also "readonly", "built-in" "builtin"). A user types the
        dictionary's spelling where a manual writes the compound whole; the passages' terms are
        left as they are, so a stored index still holds."""
        fold = LIGATURES if self.fold_ligatures else {}
        joined = [m.group(0).replace("-", "") for m in _HYPHENATED.finditer(text.lower().translate(fold))]
        joined = [w for w in joined if w not in self.stopwords]
        return self(text) + (stem_words(joined, self.stemmer) if self.stemmer and joined else joined)


ANALYSER = Analyser()

# the shortest part of a joined word: shorter parts ("us" + "age") join words by chance
JOINED_PART = 3


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer("english").stemWord(word)


def _parts(word: str, stems: frozenset[str]) -> tuple[str, ...]:
    """The stems of `stems` that `word` writes as one, in order, each part at least `JOINED_PART`
    letters, in any inflection ("bookmarksnumbered": bookmark, number); () when it is not such a
    word."""
    for i in range(JOINED_PART, len(word) - JOINED_PART + 1):
        head, rest = _stem(word[:i]), word[i:]
        if head not in stems:
            continue
        tail = (_stem(rest),) if _stem(rest) in stems else _parts(rest, stems)
        if tail:
            return (head, *tail)
    return ()


def joined_parts(word: str, words: Sequence[str]) -> tuple[str, ...]:
    """The `words` that `word` writes as one, in its order ("bookmarksnumbered" of "section
    numbers ... bookmarks": bookmarks, numbers); () when it writes fewer than two of them."""
    by_stem = {_stem(w): w for w in words if w.isalpha()}
    return tuple(by_stem[p] for p in _parts(word, frozenset(by_stem)))


_CAPITALISED = re.compile(r"\b[A-Z][\w-]*")


def capitalised(text: str) -> list[str]:
    """The words `text` writes with a capital, lower case: the names a question gives."""
    return [w.lower() for w in _CAPITALISED.findall(text)]


def joined_words(words: Sequence[str], candidates: Iterable[str], names: Iterable[str] = ()) -> list[str]:
    """The `candidates` that write two or more of `words` as one word, in any order and
    inflection: a manual's key names ("urlcolor", "bookmarksnumbered", "tocdepth") for a question
    that says "URL ... color", "section numbers ... bookmarks". Only words the question says both
    parts of are joined, so "pdflatex" is not found for a question about PDF files; and not one
    made of `names` only (the question's words written as a name, "Best Buy"), which a document
    writes whole only in its addresses ("bestbuy.com")."""
    stems = frozenset(_stem(w) for w in words if w.isalpha())
    if len(stems) < 2:
        return []
    named = frozenset(_stem(w) for n in names for w in n.split())
    said = set(words)
    # a joined word opens with one of the words or its stem: a cheap test before splitting
    heads = tuple(h for h in {*stems, *said} if len(h) >= JOINED_PART)
    found = []
    for c in candidates:
        if c in said or len(c) < 2 * JOINED_PART or not c.startswith(heads) or not c.isalpha():
            continue
        parts = _parts(c, stems)
        if parts and not named.issuperset(parts):
            found.append(c)
    return found


def word_stems(text: str) -> frozenset[str]:
    """The distinct stems of `text`'s words (the shared analyser, then Porter2): the same words
    in any order and any inflection ("Statement of Cash Flows", "cash flow statements")."""
    return frozenset(stem_words(ANALYSER(text)))


def tokenize(text: str) -> list[str]:
    """The default analyser's terms of `text` (lower-cased, without stopwords)."""
    return ANALYSER(text)


STORED_FORMAT = 1  # LexicalIndex.save's layout; another value is not read
_STORED_META = "lexical.json"
_log = logging.getLogger(__name__)


class LexicalIndex:
    """BM25 (bm25s, Lucene variant, k1 = 1.2, b = 0.75) over `texts`, row-aligned with `ids`."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str], *, analyser: Analyser = ANALYSER,
                 k1: float = 1.2, b: float = 0.75) -> None:
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        self._ids = list(ids)
        self.analyser = analyser
        self._bm25: bm25s.BM25 | None = None
        self.k1, self.b = k1, b
        corpus = analyser.many(texts)
        if any(corpus):  # bm25s cannot index a corpus without a single term
            self._bm25 = bm25s.BM25(k1=k1, b=b)
            self._bm25.index(corpus, show_progress=False)

    def save(self, folder: Path, fingerprint: str, source: str | None = None) -> None:
        """Write the index into `folder`: bm25s's own files, and `lexical.json` with the passage
        ids, `fingerprint` (`passages_fingerprint` of what was indexed) and `source` (the digest
        of the file the passages were read from: `load_for_source`). `folder` belongs to a
        generation being built: no reader sees it half-written."""
        folder.mkdir(parents=True, exist_ok=True)
        if self._bm25 is not None:
            self._bm25.save(str(folder), show_progress=False)
        meta = {"format": STORED_FORMAT, "fingerprint": fingerprint, "ids": self._ids,
                "empty": self._bm25 is None, "source": source}
        write_json_atomic(folder / _STORED_META, meta, indent=None)  # last: its presence marks a whole index

    @classmethod
    def load(cls, folder: Path, ids: Sequence[str], fingerprint: str, *,
             analyser: Analyser = ANALYSER) -> LexicalIndex | None:
        """The index `save` wrote under `fingerprint` for these passage ids; None when there is
        none, it was written for other passages or settings (the document changed), or it cannot
        be read: then the caller builds it."""
        meta = _stored_meta(folder)
        if meta is None or meta.get("fingerprint") != fingerprint or meta.get("ids") != list(ids):
            return None
        return cls._read(folder, meta, analyser)

    @classmethod
    def load_for_source(cls, folder: Path, source: str, *, analyser: Analyser = ANALYSER) -> LexicalIndex | None:
        """The index `save` stored from the file whose digest is `source` (and with today's
        analyser, BM25 parameters and bm25s version, `passages_fingerprint` of nothing), without
        reading the passages again: what a document's first question opens. None when it was
        stored from another file or before indexes recorded their source (then `load`)."""
        meta = _stored_meta(folder)
        if meta is None or not source or meta.get("source") != f"{source}:{_settings_digest(analyser)}":
            return None
        return cls._read(folder, meta, analyser)

    @classmethod
    def _read(cls, folder: Path, meta: dict[str, object], analyser: Analyser) -> LexicalIndex | None:
        ids = meta.get("ids")
        if not isinstance(ids, list):
            return None
        index = cls.__new__(cls)
        index._ids, index.analyser, index._bm25 = [str(i) for i in ids], analyser, None
        if not meta.get("empty"):
            try:
                index._bm25 = bm25s.BM25.load(str(folder), show_progress=False)
                index.k1, index.b = index._bm25.k1, index._bm25.b
            except (OSError, ValueError, KeyError) as exc:
                _log.warning("%s: stored lexical index unreadable (%s); building it", folder, exc)
                return None
        return index

    @property
    def ids(self) -> list[str]:
        return self._ids

    @cached_property
    def _vocabulary(self) -> list[str]:
        """The index's terms, sorted (built on first use: a prefix is then found by bisection)."""
        return sorted(self._bm25.vocab_dict) if self._bm25 is not None else []

    def joined_terms(self, terms: Sequence[str], names: Iterable[str] = ()) -> list[str]:
        """The index's words that join two or more of the query's `terms` (`joined_words`, not of
        `names` alone): those that start with a term or its stem. A manual names a key by its
        parts run together, a user writes the parts."""
        vocab = self._vocabulary
        found: set[str] = set()
        for prefix in {p for t in terms if t.isalpha() for p in (t, _stem(t)) if len(p) >= JOINED_PART}:
            i = bisect_left(vocab, prefix)
            while i < len(vocab) and vocab[i].startswith(prefix):
                found.add(vocab[i])
                i += 1
        return sorted(joined_words(terms, found, names))

    def scores(self, query: str) -> np.ndarray:
        """One BM25 score per passage (zeros when the query has no indexable term). The query's
        terms are its analysed words and the index's words that join two of them
        (`joined_terms`)."""
        terms = self.analyser.query(query)
        if self._bm25 is None or not terms:
            return np.zeros(len(self._ids), dtype=np.float32)
        terms += self.joined_terms(terms, capitalised(query))
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float32)


def _stored_meta(folder: Path) -> dict[str, object] | None:
    """lexical.json of a stored index, None when missing, unreadable or of another format."""
    try:
        meta = json.loads((folder / _STORED_META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == STORED_FORMAT else None


@lru_cache(maxsize=8)
def _settings_digest(analyser: Analyser = ANALYSER, k1: float = 1.2, b: float = 0.75) -> str:
    """What an index is built with besides its passages (`passages_fingerprint` of none)."""
    return passages_fingerprint([], [], analyser, k1, b)[:16]


def source_tag(source: str) -> str:
    """The `source` an index built from the file of digest `source` is saved with (the settings
    it was built with appended: another analyser or bm25s version is not read as current)."""
    return f"{source}:{_settings_digest()}"


def passages_fingerprint(ids: Sequence[str], texts: Sequence[str], analyser: Analyser = ANALYSER,
                         k1: float = 1.2, b: float = 0.75) -> str:
    """sha256 of what an index is built from: passages, analyser, BM25 parameters, bm25s version."""
    h = hashlib.sha256(json.dumps([asdict(analyser) | {"stopwords": sorted(analyser.stopwords)}, k1, b,
                                   bm25s.__version__]).encode())
    for i, t in zip(ids, texts):
        h.update(i.encode())
        h.update(b"\x1f")
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()


def document_passages(tree: DocumentTree) -> tuple[list[str], list[str]]:
    """(node ids, texts) of what a document's BM25 index holds: its non-empty leaves and its
    reference entries, each as its "lexical" node text."""
    leaves = [n for n in tree.walk() if (n.type in LEAF_TYPES and n.content.strip()) or
              (n.type == "section" and n.meta.get("entry"))]
    return [n.id for n in leaves], [node_text(tree, n, "lexical") for n in leaves]


ROWS_DIR = "rows"  # the table-row index, inside the folder of the leaves' index


def table_titles(tree: DocumentTree, table: Node) -> list[str]:
    """The titles of the two sections nearest a table, outermost first: what its rows carry."""
    return [p.title for p in tree.parent_path(table) if p.type == "section" and p.title][-2:]


def table_row_passages(tree: DocumentTree) -> tuple[list[str], list[str]]:
    """Each table's body rows as passages: (the table's node id once per row, texts). A row's
    text is the table's two nearest section titles, its first row and the row: a question names a
    row and a column ("net cash provided by operating activities", "2020"), and a statement of a
    hundred rows matches it weakly as a whole, or not at all past what a leaf is indexed by."""
    ids: list[str] = []
    texts: list[str] = []
    for n in tree.walk():
        if n.type != "table" or not n.content.strip():
            continue
        lines = [ln for ln in n.content.splitlines() if ln.lstrip().startswith("|") and not TABLE_RULE.match(ln)]
        if len(lines) < 3:
            continue
        titles = table_titles(tree, n)
        for row in lines[1:]:
            ids.append(n.id)
            texts.append("\n".join([*titles, lines[0], row]))
    return ids, texts


def document_lexical_index(tree: DocumentTree, stored: Path | None = None, source: str | None = None) -> LexicalIndex:
    """BM25 over a document's non-empty leaves, each with its section context, and its reference
    entries (parsing.entries), each indexed whole (`node_text`); read from `stored` (a folder
    `save_document_lexical_index` wrote) when it holds the index of exactly these passages: at
    once when it was stored from the tree file of digest `source`, else after reading the
    passages again to compare (an index stored before indexes recorded their source)."""
    if stored is not None:
        index = LexicalIndex.load_for_source(stored, source) if source else None
        if index is None:
            index = stored_document_lexical_index(tree, stored)
        if index is not None:
            return index
    return LexicalIndex(*document_passages(tree))


def stored_document_lexical_index(tree: DocumentTree, stored: Path) -> LexicalIndex | None:
    """The index `save_document_lexical_index` stored in `stored` for exactly this tree's
    passages; None when there is none or it is of other passages."""
    ids, texts = document_passages(tree)
    return LexicalIndex.load(stored, ids, passages_fingerprint(ids, texts))


def document_row_index(tree: DocumentTree, stored: Path | None = None, source: str | None = None) -> LexicalIndex | None:
    """BM25 over the document's table rows (`table_row_passages`; its ids are the tables' node
    ids, one per row), read from `stored` when it holds exactly these rows (at once when stored
    from the tree file of digest `source`, as `document_lexical_index`); None without tables."""
    if stored is not None and source:
        if (stored / ROWS_DIR / _STORED_META).is_file():
            index = LexicalIndex.load_for_source(stored / ROWS_DIR, source)
            if index is not None:
                return index
        elif LexicalIndex.load_for_source(stored, source) is not None:
            return None  # stored from this very tree, without a rows index: it has no tables
    ids, texts = table_row_passages(tree)
    if not ids:
        return None
    if stored is not None:
        index = LexicalIndex.load(stored / ROWS_DIR, ids, passages_fingerprint(ids, texts))
        if index is not None:
            return index
    return LexicalIndex(ids, texts)


def stored_indexes_current(tree: DocumentTree, stored: Path, source: str | None = None) -> bool:
    """Whether `stored` holds the leaves' index and the table rows' index of exactly this tree;
    with `source` (the tree file's digest), also whether they say so (so the first question opens
    them without reading the passages: `document_lexical_index`)."""
    if source is not None:
        ids, _ = table_row_passages(tree)
        rows = not ids or LexicalIndex.load_for_source(stored / ROWS_DIR, source) is not None
        if not rows or LexicalIndex.load_for_source(stored, source) is None:
            return False
    if stored_document_lexical_index(tree, stored) is None:
        return False
    ids, texts = table_row_passages(tree)
    return not ids or LexicalIndex.load(stored / ROWS_DIR, ids, passages_fingerprint(ids, texts)) is not None


def save_document_lexical_index(tree: DocumentTree, folder: Path, source: str | None = None) -> LexicalIndex:
    """Build the document's index (`document_lexical_index`) and its table rows' index
    (`document_row_index`, in `folder/rows` when it has tables), and store them in `folder`, each
    marked as read from the tree file of digest `source` when given."""
    tag = source_tag(source) if source else None
    row_ids, row_texts = table_row_passages(tree)
    if row_ids:
        LexicalIndex(row_ids, row_texts).save(folder / ROWS_DIR, passages_fingerprint(row_ids, row_texts), tag)
    ids, texts = document_passages(tree)
    index = LexicalIndex(ids, texts)
    index.save(folder, passages_fingerprint(ids, texts), tag)  # last: its lexical.json marks the folder whole
    return index
