"""The typed requests of the Engine's question methods (pydantic, so the REST and MCP shells take
them as they are)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Method = Literal["bookindex", "bm25", "dense", "hybrid", "chunks", "tree"]


class AskRequest(BaseModel):
    """A question, optionally pinned to one document and answered by a baseline method."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    doc: str | None = None
    method: Method = "bookindex"
    k: int | None = Field(default=None, ge=1)
    skills: str | None = None  # a library hierarchy (`skills build LIB --documents`) to route through
    # how `skills` is walked: the embedding beam and router (no LLM), or the LLM navigator with
    # the document tools (it routes; the chosen document's retrieval answers, with checked citations)
    navigator: Literal["embedding", "llm"] = "embedding"


class AskEvent(BaseModel):
    """One event of `Engine.ask_stream`: plan | evidence | token | reset | usage | answer."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kind: Literal["plan", "evidence", "token", "reset", "usage", "answer"]
    data: Any = None


class PlanRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    doc: str | None = None
