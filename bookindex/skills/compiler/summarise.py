"""Cluster summaries and labels: by the LLM (paper appendix C), or extractively without one.

A summary is routing text: the topic, the questions the documents answer and the key terms
(§3.2, "compilation prompts produce routing-oriented summaries"). One LLM call per cluster gives
the summary and its 2-5-word label together, through the one client (cached, so a re-run is free
and an interrupted compile resumes; counted per stage). Without an LLM, class-based TF-IDF key
noun phrases plus the titles nearest the centroid stand in for the summary, and the phrases most
members share for the label (`keyphrases`), so a tree can be compiled offline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, Field

from bookindex.core.errors import BookIndexError, LLMOutputError
from bookindex.core.protocols import LLM
from bookindex.skills.compiler.keyphrases import KeyPhrases
from bookindex.skills.compiler.plaintext import plain_line
from bookindex.skills.model import CorpusDocument

LEAF_STAGE = "skills.summary"     # a cluster of documents
GROUP_STAGE = "skills.overview"   # a cluster of sub-groups
DOC_CHARS = 600                   # per representative document (appendix A)
CHILD_CHARS = 300                 # per sub-group summary (appendix A)
MAX_DOCS = 15
MAX_CHILDREN = 20
TOKEN_BUDGET = 1500               # representatives shown to the model, ~4 characters a token
KEY_TERMS = 8
LABEL_CHARS = 50
LINE_CHARS = 70                   # a document's one line in a leaf listing
SUMMARY_MAX_TOKENS = 400


@dataclass
class ClusterInput:
    """What a summariser sees of one cluster."""

    level: int
    num_documents: int
    documents: list[CorpusDocument]          # descendants, nearest the centroid first
    child_summaries: list[str] = field(default_factory=list)  # level > 1: the sub-groups' summaries


@dataclass
class Summary:
    overview: str
    questions: list[str]
    key_terms: list[str]
    label: str

    def text(self) -> str:
        """The summary paragraph stored on the cluster and shown in its file's Overview."""
        parts = [self.overview.strip()]
        if self.questions:
            parts.append("Questions answered: " + " ".join(_sentence(q) for q in self.questions[:4]))
        if self.key_terms:
            parts.append("Key terms: " + ", ".join(self.key_terms[:KEY_TERMS]) + ".")
        return " ".join(p for p in parts if p)

    def line(self, limit: int = 200) -> str:
        """One line for the parent's listing and the YAML description."""
        return clip(first_sentence(self.overview) or ", ".join(self.key_terms), limit)


class ClusterSummary(BaseModel):
    """The LLM's reply for one cluster."""

    topic: str = Field(description="2-3 sentences: the common topic area, naming concrete products, features, processes")
    questions: list[str] = Field(default_factory=list, description="2-4 kinds of question these documents answer")
    key_terms: list[str] = Field(default_factory=list, description="up to 8 key terms or features")
    # optional: small models drop it now and then, and a label can be made from the key terms,
    # which is cheaper than a repair round trip
    label: str = Field("", description="a 2-5 word lowercase label with hyphens instead of spaces, e.g. payment-fraud-prevention")


class Summariser(Protocol):
    """Summaries for a batch of clusters, in order; `warnings` collects fallbacks."""

    warnings: list[str]

    def summarise(self, clusters: Sequence[ClusterInput]) -> list[Summary]: ...


class ExtractiveSummariser:
    """No-LLM summaries (`keyphrases`): the cluster's most distinctive noun phrases, ranked by
    class-based TF-IDF against the other clusters, and the titles nearest its centroid; the
    label is made of phrases whose words most members use. No document count is written into
    the text: counts are rendered from the membership, which updates change without a new
    summary."""

    def __init__(self, corpus: Sequence[CorpusDocument]) -> None:
        self.warnings: list[str] = []
        self.phrases = KeyPhrases(corpus)

    def summarise(self, clusters: Sequence[ClusterInput]) -> list[Summary]:
        return [self.one(c) for c in clusters]

    def key_terms(self, docs: Sequence[CorpusDocument], n: int = KEY_TERMS) -> list[str]:
        return self.phrases.key_phrases(docs, n)

    def one(self, c: ClusterInput) -> Summary:
        terms = self.key_terms(c.documents)
        titles = [clip(plain_line(d.title), 70).rstrip(".") for d in c.documents[:3]]
        what = "Documents" if c.level == 1 else "Sub-groups of documents"
        overview = f"{what} on {', '.join(terms[:5]) or 'miscellaneous topics'}."
        if titles:
            overview += " Nearest the centre: " + "; ".join(titles) + "."
        label = self.phrases.label(c.documents) or "-".join(terms[:1]) or "documents"
        return Summary(overview=overview, questions=[], key_terms=terms, label=label)


class LLMSummariser:
    """Paper appendix C prompts, asking for JSON (`ClusterSummary`), one call per cluster, run
    through `LLM.map` (concurrent, cached). A cluster whose reply stays invalid after the
    client's repair round gets the extractive summary instead, with a warning; any other LLM
    error (an endpoint down, a runtime missing) stops the compile, which resumes from the cache."""

    def __init__(self, llm: LLM, fallback: ExtractiveSummariser) -> None:
        self.llm = llm
        self.fallback = fallback
        self.warnings: list[str] = []

    def summarise(self, clusters: Sequence[ClusterInput]) -> list[Summary]:
        requests = [{"messages": prompt(c), "schema": ClusterSummary, "max_tokens": SUMMARY_MAX_TOKENS,
                     "stage": LEAF_STAGE if c.level == 1 else GROUP_STAGE} for c in clusters]
        replies = self.llm.map(requests, progress=len(requests) > 1, desc="summarise", return_exceptions=True)
        out = []
        for c, reply in zip(clusters, replies):
            if isinstance(reply, BookIndexError) and not isinstance(reply, LLMOutputError):
                raise reply  # unreachable endpoint, missing runtime: not a per-cluster problem
            if not isinstance(reply, ClusterSummary):
                self.warnings.append(f"level {c.level} cluster of {c.num_documents} documents: "
                                     f"extractive summary used ({str(reply)[:160]})")
                out.append(self.fallback.one(c))
                continue
            terms = [" ".join(t.split()) for t in reply.key_terms if t.strip()][:KEY_TERMS]
            label = next((x for x in (reply.label, " ".join(terms[:3])) if slug(x)), "")
            topic = " ".join(reply.topic.split())
            extract = self.fallback.one(c) if not (topic and terms and label) else None  # parses the corpus
            out.append(Summary(overview=topic or (extract.overview if extract else ""),
                               questions=[" ".join(q.split()) for q in reply.questions if q.strip()][:4],
                               key_terms=terms or (extract.key_terms if extract else []),
                               label=label or (extract.label if extract else "documents")))
        return out


def prompt(c: ClusterInput) -> str:
    """Appendix C's document-level prompt (level 1) or cluster-level prompt (higher levels),
    with the representatives cut to the token budget."""
    budget = TOKEN_BUDGET * 4
    if c.level == 1:
        head = ("You are summarizing a cluster of related documents from a knowledge base. Write a 2-3 sentence "
                "summary that captures:\n1. The common TOPIC area these documents cover\n2. The types of QUESTIONS "
                "these documents answer\n3. Key TERMS or features mentioned across documents\n\nBe specific and "
                "concrete. Name actual features, products, or processes. Also give a short (2-5 word) "
                "filesystem-safe label: lowercase, hyphens instead of spaces.\n\n")
        shown = min(len(c.documents), MAX_DOCS)
        body = [f"Documents ({c.num_documents} total, showing up to {shown}):"]
        for i, d in enumerate(c.documents[:MAX_DOCS], 1):
            piece = f"\n--- Document {i} ---\n{d.title}\n{d.text}"[:DOC_CHARS]
            if budget - len(piece) < 0 and i > 1:
                break
            budget -= len(piece)
            body.append(piece)
        return head + "\n".join(body)
    head = (f"You are summarizing a level-{c.level} grouping of {len(c.child_summaries)} sub-groups from a knowledge "
            "base. Each sub-group already has a summary below.\n\nWrite a 2-3 sentence overview that captures:\n"
            "1. The broad DOMAIN these sub-groups cover\n2. The range of TOPICS within this domain\n3. What types of "
            "user QUESTIONS this group can answer\n\nBe specific -- name the main product areas, features, or "
            "workflows. Also give a short (2-5 word) filesystem-safe label: lowercase, hyphens instead of spaces."
            "\n\nSub-group summaries:\n")
    lines = []
    for i, s in enumerate(c.child_summaries[:MAX_CHILDREN], 1):
        piece = f"- Sub-group {i}: {s[:CHILD_CHARS]}"
        if budget - len(piece) < 0 and i > 1:
            break
        budget -= len(piece)
        lines.append(piece)
    return head + "\n".join(lines)


def slug(label: str, limit: int = LABEL_CHARS) -> str:
    """A filesystem-safe label (appendix C's post-processing): lowercase, runs of anything but
    [a-z0-9] become one hyphen, at most five words and `limit` characters, cut at a hyphen."""
    words = [w for w in re.sub(r"[^a-z0-9]+", "-", label.lower()).split("-") if w][:5]
    out = ""
    for w in words:
        cand = f"{out}-{w}" if out else w
        if len(cand) > limit:
            break
        out = cand
    return out or (words[0][:limit] if words else "")


def doc_line(doc: CorpusDocument, limit: int = LINE_CHARS) -> str:
    """A document's one line in a leaf listing: its first sentence that is not its title, as
    plain text (a Markdown file's `# heading` is its title, not a line to show twice)."""
    text = plain_line(doc.text)
    title = plain_line(doc.title)
    if title and text.lower().startswith(title.lower()):
        text = text[len(title):].lstrip(" .:-#")
    return clip(first_sentence(text), limit)


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])", text)
    return text[:m.start()] if m else text


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 3].rsplit(" ", 1)[0] if " " in text[:limit - 3] else text[:limit - 3]
    return cut.rstrip(",;:") + "..."


def _sentence(q: str) -> str:
    q = " ".join(q.split())
    return q if q.endswith(("?", ".", "!")) else q + "?"
