"""The LLM navigator (paper §3.3, appendix D): an agent that walks the skill tree with tools.

The agent starts from the skills' names and descriptions only (progressive disclosure), opens
SKILL.md / INDEX.md files with `view`, reads documents with `get_document`, and answers citing
only what it read. In a library hierarchy opened with its library it also has, at a
document, that document's BookRAG retrieval and blocks: `search_document(doc_id, question)`,
`get_node(node_id)`, `get_pages(doc_id, pages)` (`agent_tools`, `libtools`), and may cite the
blocks it read by node id. It gets at most `max_rounds` tool calls and stops when it answers.

Two protocols, one loop and one tool registry (`agent_tools.REGISTRY`):
- native tool calling, for OpenAI-compatible servers (`LLMClient.complete_tools`);
- a JSON action protocol (`NavAction`, validated with one repair round by the client) for the
  embedded llama.cpp model and servers without tools.
Every call goes through the one LLM client (cached, retried, counted under stage
`skills_navigate`), and every step is recorded with its tool, arguments and tokens.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal, cast, runtime_checkable
from typing import Protocol as TypingProtocol

from pydantic import BaseModel, Field, model_validator

from bookindex.core.errors import InputError, LLMOutputError
from bookindex.core.protocols import LLM, Embedder
from bookindex.providers.llm.ledger import counters_delta
from bookindex.skills.navigator.answer import (
    CitedNode,
    NavStep,
    Protocol,
    RankedDocument,
    SkillsAnswer,
    SkillsUsage,
    ToolName,
    Via,
    count_tokens,
)
from bookindex.skills.navigator.beam import DEFAULT_RANK, beam_search, pool_order
from bookindex.skills.navigator.context_fit import budget_chars, fit
from bookindex.skills.navigator.document_tools import DocumentTools
from bookindex.skills.navigator.guide import Guide, guide_for
from bookindex.skills.navigator.opened import NAV_FILES, OpenedSkills
from bookindex.skills.navigator.tool_registry import REGISTRY, Toolbox
from bookindex.skills.navigator.tool_result import ReadNode, ToolError, ToolResult

STAGE = "skills_navigate"
ACTION_TOKENS = 512      # one action or a short answer; also bounds a runaway reply's cost
# reserved in the context window beside the messages: the reply, a repair round (the bad reply
# and the error) and the client's JSON instruction with the action schema
RESERVE_TOKENS = 2 * ACTION_TOKENS + 1200
DEFAULT_CONTEXT = 8192   # for a client that does not say its window
BEAM_DOCS = 10  # of the width-1 beam, ranked together with what a guided agent cited
LISTED = re.compile(r"^- `([^`]+)`", re.M)   # a leaf listing's document line (materialise.py)

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

LIBRARY_RULES = """This tree is a library hierarchy: a topic's INDEX.md links document skills (doc-<name>/SKILL.md,
with the document's doc_id, its top-level sections and their folders); each section folder's INDEX.md lists its
subsections and blocks by node id and page. At a document you have three more tools:
- search_document(doc_id, question): the document's own retrieval; it returns its best blocks (node id, page, text);
- get_node(node_id): one block's or section's text, page and position;
- get_pages(doc_id, pages): the text of a page range such as "3-7".
What these return is evidence, like get_document. Cite the node ids you used, e.g. [0a1b2c3d4e5f6a7b-00042]."""

NEED_DOCUMENT = ("You have not read any document yet (get_document, or search_document / get_node / get_pages "
                 "where available). Summaries are not evidence: read at least one document, then answer.")
LAST_ROUND = "This is your last turn: answer now from the documents you have read."


class NavAction(BaseModel):
    """One step of the JSON action protocol: a tool of `agent_tools.REGISTRY` with its string
    arguments, or the answer. Whether the tool is available in this folder is the toolbox's
    call (an unavailable one is refused like any bad argument)."""

    action: Literal["view", "get_document", "search_document", "get_node", "get_pages", "answer"]
    path: str | None = None
    doc_id: str | None = None
    question: str | None = None
    node_id: str | None = None
    pages: str | None = None
    answer: str | None = None
    cited: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _fields_of_action(self) -> NavAction:
        if self.action == "answer":
            if not (self.answer or "").strip():
                raise ValueError('an "answer" action needs a non-empty "answer"')
            return self
        for name, _ in REGISTRY[self.action].params:
            value = getattr(self, name)
            if value is None or (name != "path" and not str(value).strip()):
                raise ValueError(f'a "{self.action}" action needs "{name}"')
        return self

    def arguments(self) -> dict[str, str]:
        """The tool's arguments, as a native call would carry them."""
        return {name: str(getattr(self, name) or "") for name, _ in REGISTRY[self.action].params}


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
    tools: Toolbox
    steps: list[NavStep] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)          # documents read, in order
    listed: list[str] = field(default_factory=list)           # documents seen in leaf listings viewed
    trimmed: int = 0                                          # tool results cut to fit the window
    viewed: dict[str, int] = field(default_factory=dict)      # path viewed -> round it was first shown
    read: dict[str, ReadNode] = field(default_factory=dict)   # blocks read, by node id
    notes: list[str] = field(default_factory=list)
    guide: Guide | None = None                                # embedding order of what is offered next

    def call_tool(self, rnd: int, name: str, args: dict[str, str]) -> str:
        """Run a tool, record it, and return what the model is shown (the refusal on error)."""
        tool = _tool_name(name)
        try:
            res: ToolResult = self.tools.call(name, args)
        except ToolError as exc:
            self.steps.append(NavStep(round=rnd, tool=tool, target=_target_of(args), args=args or None,
                                      error=str(exc)))
            return f"Error: {exc}"
        if name == "view":
            res = self._with_next_step(rnd, res)
        if res.doc_id and res.doc_id not in self.fetched:
            self.fetched.append(res.doc_id)
        for r in res.read:
            self.read.setdefault(r.node_id, r)
        if name == "view":
            for shown in LISTED.findall(res.text):
                d = self.opened.tools.ids.resolve(shown)
                if d is not None and d in self.opened.documents and d not in self.listed:
                    self.listed.append(d)
        self.steps.append(NavStep(round=rnd, tool=tool, target=res.target, tokens=count_tokens(res.text),
                                  args=args if name != "view" else None))
        return res.text

    def _with_next_step(self, rnd: int, res: ToolResult) -> ToolResult:
        """A view's text with where to go next in full paths (a small model otherwise re-views the
        file it is in or drops the parent folders); a repeated view gets only that reminder."""
        hint = next_step(self.opened, res.target, self.guide)
        first = self.viewed.setdefault(res.target, rnd)
        if first != rnd:
            return ToolResult(f"You already viewed {res.target} (round {first}); viewing it again shows nothing new."
                              + (f"\n{hint}" if hint else ""), res.target, res.doc_id, res.read)
        return ToolResult(res.text + (f"\n\n{hint}" if hint else ""), res.target, res.doc_id, res.read)

    def citations(self, claimed: list[str], answer: str) -> tuple[list[str], list[CitedNode]]:
        """The documents and blocks cited that were read (others dropped with a note); ids
        named in the answer text count as claimed too, since small models often cite inline
        only. A cited block cites its document."""
        ids = self.opened.tools.ids
        named = [d for d in list(self.fetched) + list(self.read)
                 if any(re.search(rf"(?<![\w-]){re.escape(form)}(?![\w-])", answer) for form in {d, ids.short(d)})]
        docs: list[str] = []
        nodes: list[CitedNode] = []
        for d in list(claimed) + named:
            d = d.strip().strip("[]")
            if d not in self.read and d not in self.fetched:
                d = ids.resolve(d) or d  # a short id, as the listings and get_document show it
            if d in self.read:
                r = self.read[d]
                if all(n.node_id != d for n in nodes):
                    nodes.append(CitedNode(doc_id=r.doc_id, node_id=d, page=r.page))
                if r.doc_id not in docs:
                    docs.append(r.doc_id)
            elif d in self.fetched:
                if d not in docs:
                    docs.append(d)
            elif d and f"dropped citation {d}" not in " ".join(self.notes):
                self.notes.append(f"dropped citation {d}: not read")
        return docs, nodes


def next_step(opened: OpenedSkills, target: str, guide: Guide | None = None) -> str:
    """What to do after viewing `target`: its sub-groups' navigation files by full path, or at a
    leaf, get_document; "" for a path that is no cluster's (a document skill's folder). With a
    guide the sub-groups come nearest the question first, and a leaf names its nearest documents."""
    folder = target
    for name in NAV_FILES:
        if folder == name or folder.endswith("/" + name):
            folder = folder[: -len(name)].rstrip("/")
    if folder == "":
        children = opened.roots()
    elif folder in opened.by_path:
        children = [opened.tree.cluster(ch) for ch in opened.by_path[folder].children]
    else:
        return ""
    if not children:
        text = "Next: read the most relevant document with get_document, passing one of the ids in backticks above."
        if guide is not None and folder in opened.by_path:
            near = [f"- `{opened.tools.ids.short(d)}` " + (f"{opened.documents[d].title} " if d in opened.documents else "")
                    + f"(similarity {guide.sims.get(d, 0.0):.2f})" for d in guide.at_leaf(opened.by_path[folder])]
            text += ("\nNearest the question by embedding similarity (read the first unless another fits better):\n"
                     + "\n".join(near))
        return text
    if guide is None:
        lines = [f"- {opened.nav_file(c) or c.path} ({c.num_documents} documents)" for c in children]
        return "Next: view the most relevant of these (full paths):\n" + "\n".join(lines)
    lines = [f"- {opened.nav_file(c) or c.path} ({c.num_documents} documents, similarity {guide.score(c):.2f})"
             for c in guide.clusters(children)]
    return ("Next: view the most relevant of these (full paths, nearest the question by embedding similarity "
            "first):\n" + "\n".join(lines))


def _tool_name(name: str) -> ToolName:
    """The trace's name for a called tool; `unknown` for one the model made up."""
    return cast(ToolName, name) if name in REGISTRY else "unknown"


def _target_of(args: dict[str, str]) -> str:
    for key in ("path", "doc_id", "node_id"):
        if key in args:
            return args[key]
    return ""


def opening(opened: OpenedSkills, question: str, guide: Guide | None = None) -> str:
    """The first user turn: the question and every skill's name and description (nearest the
    question first, with a guide)."""
    roots = opened.roots() if guide is None else guide.clusters(opened.roots())
    near = "" if guide is None else " (nearest the question by embedding similarity first)"
    lines = [f"- {c.path}/ ({c.num_documents} documents): {c.description}" for c in roots]
    # guided, the first turn ends like every view: the paths to open, nearest first with their
    # scores: a small model follows "Next:" lines more readily than the order of a list
    ahead = "" if guide is None else "\n\n" + (shortcuts(opened, guide) or next_step(opened, "", guide))
    return f"Skills available{near}:\n" + "\n".join(lines) + f"\n\nQuestion: {question}" + ahead


def shortcuts(opened: OpenedSkills, guide: Guide) -> str:
    """The guided opening's "Next:": the leaf groups nearest the question, by the full path of
    their INDEX.md, so the agent reaches document ids in one view instead of one a level; ""
    when the skills are the leaves (nothing to skip) or no leaf has a file of its own (compact)."""
    leaves = [c for c in guide.nearest_leaves() if c.parent is not None and opened.nav_file(c)]
    if not leaves:
        return ""
    lines = [f"- {opened.nav_file(c)} ({c.num_documents} documents, similarity {guide.score(c):.2f}): {c.description}"
             for c in leaves]
    return ("Next: view the most relevant of these leaf groups, which list document ids (full paths, nearest the "
            "question by embedding similarity first):\n" + "\n".join(lines)
            + "\nOr view a skill's SKILL.md to browse its sub-groups.")


def _usage_of(llm: LLM, before: dict[str, Any]) -> dict[str, float]:
    """The navigator stage's calls and tokens since `before` (that stage's counters)."""
    after = llm.ledger.snapshot().get("stages", {}).get(STAGE, {})
    return counters_delta(before, after, ("calls", "prompt_tokens", "completion_tokens"))


def navigate(opened: OpenedSkills, llm: LLM, question: str, *, max_rounds: int = 10,
             protocol: Protocol = "auto", library: DocumentTools | None = None,
             embedder: Embedder | None = None, guided: bool = True) -> SkillsAnswer:
    """Let the LLM walk the tree and answer; native tool calls when the client supports them.
    `library`: the tools at a document of a library hierarchy (search_document, get_node,
    get_pages), offered beside view and get_document.

    The ranked documents are the ones it cited (guided: together with the top documents of the
    width-1 beam it was guided by, `via="beam"`, all in the beam's hybrid order), then the others
    it read, then the ones it only saw in the leaf listings it opened (`via="listed"`), ranked by
    `embedder` similarity to the question when one is given: a small model that runs out of
    rounds one step short of get_document has still found where the answer lives, and a
    retrieval metric should see that (the answer does not: it cites only what was read). Guided,
    the list is the beam's with what the agent cited outside it ranked in by the same measure.

    `guided` (with an embedder): what the agent is offered next comes nearest the question first
    (`guide.py`); False is the paper's unguided agent."""
    t0 = time.perf_counter()
    before = llm.ledger.snapshot().get("stages", {}).get(STAGE, {})
    native = isinstance(llm, ToolCallingLLM) and llm.supports_tools
    use_tools = protocol == "tools" or (protocol == "auto" and native)
    run = _Run(opened, Toolbox(opened.tools, library))
    similarity, why = guide_for(opened, embedder, question)   # also ranks the documents only listed
    if guided:
        run.guide = similarity
        if why:
            run.notes.append(why)
    if use_tools:
        answer, (cited, nodes), stopped, rounds = _native_loop(run, llm, question, max_rounds)
    else:
        answer, (cited, nodes), stopped, rounds = _json_loop(run, llm, question, max_rounds)
    used = _usage_of(llm, before)
    # guided, what it cited joins the documents of the width-1 beam it was guided by and all are
    # ranked by the beam's own measure: the agent adds what the beam did not reach, and a cited
    # document comes first only when that measure puts it there (a small model's citation is a
    # weaker signal than the beam's order: docs/benchmarks.md, "Corpus navigation")
    beam = _beam_documents(opened, embedder, question) if guided and run.guide is not None else []
    ranked: list[tuple[str, Via]]
    if beam:
        head = _beam_order(opened, embedder, question, beam + [d for d in cited if d not in beam])
        run.notes.append(f"the cited documents ranked with the width-1 beam's top {len(beam)} by its hybrid order")
        ranked = [(d, "read" if d in run.fetched else "beam") for d in head]
    else:
        ranked = [(d, "read") for d in cited]
    ranked += [(d, "read") for d in run.fetched if d not in cited and d not in beam]
    seen = {d for d, _ in ranked}
    listed = [d for d in run.listed if d not in seen]
    listed = similarity.documents(listed) if similarity is not None else listed
    ranked += [(d, "listed") for d in listed]
    docs = [RankedDocument(doc_id=d, title=_title(opened, library, d), score=1.0 / (i + 1),
                           path=opened.tree.cluster(opened.tree.documents[d].cluster).path
                           if d in opened.tree.documents and opened.tree.documents[d].cluster in opened.tree.clusters else "",
                           via=via)
            for i, (d, via) in enumerate(ranked)]
    if run.trimmed:
        run.notes.append(f"{run.trimmed} earlier tool result(s) cut to fit the {_context_size(llm)}-token context")
    usage = SkillsUsage(
        rounds=rounds, documents_fetched=len(run.fetched), documents_listed=len(listed), trimmed=run.trimmed,
        navigation_tokens=sum(s.tokens for s in run.steps if s.tool == "view"),
        document_tokens=sum(s.tokens for s in run.steps if s.tool in REGISTRY and REGISTRY[s.tool].evidence),
        llm_calls=int(used["calls"]), prompt_tokens=int(used["prompt_tokens"]),
        completion_tokens=int(used["completion_tokens"]), seconds=round(time.perf_counter() - t0, 3))
    return SkillsAnswer(question=question, navigator="llm", answer=answer, cited=cited, cited_nodes=nodes,
                        documents=docs, steps=run.steps, usage=usage, stopped=stopped, notes=run.notes)


def _beam_documents(opened: OpenedSkills, embedder: Embedder | None, question: str) -> list[str]:
    """The width-1 beam's top `BEAM_DOCS` documents (the walk the guide points along); [] for a
    tree it cannot walk (no clusters, another embedder)."""
    if embedder is None or not opened.tree.roots:
        return []
    try:
        return [d.doc_id for d in beam_search(opened, embedder, question, k=BEAM_DOCS, beam=1).documents]
    except InputError:
        return []


def _beam_order(opened: OpenedSkills, embedder: Embedder | None, question: str, doc_ids: list[str]) -> list[str]:
    """`doc_ids` in the order the beam ranks what it reached (`pool_order`, hybrid): the same
    measure for the beam's documents and the ones the agent found elsewhere."""
    if embedder is None:
        return doc_ids
    sims = opened.doc_scores(opened.query_vector(embedder, question), doc_ids)
    return [doc_ids[i] for i in pool_order(doc_ids, sims, opened, question, DEFAULT_RANK)]


def _context_size(llm: Any) -> int:
    size = getattr(llm, "context_size", None)
    return size if isinstance(size, int) and size > 0 else DEFAULT_CONTEXT


def _title(opened: OpenedSkills, library: DocumentTools | None, doc_id: str) -> str:
    if doc_id in opened.documents:
        return opened.documents[doc_id].title
    if library is not None and doc_id in library.hierarchy.documents:
        return library.hierarchy.documents[doc_id].name
    return ""


def _system(run: _Run, native: bool) -> str:
    text = SYSTEM + ("\n\n" + LIBRARY_RULES if run.tools.library is not None else "")
    if native:
        return text + "\n\nWhen you answer, end with: Sources: <doc ids or node ids you read>."
    return text + "\n\n" + run.tools.json_protocol()


Result = tuple[str, tuple[list[str], list[CitedNode]], Any, int]
NOTHING: tuple[list[str], list[CitedNode]] = ([], [])


def _json_loop(run: _Run, llm: LLM, question: str, max_rounds: int) -> Result:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": _system(run, native=False)},
        {"role": "user", "content": opening(run.opened, question, run.guide)}]
    budget = budget_chars(_context_size(llm), RESERVE_TOKENS)
    pushed_back = False
    for rnd in range(1, max_rounds + 1):
        if rnd == max_rounds:
            messages[-1] = dict(messages[-1], content=messages[-1]["content"] + "\n\n" + LAST_ROUND)
        run.trimmed += fit(messages, budget)
        try:
            action = llm.complete(messages, schema=NavAction, stage=STAGE, max_tokens=ACTION_TOKENS)
        except LLMOutputError as exc:
            run.notes.append(f"round {rnd}: invalid action after one repair: {exc}")
            return "", NOTHING, "invalid_action", rnd
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
        args = action.arguments()
        result = run.call_tool(rnd, action.action, args)
        shown = ", ".join(repr(v) for v in args.values())
        messages.append({"role": "user", "content": f"Result of {action.action}({shown}):\n{result}"})
    return "", NOTHING, "max_rounds", max_rounds


def _native_loop(run: _Run, llm: Any, question: str, max_rounds: int) -> Result:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": _system(run, native=True)},
        {"role": "user", "content": opening(run.opened, question, run.guide)}]
    budget = budget_chars(_context_size(llm), RESERVE_TOKENS)
    pushed_back = False
    for rnd in range(1, max_rounds + 1):
        if rnd == max_rounds:
            messages.append({"role": "user", "content": LAST_ROUND})
        run.trimmed += fit(messages, budget)
        comp = llm.complete_tools(messages, run.tools.native_tools(), stage=STAGE, max_tokens=ACTION_TOKENS)
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
                args = Toolbox.parse_arguments(c["arguments"])
            except ToolError as exc:
                run.steps.append(NavStep(round=rnd, tool=_tool_name(c["name"]), error=f"{c['name']}: {exc}"))
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": f"Error: {c['name']}: {exc}"})
                continue
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": run.call_tool(rnd, c["name"], args)})
    return "", NOTHING, "max_rounds", max_rounds
