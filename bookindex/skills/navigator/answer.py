"""What a navigation returns: the typed request and answer of `Engine.skills_ask`.

Both navigators (the LLM agent and the no-LLM beam search) fill the same `SkillsAnswer`, so the
CLI, the evaluation and a later server print and score them the same way. Every step is kept:
which tool, on what, and how many tokens it put in front of the reader, because navigation cost
is half of what the paper measures.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Navigator = Literal["llm", "embedding"]
Protocol = Literal["auto", "tools", "json"]
Route = Literal["summary", "centroid", "both", "leaves", "members"]
PoolRank = Literal["dense", "hybrid"]
Via = Literal["", "read", "beam", "listed"]  # how the LLM navigator came by a ranked document


def count_tokens(text: str) -> int:
    """Tokens a reader pays for `text`, estimated at 4 characters a token (no tokenizer needed;
    the LLM navigator's usage also reports the model's own prompt-token counts)."""
    return (len(text) + 3) // 4


class SkillsAskRequest(BaseModel):
    """One question to a compiled skill folder."""

    folder: str
    question: str
    navigator: Navigator = "llm"
    k: int = Field(10, ge=1)              # documents the embedding navigator returns
    beam: int | None = Field(None, ge=1)  # beam width; None: chosen from k and the leaf sizes
    route: Route = "members"              # what the beam compares the query with (see beam.py)
    rank: PoolRank = "hybrid"             # how the beam ranks the documents of the leaves it reached
    max_rounds: int = Field(10, ge=1)     # the LLM navigator's tool-call budget
    protocol: Protocol = "auto"           # native tool calls, the JSON action protocol, or auto
    guided: bool = True                   # LLM navigator: offer next steps nearest the question first (guide.py)


ToolName = Literal["view", "get_document", "answer", "route", "search_document", "get_node", "get_pages",
                   "unknown"]


class NavStep(BaseModel):
    """One tool call: `view` (a folder or navigation file), `get_document`, or the `answer`; in a
    library hierarchy also the routing decision (`route`), `search_document`, `get_node`, `get_pages`
    (`unknown`: a tool name the model made up, refused)."""

    round: int
    tool: ToolName
    target: str = ""          # the path viewed, the document id fetched, the node read
    args: dict[str, str] | None = None  # the LLM navigator's arguments as called (question, pages, ...)
    tokens: int = 0           # tokens of what the tool returned (count_tokens)
    error: str = ""           # the tool's refusal (bad path, unknown id), shown to the model too
    score: float | None = None  # the beam's similarity for the cluster or document


class RankedDocument(BaseModel):
    doc_id: str
    title: str = ""
    score: float = 0.0
    path: str = ""            # the leaf folder it hangs in ("" for flat methods)
    # the LLM navigator's: "read" (fetched, cited ones first) or "listed" (only seen in a leaf
    # listing it viewed, ranked below everything it read); "" for the other methods
    via: Via = ""


class CitedNode(BaseModel):
    """A block the answer cites that the navigator read (search_document, get_node, get_pages)."""

    doc_id: str
    node_id: str
    page: int                 # 1-based


class SkillsUsage(BaseModel):
    rounds: int = 0
    documents_fetched: int = 0
    documents_listed: int = 0    # LLM navigator: documents only seen in the leaf listings it viewed
    navigation_tokens: int = 0   # tokens of the listings and navigation files read
    document_tokens: int = 0     # tokens of the documents read
    candidates: int = 0          # documents the beam's leaves held (it ranks these by vector)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    trimmed: int = 0             # LLM navigator: old tool results cut to keep the prompt in the context window
    seconds: float = 0.0


class SkillsAnswer(BaseModel):
    question: str
    navigator: str
    answer: str = ""
    cited: list[str] = Field(default_factory=list)      # only documents read (get_document, a library tool)
    cited_nodes: list[CitedNode] = Field(default_factory=list)  # only blocks read (library hierarchy)
    documents: list[RankedDocument] = Field(default_factory=list)
    steps: list[NavStep] = Field(default_factory=list)
    usage: SkillsUsage = Field(default_factory=SkillsUsage)
    stopped: Literal["answered", "max_rounds", "invalid_action", "ranked"] = "ranked"
    notes: list[str] = Field(default_factory=list)       # dropped citations, repairs, refusals

    def path(self) -> list[str]:
        """The navigation as one line per step, for `--explain`."""
        out = []
        for s in self.steps:
            extra = f" ({s.error})" if s.error else (f" {s.score:.3f}" if s.score is not None else "")
            more = {k: v for k, v in (s.args or {}).items() if v != s.target and not s.target.startswith(f"{v}:")}
            shown = s.target + ("" if not more else " " + " ".join(f"{k}={v!r}" for k, v in more.items()))
            out.append(f"{s.round:>2} {s.tool} {shown} [{s.tokens} tok]{extra}")
        return out
