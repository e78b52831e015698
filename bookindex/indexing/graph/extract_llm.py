"""The LLM extractor: entities and relations per tree node, several nodes per call.

Nodes are packed in document order into batches of about `settings.graph.batch_tokens` tokens
of node text (default 1,500), so a book costs roughly one call per 1,500 tokens rather than one
per paragraph. Each call returns schema-validated JSON keyed by the short node labels used in
the prompt (N1, N2, ...). Calls run through the project client's `map` (bounded concurrency,
ledger stage "extract", on-disk cache, so an interrupted build resumes without repeating calls).

Small nodes are first merged into fragments: consecutive nodes of one section on one page, up to
`merge_tokens` (default 250) — a page of short paragraphs, list items and table cells would
otherwise be dozens of fragments per call, and a small model answers only the first few. The
entities of a fragment are linked to the member nodes whose text names them (all members when
none does), so GT-links stay node-precise.

A node whose output is malformed (the call failed validation), missing, or empty although the
node has real content is retried once: alone when its batch came back
malformed (that fails the whole batch, so the retry isolates the culprit), with its fragment
in a call of its own when the fragment was skipped or empty. If it fails again it is returned with
`error` set, which the build report lists. It never aborts the build.
Image nodes go to the configured VLM when one is available, else their caption/footnote/OCR
text is extracted like text. Table/equation/image structure is added by `add_structure`.
"""

from __future__ import annotations

import inspect
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from pydantic import BaseModel, Field, field_validator

from bookindex.core.model import Node
from bookindex.core.protocols import LLM
from bookindex.indexing.graph.extraction import (
    NodeExtraction,
    NodesDone,
    RawEntity,
    RawRelation,
    add_structure,
    clean_name,
    extractor_text,
    name_key,
)
from bookindex.providers.llm import user_message

STAGE = "extract"
MIN_WORDS_FOR_CONTENT = 12   # shorter nodes may legitimately yield no entity
MAX_NODE_CHARS = 12000       # one oversized node is cut to this many characters
COMPLETION_PER_FRAGMENT = 320  # completion tokens budgeted per fragment of a batch
MAX_COMPLETION = 6144
CLOSING_MIN_FRAGMENTS = 3  # batches of at least this many fragments end by naming every label


class EntityOut(BaseModel):
    name: str
    type: str = "concept"
    description: str = ""


class RelationOut(BaseModel):
    source: str
    target: str
    description: str = ""
    keywords: list[str] = Field(default_factory=list)
    weight: float = 1.0

    @field_validator("keywords", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [k.strip() for k in v.split(",") if k.strip()]
        return v or []

    @field_validator("weight", mode="before")
    @classmethod
    def _weight(cls, v: Any) -> Any:
        try:
            return min(max(float(v), 0.1), 10.0)
        except (TypeError, ValueError):
            return 1.0


class NodeOut(BaseModel):
    node: str
    entities: list[EntityOut] = Field(default_factory=list)
    relations: list[RelationOut] = Field(default_factory=list)


class BatchOut(BaseModel):
    nodes: list[NodeOut] = Field(default_factory=list)


_PROMPT = """Extract a knowledge graph from the document fragments below.
For EACH fragment (labelled N1, N2, ...) list:
- entities: the important named things and technical concepts it mentions
  (name as written, short type such as person, organization, product, function, data type,
  standard, method, metric, location, date, concept; a one-sentence description from the text);
- relations: pairs of those entities that the fragment relates (source and target are entity
  names from the same fragment; a short description; 1-3 keywords; weight 1-10 for strength).
Keep it focused: at most 8 entities and 8 relations per fragment, descriptions under 15 words.
Skip generic words (e.g. "example", "section", "value").
Answer with JSON only, in this shape:
{{"nodes": [{{"node": "N1", "entities": [{{"name": "...", "type": "...", "description": "..."}}],
  "relations": [{{"source": "...", "target": "...", "description": "...", "keywords": ["..."], "weight": 5}}]}}]}}
Include every fragment label, with empty lists when a fragment has nothing worth extracting.

Document: {doc}
{fragments}"""

_IMAGE_PROMPT = """This image is from the document "{doc}" (page {page}). Caption/context: {context}
List the entities it shows (objects, labels, quantities, concepts) and how they relate.
Answer with JSON only: {{"node": "N1", "entities": [{{"name": "...", "type": "...", "description": "..."}}],
"relations": [{{"source": "...", "target": "...", "description": "...", "keywords": ["..."], "weight": 5}}]}}"""


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters a token), enough for batching."""
    return len(text) // 4 + 1


T = TypeVar("T")
Group = list[tuple[Node, str]]  # the member nodes of one prompt fragment, with their texts


def _greedy(items: list[T], cost: Callable[[T], int], limit: int,
            separate: Callable[[T, T], bool] = lambda first, item: False) -> list[list[T]]:
    """Consecutive runs of at most `limit` total cost (an oversized item goes alone); an item
    for which `separate(first item of the run, item)` holds starts a new run."""
    runs: list[list[T]] = []
    cur: list[T] = []
    used = 0
    for item in items:
        c = cost(item)
        if cur and (used + c > limit or separate(cur[0], item)):
            runs.append(cur)
            cur, used = [], 0
        cur.append(item)
        used += c
    if cur:
        runs.append(cur)
    return runs


def _item_tokens(item: tuple[Node, str]) -> int:
    return estimate_tokens(item[1])


def pack(items: list[tuple[Node, str]], budget: int) -> list[list[tuple[Node, str]]]:
    """Greedy document-order batches of at most `budget` tokens (an oversized node goes alone)."""
    return _greedy(items, _item_tokens, budget)


def pack_groups(groups: list[Group], budget: int) -> list[list[Group]]:
    """`pack` for merged fragments: batches of about `budget` tokens of fragment text."""
    return _greedy(groups, lambda g: sum(_item_tokens(it) for it in g), budget)


def merge_small(items: list[tuple[Node, str]], target: int) -> list[Group]:
    """Consecutive nodes of the same parent section and page, merged up to `target` tokens."""
    return _greedy(items, _item_tokens, target,
                   lambda first, it: it[0].parent != first[0].parent or it[0].page_idx != first[0].page_idx)


def _group_text(group: Group) -> str:
    return "\n".join(t for _, t in group)


def _fragment(label: str, group: Group) -> str:
    node = group[0][0]
    types = {n.type for n, _ in group}
    kind = {"section": "section heading", "equation": "equation"}.get(node.type, node.type) \
        if len(types) == 1 else "text"
    return f"--- {label} ({kind}, page {node.page_idx + 1}) ---\n{_group_text(group)[:MAX_NODE_CHARS]}"


def _to_extraction(node: Node, out: NodeOut) -> NodeExtraction:
    ents: dict[str, RawEntity] = {}
    for e in out.entities:
        name = clean_name(e.name)
        if name and name_key(name) not in ents:
            ents[name_key(name)] = RawEntity(name=name, type=(clean_name(e.type) or "concept").lower(),
                                             description=" ".join(e.description.split()))
    rels: list[RawRelation] = []
    for r in out.relations:
        s, t = clean_name(r.source), clean_name(r.target)
        if not s or not t or name_key(s) == name_key(t):
            continue
        for n in (s, t):  # an endpoint the model forgot to list is still an entity of the node
            ents.setdefault(name_key(n), RawEntity(name=n))
        rels.append(RawRelation(ents[name_key(s)].name, ents[name_key(t)].name,
                                " ".join(r.description.split()),
                                [k for k in r.keywords if k][:5], r.weight))
    return NodeExtraction(node.id, list(ents.values()), rels)


def _distribute(group: Group, ex: NodeExtraction) -> dict[str, NodeExtraction]:
    """A fragment's extraction per member node: an entity goes to the members whose text names
    it (all members when none does); a relation to the members holding one of its ends."""
    if len(group) == 1:
        return {group[0][0].id: ex}
    lowered = [t.lower() for _, t in group]
    owners: dict[str, list[int]] = {}
    for e in ex.entities:
        hit = [k for k, t in enumerate(lowered) if e.name.lower() in t]
        owners[name_key(e.name)] = hit or list(range(len(group)))
    out = {n.id: NodeExtraction(n.id) for n, _ in group}
    for e in ex.entities:
        for k in owners[name_key(e.name)]:
            out[group[k][0].id].entities.append(e)
    for r in ex.relations:
        ends = set(owners.get(name_key(r.source), [])) | set(owners.get(name_key(r.target), []))
        for k in sorted(ends) or [0]:
            out[group[k][0].id].relations.append(r)
    return out


def _has_content(text: str) -> bool:
    return len(text.split()) >= MIN_WORDS_FOR_CONTENT


def _map(llm: LLM, calls: list[dict[str, Any]], concurrency: int,
         on_call: Callable[[int], None] | None = None) -> list[Any]:
    """Run `llm.complete(**kw)` for each call, in order; a failure is returned, not raised.
    `on_call(i)`: call i has finished (as it happens where the client's map reports it, else
    in order once all have)."""
    if not calls:
        return []
    fn = getattr(llm, "map", None)
    params = inspect.signature(fn).parameters if fn is not None else {}
    if fn is not None and "return_exceptions" in params:
        if on_call is not None and "on_done" in params:
            return list(fn(calls, return_exceptions=True, on_done=on_call))
        return _reported(list(fn(calls, return_exceptions=True)), on_call)

    def one(kw: dict[str, Any]) -> Any:
        try:
            return llm.complete(**kw)
        except Exception as exc:  # recorded per node by the caller
            return exc

    if fn is not None:
        # A map without return_exceptions: wrap each call so one failure cannot sink the batch.
        try:
            return _reported(list(fn(calls)), on_call)
        except Exception:
            pass
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return _reported(list(pool.map(one, calls)), on_call)


def _reported(results: list[Any], on_call: Callable[[int], None] | None) -> list[Any]:
    """`results`, after telling `on_call` about each (a map that cannot report as it goes)."""
    if on_call is not None:
        for i in range(len(results)):
            on_call(i)
    return results


class LLMExtractor:
    """Batched, schema-validated LLM extraction (text, tables, equations) plus VLM for images."""

    name = "llm"

    def __init__(self, llm: LLM, *, batch_tokens: int = 1500, doc_name: str = "",
                 vlm: LLM | None = None, concurrency: int = 4, max_tokens: int | None = None,
                 merge_tokens: int = 250) -> None:
        self.llm = llm
        self.merge_tokens = merge_tokens
        self.vlm = vlm if vlm is not None and getattr(vlm, "available", False) else None
        self.batch_tokens = batch_tokens
        self.doc_name = doc_name
        self.concurrency = concurrency
        self.max_tokens = max_tokens
        self.calls = 0
        self.retried: list[str] = []
        # True when re-extracting nodes that failed before (a later `bookindex index`): their
        # calls bypass the completion cache, which holds the failed answers, instead of replaying it.
        self.fresh = False

    def _call(self, batch: list[Group], fresh: bool = False) -> dict[str, Any]:
        frags = "\n\n".join(_fragment(f"N{i + 1}", g) for i, g in enumerate(batch))
        content = _PROMPT.format(doc=self.doc_name, fragments=frags)
        if len(batch) >= CLOSING_MIN_FRAGMENTS:
            # naming every label again after the fragments: small models otherwise stop after a
            # few (with one or two fragments the reminder only made a 0.5B model answer empty)
            labels = ", ".join(f"N{i + 1}" for i in range(len(batch)))
            content += (f"\n\nAnswer with exactly {len(batch)} entries in \"nodes\", one per fragment "
                        f"({labels}), each with the entities and relations of that fragment.")
        kw: dict[str, Any] = {"messages": [{"role": "user", "content": content}],
                              "schema": BatchOut, "stage": STAGE}
        # room for every fragment's answer: a reply cut at the provider's default (often 1,024
        # tokens) loses the batch's last fragments, and each then costs a retry call of its own
        kw["max_tokens"] = self.max_tokens or min(MAX_COMPLETION, 256 + COMPLETION_PER_FRAGMENT * len(batch))
        if fresh or self.fresh:
            kw["cache"] = False  # the client still stores the new answer
        return kw

    def _image_call(self, node: Node) -> dict[str, Any] | None:
        path = node.meta.get("image_path")
        if not path or not Path(path).is_file():
            return None
        text = _IMAGE_PROMPT.format(doc=self.doc_name, page=node.page_idx + 1,
                                    context=" ".join(extractor_text(node).split())[:500] or "none")
        return {"messages": [user_message(text, images=[path])], "schema": NodeOut, "stage": "extract_image"}

    def _round(self, items: list[tuple[Node, str]], progress: bool, budget: int | None = None,
               fresh: bool = False, merge: bool = True,
               on_done: NodesDone | None = None) -> tuple[dict[str, NodeExtraction], dict[str, str]]:
        """One pass over `items`: extractions by node id, and errors by node id (`on_done`:
        the nodes of each call as it finishes)."""
        groups = merge_small(items, self.merge_tokens if merge else 0)
        batches = pack_groups(groups, budget or self.batch_tokens)
        calls = [self._call(b, fresh) for b in batches]
        self.calls += len(calls)
        if progress:
            from tqdm import tqdm
            tqdm.write(f"extract: {len(items)} nodes as {len(groups)} fragments in {len(calls)} LLM calls")
        sizes = [sum(len(g) for g in b) for b in batches]
        results = _map(self.llm, calls, self.concurrency,
                       None if on_done is None else lambda i: on_done(sizes[i]))
        good: dict[str, NodeExtraction] = {}
        bad: dict[str, str] = {}

        def fail(group: Group, why: str) -> None:
            for n, _ in group:
                bad[n.id] = why

        for batch, res in zip(batches, results):
            if isinstance(res, BaseException):
                for g in batch:
                    fail(g, f"malformed: {type(res).__name__}: {str(res)[:200]}")
                continue
            if isinstance(res, str):  # a client that ignored the schema
                try:
                    res = BatchOut.model_validate_json(res)
                except Exception as exc:
                    for g in batch:
                        fail(g, f"malformed: {str(exc)[:200]}")
                    continue
            by_label = {o.node.strip().upper(): o for o in res.nodes}
            for i, group in enumerate(batch):
                out = by_label.get(f"N{i + 1}")
                if out is None and len(batch) == 1 and len(res.nodes) == 1:
                    out = res.nodes[0]
                if out is None:
                    fail(group, "missing from the model's answer")
                    continue
                ex = _to_extraction(group[0][0], out)
                if not ex.entities and _has_content(_group_text(group)):
                    fail(group, "empty extraction for a node with content")
                    continue
                good.update(_distribute(group, ex))
        return good, bad

    def extract(self, nodes: Iterable[Node], progress: bool = False,
                on_done: NodesDone | None = None) -> list[NodeExtraction]:
        nodes = list(nodes)
        report: NodesDone = on_done if on_done is not None else (lambda n: None)
        done: dict[str, NodeExtraction] = {}
        items: list[tuple[Node, str]] = []
        image_calls: list[tuple[Node, dict[str, Any]]] = []
        for n in nodes:
            text = extractor_text(n).strip()
            if n.type == "image" and self.vlm is not None:
                call = self._image_call(n)
                if call is not None:
                    image_calls.append((n, call))
                    continue
            if not text:
                done[n.id] = NodeExtraction(n.id)
                continue
            items.append((n, text))
        if done:
            report(len(done))  # nothing to extract from these
        if image_calls and self.vlm is not None:  # image calls exist only with a VLM
            self.calls += len(image_calls)
            for (n, _), res in zip(image_calls, _map(self.vlm, [c for _, c in image_calls], self.concurrency)):
                if isinstance(res, NodeOut):
                    done[n.id] = _to_extraction(n, res)
                    report(1)
                else:  # VLM failed: fall back to the image's text (counted when that is done)
                    text = extractor_text(n).strip()
                    if text:
                        items.append((n, text))
                    else:
                        done[n.id] = NodeExtraction(n.id)
                        report(1)
        good, bad = self._round(items, progress, on_done=on_done)
        if bad:  # retry each failed node once, in a call of its own fragment
            self.retried = list(bad)
            by_id = {n.id: (n, t) for n, t in items}
            # A malformed answer sinks its whole batch: those nodes go back one by one, which
            # isolates the culprit. A fragment that was skipped or came back empty goes back whole
            # (batched retries saved calls but failed far more nodes; docs/benchmarks.md). `fresh`: a lone
            # fragment would otherwise replay the cached failed answer.
            malformed = [by_id[i] for i, why in bad.items() if why.startswith("malformed")]
            other = [by_id[i] for i, why in bad.items() if not why.startswith("malformed")]
            bad = {}
            for todo, merge in ((other, True), (malformed, False)):
                if todo:
                    good2, bad2 = self._round(todo, progress, budget=1, fresh=True, merge=merge)
                    good.update(good2)
                    bad.update(bad2)
        done.update(good)
        out: list[NodeExtraction] = []
        for n in nodes:
            if n.id in bad:
                out.append(add_structure(n, NodeExtraction(n.id, error=bad[n.id])))
            else:
                out.append(add_structure(n, done.get(n.id, NodeExtraction(n.id))))
        return out
