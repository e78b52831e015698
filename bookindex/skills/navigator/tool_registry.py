"""The LLM navigator's tools, declared once for both protocols and dispatched in one place.

A skill folder gives the agent `view` and `get_document`; a library hierarchy adds a
document's BookRAG retrieval and its blocks: `search_document(doc_id, question)`,
`get_node(node_id)` and `get_pages(doc_id, pages)`. Each tool is one `ToolSpec` (name, what it
does, its string parameters); the native tool-call schema and the JSON action protocol's text are
both rendered from the same specs, and `Toolbox.call` runs either protocol's call, so the two
cannot drift apart. Every call either returns a `ToolResult` or raises `ToolError`, whose message
goes back to the model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bookindex.skills.navigator.document_tools import DocumentTools
from bookindex.skills.navigator.folder_tools import FolderTools
from bookindex.skills.navigator.tool_result import ToolError, ToolResult


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the model sees it: all parameters are strings and all are required."""

    name: str
    description: str
    params: tuple[tuple[str, str], ...]   # (name, description)
    evidence: bool                         # what it returns may be cited (summaries may not)

    def native(self) -> dict[str, Any]:
        """The OpenAI-style function declaration."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": {"type": "object",
                           "properties": {p: {"type": "string", "description": d} for p, d in self.params},
                           "required": [p for p, _ in self.params]}}}

    def json_action(self) -> str:
        """The action's line in the JSON protocol."""
        fields = ", ".join(f'"{p}": "<{d}>"' for p, d in self.params)
        return f'{{"action": "{self.name}", {fields}}}'


REGISTRY: dict[str, ToolSpec] = {s.name: s for s in (
    ToolSpec("view", "List a folder of the skill tree or read a SKILL.md / INDEX.md file.",
             (("path", "relative to the skill root, e.g. skill-01-x/SKILL.md; '' lists the skills"),), False),
    ToolSpec("get_document", "Read the full text of a document by the id a leaf INDEX.md lists.",
             (("doc_id", "id from a leaf INDEX.md"),), True),
    ToolSpec("search_document", "Run one document's own retrieval for a question: its best blocks with "
             "node id, page and text.",
             (("doc_id", "the document's id (its SKILL.md doc_id)"), ("question", "what to look for")), True),
    ToolSpec("get_node", "Read one block or section of a document: its text, page and position.",
             (("node_id", "a node id from an INDEX.md or a search_document result"),), True),
    ToolSpec("get_pages", "Read a document's text on a page range (at most 20 pages).",
             (("doc_id", "the document's id"), ("pages", "a page or range, e.g. 3-7")), True),
)}
FOLDER_TOOLS = ("view", "get_document")
LIBRARY_TOOLS = ("search_document", "get_node", "get_pages")


class Toolbox:
    """The tools of one navigation: a folder's two, plus the library's three when it has them."""

    def __init__(self, folder: FolderTools, library: DocumentTools | None = None) -> None:
        self.folder = folder
        self.library = library
        self.names = FOLDER_TOOLS + (LIBRARY_TOOLS if library is not None else ())

    @property
    def specs(self) -> list[ToolSpec]:
        return [REGISTRY[n] for n in self.names]

    def native_tools(self) -> list[dict[str, Any]]:
        return [s.native() for s in self.specs]

    def json_protocol(self) -> str:
        lines = [s.json_action() for s in self.specs]
        lines.append('{"action": "answer", "answer": "<your answer>", "cited": ["<ids of what you read>"]}')
        return "Each turn, reply with one action as JSON:\n" + "\n".join(lines)

    @staticmethod
    def parse_arguments(raw: str | None) -> dict[str, str]:
        """A native call's argument JSON as strings; ToolError when it is not a JSON object."""
        try:
            args = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ToolError(f"the arguments are not JSON ({exc.msg}); send an object such as "
                            '{"doc_id": "..."}') from None
        if not isinstance(args, dict):
            raise ToolError("the arguments must be a JSON object")
        return {str(k): "" if v is None else str(v) for k, v in args.items()}

    def call(self, name: str, args: Mapping[str, str]) -> ToolResult:
        """Run one tool; ToolError for an unknown or unavailable tool or a missing argument."""
        spec = REGISTRY.get(name)
        if spec is None or name not in self.names:
            why = "not available here: this folder is not a library hierarchy opened with its library" \
                if spec is not None else "unknown tool"
            raise ToolError(f"{name!r}: {why}; use {', '.join(self.names)}")
        missing = [p for p, _ in spec.params if p != "path" and not str(args.get(p, "")).strip()]
        if missing:
            raise ToolError(f"{name}: missing {', '.join(missing)}; call it as {spec.json_action()}")
        if name == "view":
            return self.folder.view(str(args.get("path", "")))
        if name == "get_document":
            return self.folder.get_document(args["doc_id"])
        assert self.library is not None  # names holds the library tools only with a library
        if name == "search_document":
            return self.library.search_document(args["doc_id"], args["question"])
        if name == "get_node":
            return self.library.get_node(args["node_id"])
        return self.library.get_pages(args["doc_id"], args["pages"])
