"""What a navigator's tool call gives back: a `ToolResult` (the text the model reads, and the
blocks it read, which it may cite), or a `ToolError` whose message the model is shown so it can
try again. Shared by the folder tools, the document tools and the registry that dispatches them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bookindex.core.errors import InputError


class ToolError(InputError):
    """A refused tool call: the message goes back to the model, which can try again."""


@dataclass(frozen=True)
class ReadNode:
    """A block the agent read (a search result, a node, a page's block): what it may cite."""

    doc_id: str
    node_id: str
    page: int           # 1-based


@dataclass
class ToolResult:
    """One tool call's result: what the model reads, and what it read (citable)."""

    text: str
    target: str  # the normalised path or the document id
    doc_id: str = ""    # the document read ("" for navigation files): evidence, citable
    read: list[ReadNode] = field(default_factory=list)
