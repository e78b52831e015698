"""Typed requests and reports of the skills operations, as the Engine takes and returns them
(pydantic, so a REST or MCP shell can expose them as they are)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_DRIFT = 0.34  # a third of a cluster new since its summary: measured 9.9% of a full compile for +10% (docs/benchmarks.md)


SOFT = 0            # soft membership off by default: no gain with the members route (docs/benchmarks.md)
SOFT_MARGIN = 0.1   # the better margin for the centroid route on SciFact claims 0-199


class SkillsBuildRequest(BaseModel):
    """Compile sources (files, folders, bookindex libraries) into a skill folder."""

    model_config = ConfigDict(extra="forbid")

    sources: list[str] = Field(min_length=1)
    output: str
    branching: int = Field(10, ge=2)
    top: int = Field(8, ge=1)
    min_size: int = Field(3, ge=1)
    seed: int = 0
    compact: bool = False
    embed_chars: int = Field(2000, ge=100)
    # soft membership: a document is also listed in up to `soft` other leaves whose centroid is
    # within `soft_margin` cosine of its own leaf's (the no-LLM beam finds border documents)
    soft: int = Field(SOFT, ge=0)
    soft_margin: float = Field(SOFT_MARGIN, ge=0.0, le=2.0)
    no_llm: bool = False
    # the sources are libraries; each document's section tree becomes a skill hung
    # under its leaf cluster (one tree from library to block)
    documents: bool = False


class SkillsAddRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    folder: str
    sources: list[str] = Field(min_length=1)
    # Re-summarise a touched cluster only when its size moved by more than this fraction since
    # its summary was written (0: every touched cluster, the literal incremental rule).
    drift: float = Field(DEFAULT_DRIFT, ge=0.0)
    no_llm: bool = False


class SkillsRemoveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    folder: str
    ids: list[str] = Field(min_length=1)
    drift: float = Field(DEFAULT_DRIFT, ge=0.0)
    no_llm: bool = False


class SkillsBuildReport(BaseModel):
    """What a compile produced and what it cost."""

    output: str
    documents: int
    clusters: int
    leaves: int
    roots: int
    levels: int
    files: int = 0                   # navigation files (SKILL.md + INDEX.md)
    median_file_bytes: float = 0.0
    max_file_bytes: int = 0
    llm: str = ""                    # model name, "" without an LLM
    summaries: int = 0               # clusters summarised (LLM calls or extractive summaries)
    llm_usage: dict[str, Any] = Field(default_factory=dict)   # per stage: calls, cache_hits, tokens
    seconds: float = 0.0
    timings: dict[str, float] = Field(default_factory=dict)   # load, embed, compile, write
    warnings: list[str] = Field(default_factory=list)
    documents_rendered: list[str] = Field(default_factory=list)  # --documents: skills written anew
    documents_reused: list[str] = Field(default_factory=list)    # --documents: unchanged, kept as they were


class SkillsUpdateReport(BaseModel):
    """What an incremental add or remove changed."""

    folder: str
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    documents: int = 0
    clusters: int = 0
    touched: int = 0                 # clusters whose membership changed
    summaries: int = 0               # clusters re-summarised
    splits: int = 0
    deleted_clusters: int = 0
    llm_usage: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0
    warnings: list[str] = Field(default_factory=list)


class SkillNodeView(BaseModel):
    """One cluster of a skill tree, with its sub-clusters (for `skills tree`)."""

    id: str
    label: str
    path: str
    level: int
    num_documents: int
    description: str
    children: list[SkillNodeView] = Field(default_factory=list)


class SkillsTreeView(BaseModel):
    folder: str
    documents: int
    clusters: int
    params: dict[str, Any] = Field(default_factory=dict)
    roots: list[SkillNodeView] = Field(default_factory=list)
