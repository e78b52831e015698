"""The LLM navigator (paper §3.3, appendix D): an agent that walks the skill tree with two tools.

The agent starts from the skills' names and descriptions only (progressive disclosure), opens
SKILL.md / INDEX.md files with `view`, reads documents with `get_document`, and answers citing
only documents it read. It gets at most `max_rounds` tool calls and stops when it answers.

Two protocols, one loop:
- native tool calling, for OpenAI-compatible servers (`LLMClient.complete_tools`);
- a JSON action protocol (`NavAction`, validated with one repair round by the client) for the
  embedded llama.cpp model and servers without tools.
Every call goes through the one LLM client (cached, retried, counted under stage
`skills_navigate`), and every step is recorded.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol as TypingProtocol, runtime_checkable

from pydantic import BaseModel, Field, model_validator

from bookindex.core.errors import LLMOutputError
from bookindex.core.protocols import LLM
from bookindex.skills.answer import (
    NavStep, Protocol, RankedDocument, SkillsAnswer, SkillsUsage, count_tokens,
)
from bookindex.skills.opened import OpenedSkills
from bookindex.skills.tools import ToolError, ToolResult

STAGE = "skills_navigate"

SYSTEM = """You answer questions about a document collection by exploring a folder tree of topic summaries.

Rules you must keep:
- Summaries (SKILL.md, INDEX.md) only tell you where to look. They are not evidence.
- Every fact in your answer must come from a document you read with get_document, and you cite those document ids.
- Do not invent steps, names, numbers or links. If nothing you read answers the question, say so.

How the tree is laid out: each skill-NN-topic/ folder has a SKILL.md listing its sub-groups;
each group-NN-topic/ folder has an INDEX.md listing sub-groups or, at the bottom, document ids with titles.

Work like this:
1. From the skill descriptions below, pick the one or two most relevant skills and view their SKILL.md.
2. Go down into the most relevant group: view its INDEX.md. Repeat until you see document ids.
3. Call get_document on the most promising ids. Read at least one document before answering.
4. If a branch looks wrong, go back and try another one.

Answer format: the direct answer in the first sentence, no preamble; at most about 80 words for a fact,
numbered steps for a procedure; plain text."""

JSON_PROTOCOL = """Each turn, reply with one action as JSON:
{"action": "view", "path": "<folder or .md file, relative to the root>"}
{"action": "get_document", "doc_id": "<id from a leaf INDEX.md>"}
{"action": "answer", "answer": "<your answer>", "cited": ["<doc ids you read>"]}"""

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "view", "description": "List a folder of the skill tree or read a SKILL.md / INDEX.md file.",
        "parameters": {"type": "object", "properties": {"path": {
            "type": "string", "description": "Relative to the skill root, e.g. skill-01-x/SKILL.md; '' lists the skills."}},
            "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "get_document", "description": "Read the full text of a document by the id a leaf INDEX.md lists.",
        "parameters": {"type": "object", "properties": {"doc_id": {"type": "string"}}, "required": ["doc_id"]}}},
]

NEED_DOCUMENT = ("You have not read any document with get_document yet. Summaries are not evidence: "
                 "read at least one document, then answer.")
LAST_ROUND = "This is your last turn: answer now from the documents you have read."


class NavAction(BaseModel):
    """One step of the JSON action protocol."""

    action: Literal["view", "get_document", "answer"]
    path: str | None = None
    doc_id: str | None = None
    answer: str | None = None
    cited: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _fields_of_action(self) -> NavAction:
        if self.action == "view" and self.path is None:
            raise ValueError('a "view" action needs "path"')
        if self.action == "get_document" and not self.doc_id:
            raise ValueError('a "get_document" action needs "doc_id"')
        if self.action == "answer" and not (self.answer or "").strip():
            raise ValueError('an "answer" action needs a non-empty "answer"')
        return self


@runtime_checkable
class ToolCallingLLM(TypingProtocol):
    """An LLM client that can also make native tool calls (bookindex's LLMClient)."""

    @property
    def supports_tools(self) -> bool: ...

    def complete_tools(self, messages: Any, tools: list[dict[str, Any]], stage: str = "default", *,
                       temperature: float | None = None, max_tokens: int | None = None,
                       cache: bool = True) -> Any: ...


@dataclass
class _Run:
    """The state of one navigation: what was read and recorded so far."""

    opened: OpenedSkills
    steps: list[NavStep] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def call_tool(self, rnd: int, name: str, arg: str) -> str:
        """Run a tool, record it, and return what the model is shown (the refusal on error)."""
        tool: Literal["view", "get_document"] = "view" if name == "view" else "get_document"
        try:
            if name == "view":
                res: ToolResult = self.opened.tools.view(arg)
            elif name == "get_document":
                res = self.opened.tools.get_document(arg)
                if res.target not in self.fetched:
                    self.fetched.append(res.target)
            else:
                raise ToolError(f"unknown tool {name!r}; use view or get_document")
        except ToolError as exc:
            self.steps.append(NavStep(round=rnd, tool=tool, target=arg, error=str(exc)))
            return f"Error: {exc}"
        self.steps.append(NavStep(round=rnd, tool=tool, target=res.target, tokens=count_tokens(res.text)))
        return res.text

    def citations(self, claimed: list[str], answer: str) -> list[str]:
        """Claimed ids that were read (others dropped with a note); ids named in the answer
        text count as claimed too, since small models often cite inline only."""
        named = [d for d in self.fetched if re.search(rf"(?<![\w-]){re.escape(d)}(?![\w-])", answer)]
        out: list[str] = []
        for d in list(claimed) + named:
            d = d.strip()
            if d in self.fetched:
                if d not in out:
                    out.append(d)
            elif d and f"dropped citation {d}" not in " ".join(self.notes):
                self.notes.append(f"dropped citation {d}: not read with get_document")
        return out


def opening(opened: OpenedSkills, question: str) -> str:
    """The first user turn: the question and every skill's name and description."""
    lines = [f"- {c.path}/ ({c.num_documents} documents): {c.description}" for c in opened.roots()]
    return "Skills available:\n" + "\n".join(lines) + f"\n\nQuestion: {question}"


def _usage_of(llm: LLM, before: dict[str, Any]) -> dict[str, float]:
    after = llm.ledger.snapshot().get("stages", {}).get(STAGE, {})
    return {k: after.get(k, 0) - before.get(k, 0) for k in ("calls", "prompt_tokens", "completion_tokens")}


def navigate(opened: OpenedSkills, llm: LLM, question: str, *, max_rounds: int = 10,
             protocol: Protocol = "auto") -> SkillsAnswer:
    """Let the LLM walk the tree and answer; native tool calls when the client supports them."""
    t0 = time.perf_counter()
    before = llm.ledger.snapshot().get("stages", {}).get(STAGE, {})
    native = isinstance(llm, ToolCallingLLM) and llm.supports_tools
    use_tools = protocol == "tools" or (protocol == "auto" and native)
    run = _Run(opened)
    if use_tools:
        answer, cited, stopped, rounds = _native_loop(run, llm, question, max_rounds)
    else:
        answer, cited, stopped, rounds = _json_loop(run, llm, question, max_rounds)
    used = _usage_of(llm, before)
    order = cited + [d for d in run.fetched if d not in cited]
    docs = [RankedDocument(doc_id=d, title=opened.documents[d].title, score=1.0 / (i + 1),
                           path=opened.tree.cluster(opened.tree.documents[d].cluster).path
                           if d in opened.tree.documents and opened.tree.documents[d].cluster in opened.tree.clusters else "")
            for i, d in enumerate(order)]
    usage = SkillsUsage(
        rounds=rounds, documents_fetched=len(run.fetched),
        navigation_tokens=sum(s.tokens for s in run.steps if s.tool == "view"),
        document_tokens=sum(s.tokens for s in run.steps if s.tool == "get_document"),
        llm_calls=int(used["calls"]), prompt_tokens=int(used["prompt_tokens"]),
        completion_tokens=int(used["completion_tokens"]), seconds=round(time.perf_counter() - t0, 3))
    return SkillsAnswer(question=question, navigator="llm", answer=answer, cited=cited, documents=docs,
                        steps=run.steps, usage=usage, stopped=stopped, notes=run.notes)


def _json_loop(run: _Run, llm: LLM, question: str, max_rounds: int) -> tuple[str, list[str], Any, int]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM + "\n\n" + JSON_PROTOCOL},
        {"role": "user", "content": opening(run.opened, question)}]
    pushed_back = False
    for rnd in range(1, max_rounds + 1):
        if rnd == max_rounds:
            messages[-1] = dict(messages[-1], content=messages[-1]["content"] + "\n\n" + LAST_ROUND)
        try:
            action = llm.complete(messages, schema=NavAction, stage=STAGE)
        except LLMOutputError as exc:
            run.notes.append(f"round {rnd}: invalid action after one repair: {exc}")
            return "", [], "invalid_action", rnd
        messages.append({"role": "assistant", "content": action.model_dump_json(exclude_none=True)})
        if action.action == "answer":
            answer = (action.answer or "").strip()
            if not run.fetched and not pushed_back and rnd < max_rounds:
                pushed_back = True
                run.steps.append(NavStep(round=rnd, tool="answer", error="refused: no document read yet"))
                messages.append({"role": "user", "content": NEED_DOCUMENT})
                continue
            run.steps.append(NavStep(round=rnd, tool="answer", tokens=count_tokens(answer)))
            if not run.fetched:
                run.notes.append("answered without reading a document")
            return answer, run.citations(action.cited, answer), "answered", rnd
        name, arg = ("view", action.path or "") if action.action == "view" else ("get_document", action.doc_id or "")
        result = run.call_tool(rnd, name, arg)
        messages.append({"role": "user", "content": f"Result of {name}({arg!r}):\n{result}"})
    return "", [], "max_rounds", max_rounds


def _native_loop(run: _Run, llm: Any, question: str, max_rounds: int) -> tuple[str, list[str], Any, int]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM + "\n\nWhen you answer, end with: Sources: <doc ids you read>."},
        {"role": "user", "content": opening(run.opened, question)}]
    pushed_back = False
    for rnd in range(1, max_rounds + 1):
        if rnd == max_rounds:
            messages.append({"role": "user", "content": LAST_ROUND})
        comp = llm.complete_tools(messages, TOOLS, stage=STAGE)
        calls = comp.extra.get("tool_calls") or []
        if not calls:
            answer = comp.text.strip()
            if not run.fetched and not pushed_back and rnd < max_rounds:
                pushed_back = True
                run.steps.append(NavStep(round=rnd, tool="answer", error="refused: no document read yet"))
                messages += [{"role": "assistant", "content": comp.text}, {"role": "user", "content": NEED_DOCUMENT}]
                continue
            run.steps.append(NavStep(round=rnd, tool="answer", tokens=count_tokens(answer)))
            if not run.fetched:
                run.notes.append("answered without reading a document")
            return answer, run.citations([], answer), "answered", rnd
        messages.append({"role": "assistant", "content": comp.text or None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls]})
        for c in calls:
            try:
                args = json.loads(c["arguments"] or "{}")
            except json.JSONDecodeError:
                args = {}
            arg = str(args.get("path", "") if c["name"] == "view" else args.get("doc_id", ""))
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": run.call_tool(rnd, c["name"], arg)})
    return "", [], "max_rounds", max_rounds
