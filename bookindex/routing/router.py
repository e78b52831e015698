"""Which documents of a library a question is about, without an LLM.

Five signals per document, fused by weighted reciprocal rank (k = 5, see `RRF_K`), because each
fails on different questions (measured on MMLongBench dev pooled as one library, docs/benchmarks.md
"Library hierarchy"):
- `nodes`: the mean of the question's best cosines with the document's stored node vectors (its
  sections and blocks): the best three, or the best hundredth of a document's nodes when it has
  more than 300. The best node alone (`Engine.route`) is won by one lucky caption; the top three
  are steadier. A fixed count is not comparable across documents of different lengths: the
  third-best of a 10-K's 2,300 nodes is a far more extreme draw than the third-best of a press
  release's 190, so a long document won on this signal for being long. The same share of each
  document's nodes compares like with like.
- `lexical`: BM25 over whole documents with one library-wide IDF, so a term that names one
  document ("Best Buy", "Camry") counts, while a term every report shares does not.
- `passages`: BM25 over every document's passages (the leaves its own BM25 index holds) with one
  library-wide IDF, each document scored by the mean of its best passages (the same share as
  `nodes`). Documents of one kind (two watch manuals, ten NLP papers, ten years of one company's
  filings) share their vocabulary, so whole-document BM25 barely separates them; what separates
  them is one passage holding the question's words together ("gallery", "watch face", "time").
- `vector`: the cosine with the document's own embedding (title and opening text: what the
  topic clusters of a skill folder were built from).
- `name`: question words (a company, a year) that name the document by its file name, its title
  or what its cover says it is (the organisation and fiscal year of `parsing.identity`); sparse: a
  document it does not match gets no rank from it.

A question that asks about a reporting period (it names a fiscal year, a form or a quarter) is
then ranked by what the documents' covers say they are (`identity_match`), before the fused
score: first the documents of the organisation it names (when some document is of it: by any of
the names its documents go by, legal forms aside, with the former names a filing states and the
documents whose covers print one employer identification number), then by fiscal year among them
(a document stating only other years than the named ones comes after every one stating a named
year, one stating the latest named year first), then those of the form it names. For a filing, a wrong company or
year is a wrong answer, whatever its text shares with the question. A question that names no
period keeps the fused ranking. The trace's `organisation`, `year` and `form` signals are these
values, and `decided_by` says which one (or the fused score) put the chosen document first.

The router is written against `core.protocols.DocumentIndex`: any store's documents can be routed.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from bookindex.core.protocols import DocumentIndex, Embedder
from bookindex.parsing.identity import DocumentIdentity
from bookindex.providers.lexical import LexicalIndex, document_passages
from bookindex.routing.document_text import DocumentText, embed_documents, tree_text
from bookindex.routing.identity_match import IdentityMatcher
from bookindex.routing.names import NameMatcher, joined_runs

# The fusion constant. TREC's k = 60 was set for runs of a thousand documents; over a library of
# tens, it makes a first and a second place nearly equal (1/61, 1/62) while a half-weighted signal's
# first and eleventh places differ by more: a document first on nodes and lexical lost to one second
# on both. With k = 5 the first places of the strong signals decide. Chosen on MMLongBench dev + dev2
# and financebench pooled (docs/benchmarks.md, "A library of filings"): development figures.
RRF_K = 5
TOP_NODES = 3          # node cosines averaged for the `nodes` signal, at least
TOP_NODES_SHARE = 0.01  # ... or this share of a document's nodes, when more
SIGNALS = ("nodes", "lexical", "passages", "vector", "name")
SPARSE = frozenset({"name"})   # signals that rank only the documents they match
# the document embedding is the weakest signal alone (hit@1 0.57 vs 0.71 nodes, 0.64 lexical on
# MMLongBench dev pooled) and counts half; tuned on that split, so its figures are development ones
# (docs/benchmarks.md, "Library hierarchy", for the `name` weight too). `passages` counts as the
# other strong signals, untuned.
WEIGHTS = {"nodes": 1.0, "lexical": 1.0, "passages": 1.0, "vector": 0.5, "name": 0.5}
EMBED_CHARS = 2000   # of a document embedded for the `vector` signal (the compiler's default)
ROUTE_SHOWN = 5      # documents of a routing decision kept in a trace
TIERS = ("organisation", "year", "form")  # what a cover says, in the order it decides


@dataclass
class RoutedDocument:
    doc_id: str
    score: float                   # the fused RRF score
    signals: dict[str, float]      # each signal's raw value
    ranks: dict[str, int]          # each signal's rank (1 = best)


class LibraryRouter:
    """Document ranking for one library state; built once, queried per question."""

    def __init__(self, doc_ids: Sequence[str], texts: Sequence[str], doc_vectors: np.ndarray,
                 node_vectors: Sequence[np.ndarray | None], names: Sequence[str] | None = None,
                 weights: dict[str, float] | None = None,
                 identities: Sequence[DocumentIdentity] | None = None,
                 passages: Sequence[Sequence[str]] | None = None) -> None:
        self._assemble(doc_ids, LexicalIndex(list(doc_ids), list(texts)),
                       PassageScores(passages if passages is not None else [[] for _ in doc_ids]),
                       doc_vectors, node_vectors, names, weights, identities)

    @classmethod
    def from_parts(cls, doc_ids: Sequence[str], *, lexical: LexicalIndex, passages: PassageScores,
                   doc_vectors: np.ndarray, node_vectors: Sequence[np.ndarray | None], names: Sequence[str],
                   identities: Sequence[DocumentIdentity], weights: dict[str, float]) -> LibraryRouter:
        """A router of indexes already built (`routing.stored` reads them from a router folder):
        nothing is tokenised or embedded."""
        router = cls.__new__(cls)
        router._assemble(doc_ids, lexical, passages, doc_vectors, node_vectors, names, weights, identities)
        return router

    def _assemble(self, doc_ids: Sequence[str], lexical: LexicalIndex, passages: PassageScores,
                  doc_vectors: np.ndarray, node_vectors: Sequence[np.ndarray | None],
                  names: Sequence[str] | None, weights: dict[str, float] | None,
                  identities: Sequence[DocumentIdentity] | None) -> None:
        self.doc_ids = list(doc_ids)
        # what each document's cover says it is (empty: nothing)
        self.identity = IdentityMatcher(list(identities) if identities is not None
                                        else [DocumentIdentity()] * len(self.doc_ids))
        self.lexical = lexical
        self.passages = passages
        self.doc_vectors = np.asarray(doc_vectors, dtype=np.float32)
        self.node_vectors = list(node_vectors)
        self.names = NameMatcher(names if names is not None else [""] * len(self.doc_ids))
        self.weights = dict(WEIGHTS if weights is None else weights)

    def signals(self, question: str, qvec: np.ndarray) -> dict[str, np.ndarray]:
        """Each signal's value for every document, in `doc_ids` order."""
        # float32 like the matrices: a float64 vector made numpy copy every matrix per question
        qvec = np.asarray(qvec, dtype=np.float32)
        nodes = np.array([_top_mean(m, qvec) for m in self.node_vectors], dtype=np.float32)
        return {"nodes": nodes, "lexical": np.asarray(self.lexical.scores(question), dtype=np.float32),
                "passages": self.passages.scores(question),
                "vector": self.doc_vectors @ qvec if len(self.doc_vectors) else np.zeros(0, np.float32),
                "name": self.names.scores(question)}

    def rank(self, question: str, qvec: np.ndarray, candidates: Sequence[str] | None = None) -> list[RoutedDocument]:
        """Documents (all, or `candidates`) by fused rank, ties by id."""
        values = self.signals(question, qvec)
        keep = [i for i, d in enumerate(self.doc_ids) if candidates is None or d in set(candidates)]
        ranks: dict[int, dict[str, int]] = {i: {} for i in keep}
        fused: dict[int, float] = {}
        for name in SIGNALS:
            ranked = [i for i in keep if name not in SPARSE or values[name][i] > 0]
            scores = sorted((-float(values[name][i]) for i in ranked))
            weight = self.weights.get(name, 0.0)
            for i in ranked:
                # equal values share the best rank: a tie (two filings of one company matching the
                # same name words) must not be broken by document id
                r = bisect_left(scores, -float(values[name][i])) + 1
                ranks[i][name] = r
                fused[i] = fused.get(i, 0.0) + weight / (RRF_K + r)
        tiers = self.identity_signals(question, keep)
        out = [RoutedDocument(self.doc_ids[i], round(fused.get(i, 0.0), 6),
                              {**{n: round(float(values[n][i]), 4) for n in SIGNALS},
                               **{t: tiers[t][i] for t in TIERS}}, ranks[i])
               for i in keep]
        out.sort(key=lambda r: (*tier_key(r), -r.score, r.doc_id))
        return out

    def identity_signals(self, question: str, keep: Sequence[int]) -> dict[str, list[float]]:
        """Per document (all of the library, indexed as `doc_ids`) the `organisation`, `year`
        and `form` values that order the documents before the fused score (`tier_key`); all 0
        but a demoting `year` when the question names no reporting period."""
        n = len(self.doc_ids)
        kept = set(keep)
        zeros = [0.0] * n
        if not self.identity.names_a_period(question):
            return {"organisation": zeros, "year": zeros, "form": zeros}
        org = self.identity.organisation(question)
        named = any(org[i] for i in kept)
        # a document of another organisation than the one named: -1, after every document of it
        organisation = [(1.0 if org[i] else -1.0) if named else 0.0 for i in range(n)]
        among = [i in kept and (not named or org[i] > 0) for i in range(n)]
        return {"organisation": organisation, "year": self.identity.year(question, among),
                "form": self.identity.form(question)}


class PassageScores:
    """Every document's passages in one BM25 index (one IDF); a document's score is the mean of
    its best passages' (`top_nodes` of them), 0 for a document without passages."""

    def __init__(self, passages: Sequence[Sequence[str]]) -> None:
        texts = [t for doc in passages for t in doc]
        self.bounds = np.cumsum([0, *(len(doc) for doc in passages)])
        self.index = LexicalIndex([str(i) for i in range(len(texts))], texts) if texts else None

    @classmethod
    def from_index(cls, bounds: np.ndarray, index: LexicalIndex | None) -> PassageScores:
        """Scores over an index already built: `bounds[i]:bounds[i + 1]` are document i's rows."""
        scores = cls.__new__(cls)
        scores.bounds, scores.index = np.asarray(bounds), index
        return scores

    def scores(self, question: str) -> np.ndarray:
        out = np.zeros(len(self.bounds) - 1, dtype=np.float32)
        if self.index is None:
            return out
        s = np.asarray(self.index.scores(question), dtype=np.float32)
        for i, (a, b) in enumerate(zip(self.bounds[:-1], self.bounds[1:])):
            if b > a:
                k = min(top_nodes(int(b - a)), int(b - a))
                out[i] = float(np.partition(s[a:b], b - a - k)[-k:].mean())
        return out


def _top_mean(matrix: np.ndarray | None, qvec: np.ndarray) -> float:
    if matrix is None or not len(matrix):
        return -1.0
    sims = matrix @ qvec
    k = min(top_nodes(len(sims)), len(sims))
    return float(np.partition(sims, len(sims) - k)[-k:].mean())


def top_nodes(n: int) -> int:
    """How many of a document's `n` node cosines its `nodes` signal averages: the best three, or
    the best hundredth of a long document, so that documents of any length are compared at the
    same rank of their own nodes."""
    return max(TOP_NODES, round(TOP_NODES_SHARE * n))


def tier_key(r: RoutedDocument) -> tuple[float, ...]:
    """The identity part of a document's sort key: organisation, year, form (smaller first)."""
    return (-r.signals.get("organisation", 0.0), r.signals.get("year", 0.0) < 0,
            -r.signals.get("year", 0.0), -r.signals.get("form", 0.0))


def decided_by(ranked: Sequence[RoutedDocument], weights: dict[str, float] | None = None) -> str:
    """What put the first document before the second: the first identity signal whose value
    differs (`organisation`, `year`, `form`), else the signal of the fused score that gave the
    first the most over the second (a signal ranking both alike decided nothing), or "only" for
    a single document."""
    if len(ranked) < 2:
        return "only"
    first, second = ranked[0], ranked[1]
    for name, a, b in zip(("organisation", "year", "year", "form"), tier_key(first), tier_key(second)):
        if a != b:
            return name
    w = WEIGHTS if weights is None else weights

    def share(doc: RoutedDocument, signal: str) -> float:
        r = doc.ranks.get(signal)
        return w.get(signal, 0.0) / (RRF_K + r) if r else 0.0

    gains = {s: share(first, s) - share(second, s) for s in SIGNALS}
    best = max(SIGNALS, key=lambda s: gains[s])
    return f"fused ({best})" if gains[best] > 0 else "fused"


def decision_of(ranked: Sequence[RoutedDocument], route: str) -> dict[str, object]:
    """The routing decision as a trace shows it: how, the chosen document, what decided, the runners-up."""
    return {"route": route, "chosen": ranked[0].doc_id if ranked else None, "decided_by": decided_by(ranked),
            "ranking": [{"doc_id": r.doc_id, "score": r.score, "signals": r.signals, "ranks": r.ranks}
                        for r in ranked[:ROUTE_SHOWN]]}


D = TypeVar("D", bound=DocumentIndex)


def router_for(docs: Sequence[D], embedder: Embedder, embed_chars: int = EMBED_CHARS,
               done: Callable[[D], None] | None = None) -> LibraryRouter:
    """A router over a library's documents: their text and title (as the skills compiler reads
    them), their embedding, their stored node vectors, their passages, and what their covers say
    they are.
    `done(doc)` is called once a document has been read (a library's documents unload there)."""
    idents, texts, node_vectors, passages = [], [], [], []
    for d in docs:
        ident = DocumentIdentity.from_dict(d.manifest.get("identity"))
        idents.append(ident)
        texts.append(DocumentText(title=_title(d, ident), text=tree_text(d.tree)))
        node_vectors.append(_normalised(d.node_vectors()[1]))
        passages.append(document_passages(d.tree)[1])
        if done is not None:
            done(d)
    vectors = embed_documents(texts, embedder, embed_chars)
    return LibraryRouter([d.doc_id for d in docs], [f"{t.title}\n{t.text}" for t in texts], vectors, node_vectors,
                         names=[f"{d.name} {t.title} {_identity_words(i)}" for d, t, i in zip(docs, texts, idents)],
                         identities=idents, passages=passages)


def _title(doc: DocumentIndex, ident: DocumentIdentity) -> str:
    """The tree's title, and what the cover says the document is when the tree's title is only
    the file name (a PDF without outline or metadata title)."""
    title = doc.tree.root.title.strip() or doc.name
    said = " ".join(x for x in (ident.organisation, ident.title) if x and x not in title)
    return f"{title} {said}".strip() if title == doc.name else title


def identity_names(manifest: dict[str, object]) -> str:
    """The words by which a question names a document through the identity in its manifest."""
    return _identity_words(DocumentIdentity.from_dict(manifest.get("identity")))


def _identity_words(ident: DocumentIdentity) -> str:
    """The organisation and its former names, else the cover's title (their runs of capitalised
    words also joined, as file names and questions write "Best Buy": "bestbuy"), the ticker, and
    the fiscal years."""
    # a filing's cover title is boilerplate ("UNITED STATES SECURITIES AND EXCHANGE COMMISSION")
    # that names no document: its organisation does
    title_runs = joined_runs(ident.title) if not ident.organisation else []
    names = [ident.organisation, *ident.aliases]
    parts = [*names, *(run for n in names for run in joined_runs(n)), *title_runs, ident.ticker,
             *(str(y) for y in sorted(ident.years()))]
    return " ".join(p for p in parts if p)


def _normalised(m: np.ndarray | None) -> np.ndarray | None:
    if m is None:
        return None
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(n > 0, n, 1.0)).astype(np.float32)
