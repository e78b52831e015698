"""Summaries of a document skill: the document's paragraph and its top-level sections' lines.

With an LLM, one call per document (stage `skills.document`, through the one client: cached,
counted, schema-validated with repair) reads the title, the opening text and each top-level
section's title and first sentences, and returns the summary and one line per section. One call
per document, not per section: a 200-page report has hundreds of sections, and the lines that
matter for routing are the ones in SKILL.md. Deeper sections and anything the model leaves out
get the extractive line (first sentence of the section's first text), so a reply that drops a
section costs nothing but that line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, Field

from bookindex.core.errors import BookIndexError, LLMOutputError
from bookindex.core.model import DocumentTree, Node
from bookindex.core.protocols import LLM
from bookindex.skills.compiler.docskill import LINE_CHARS, SUMMARY_CHARS, extractive_line, extractive_summary, top_sections
from bookindex.skills.compiler.summarise import clip, first_sentence

DOC_STAGE = "skills.document"
PROMPT_CHARS = 6000      # of the document shown to the model (~1,500 tokens)
SECTION_CHARS = 200      # per top-level section in the prompt
MAX_SECTIONS = 30        # top-level sections the model is asked about
MAX_TOKENS = 500


class DocumentReply(BaseModel):
    """The LLM's reply for one document."""

    summary: str = Field(description="2-3 sentences: what the document is, what it covers, what questions it answers")
    sections: list[str] = Field(default_factory=list,
                                description="one short line per numbered section, in the same order")


@dataclass
class DocumentSummary:
    summary: str
    lines: dict[str, str] = field(default_factory=dict)   # section node id -> one line

    def line(self, tree: DocumentTree, node: Node) -> str:
        return self.lines.get(node.id) or extractive_line(tree, node)


class DocumentSummariser(Protocol):
    """Summaries for a batch of documents, in order; `tag` names it in the document hash."""

    tag: str
    warnings: list[str]

    def summarise(self, docs: list[tuple[DocumentTree, str]]) -> list[DocumentSummary]: ...


class ExtractiveDocumentSummariser:
    tag = "extractive"

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def summarise(self, docs: list[tuple[DocumentTree, str]]) -> list[DocumentSummary]:
        return [DocumentSummary(extractive_summary(t, name)) for t, name in docs]


class LLMDocumentSummariser:
    """One `LLM.map` over the documents; an invalid reply falls back to the extractive summary
    with a warning, any other LLM error stops the build (it resumes from the cache)."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.tag = f"llm:{llm.model or 'llm'}"
        self.warnings: list[str] = []

    def summarise(self, docs: list[tuple[DocumentTree, str]]) -> list[DocumentSummary]:
        if not docs:
            return []
        requests = [{"messages": prompt(t, name), "schema": DocumentReply, "max_tokens": MAX_TOKENS,
                     "stage": DOC_STAGE} for t, name in docs]
        replies = self.llm.map(requests, progress=len(requests) > 1, desc="document summaries", return_exceptions=True)
        out = []
        for (tree, name), reply in zip(docs, replies):
            if isinstance(reply, BookIndexError) and not isinstance(reply, LLMOutputError):
                raise reply
            if not isinstance(reply, DocumentReply) or not reply.summary.strip():
                self.warnings.append(f"{name}: extractive document summary used ({str(reply)[:160]})")
                out.append(DocumentSummary(extractive_summary(tree, name)))
                continue
            tops = top_sections(tree)[:MAX_SECTIONS]
            lines = {s.id: clip(x, LINE_CHARS) for s, x in zip(tops, reply.sections) if x.strip()}
            out.append(DocumentSummary(clip(reply.summary, SUMMARY_CHARS), lines))
        return out


def prompt(tree: DocumentTree, name: str) -> str:
    """Title, opening text and the numbered top-level sections, within PROMPT_CHARS."""
    title = tree.root.title.strip() or name
    opening = " ".join(n.text for n in tree.leaves()[:6] if n.type == "text")
    parts = [f"Summarize this document for a reader choosing where to look. Reply with JSON: `summary` (2-3 "
             f"sentences: what the document is, what it covers, which questions it answers) and `sections` (one "
             f"short line per numbered section below, same order, saying what it contains).\n\nDocument: {title} "
             f"({name})\nOpening text: {clip(opening, 1200)}\n\nSections:"]
    budget = PROMPT_CHARS - len(parts[0])
    for i, s in enumerate(top_sections(tree)[:MAX_SECTIONS], 1):
        first = first_sentence(extractive_line(tree, s))
        piece = f"{i}. {clip(s.title, 80)}: {clip(first, SECTION_CHARS)}"
        if budget - len(piece) < 0:
            break
        budget -= len(piece)
        parts.append(piece)
    return "\n".join(parts)
