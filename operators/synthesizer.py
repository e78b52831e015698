"""Synthesizer operators (BookRAG §5.3, eq. 15): Map partial answers, Reduce to the final answer.

With an LLM, answers are grounded: only the numbered evidence, cited as [1], [2]…, and "not
answerable from the document" when the evidence lacks it. Without an LLM (or when a call
fails) answers are extractive — the best sentences of the top evidence, cited the same way —
and structural COUNT/LIST results are computed exactly from the tree, with or without an LLM.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any, Literal

from bookindex.core.errors import ConfigError
from bookindex.core.model import DocumentTree
from bookindex.core.pages import cite_page
from bookindex.operators import prompts
from bookindex.operators.base import Operator, Params, State
from bookindex.operators.candidate_scorer import CandidateWeights, choice_report, fitted_choice, shipped_weights
from bookindex.operators.computed import NOTE_OPENS, computed_answer
from bookindex.operators.context import IndexContext
from bookindex.operators.evidence_select import EvidenceWeights, packed_passages
from bookindex.operators.grounding import (
    MODEL_CHECKS,
    NOT_ANSWERABLE,
    answered_parts,
    cited_numbers,
    computed_on,
    extractive_quantities_on,
    grounded_answer,
    refusal_fallback_on,
    reply_text,
)
from bookindex.operators.labels import (
    Labelled,
    asked_figure_kind,
    kind_parts,
    label_word,
    labelled_parts,
    node_type,
    outline_parts,
    part_text,
    recurring_images,
)
from bookindex.operators.lookup import lookup
from bookindex.operators.passages import (
    ITEM_CHARS,
    Passage,
    build_passages,
    estimate_tokens,
    format_passages,
    passage_sources,
)
from bookindex.operators.reader import read, read_quantity, recurring_blocks
from bookindex.operators.selector import parse_page_range
from bookindex.operators.structure import doc_structure
from bookindex.operators.table_shape import pick_table, shape
from bookindex.operators.textscore import hybrid_scores
from bookindex.providers.lexical import tokenize
from bookindex.providers.llm import user_message

_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n{1,}")


def evidence_tokens(ctx: IndexContext) -> int:
    """The prompt-token budget for evidence passages: retrieval.evidence_tokens_by_model[the LLM's
    model] where set, else retrieval.evidence_tokens (chosen by measurement, docs/benchmarks.md)."""
    by_model = ctx.settings.retrieval.evidence_tokens_by_model
    model = ctx.llm.model if ctx.llm is not None else ""
    for name, tokens in by_model.items():
        if name and model and (name == model or name in model):
            return int(tokens)
    return ctx.settings.retrieval.evidence_tokens


def format_evidence(tree: DocumentTree, ids: list[str], numbers: list[int] | None = None) -> str:
    """Evidence as numbered passages (`operators.passages`); `numbers` keeps citation numbers
    global across sub-questions."""
    return format_passages(build_passages(tree, ids), numbers)


def best_sentences(tree: DocumentTree, question: str, ids: list[str], n_sent: int = 2,
                   max_nodes: int = 3, numbers: list[int] | None = None) -> tuple[str, list[int]]:
    """Extractive answer: the sentences of the top passages sharing most query terms, each
    quoted with the entry or section it comes from and its page, and cited [k]."""
    q = set(tokenize(question))
    cands: list[tuple[float, int, int, str, str]] = []
    passages = build_passages(tree, ids[:max_nodes])
    for k, p in zip(numbers or range(1, len(ids) + 1), passages):
        cited = cite_page(p.first_page, tree.page_label(p.first_page - 1))
        where = f'"{p.name}", {cited}' if p.name else cited
        for j, s in enumerate(x.strip() for x in _SENT.split(p.text)):
            if len(s) < 3:
                continue
            toks = tokenize(s)
            overlap = len(q & set(toks))
            score = overlap / math.sqrt(len(toks) + 1) + 0.15 / k  # earlier evidence breaks ties
            cands.append((score, k, j, " ".join(s.split())[:600], where))
    if not cands:
        return NOT_ANSWERABLE, []
    cands.sort(key=lambda c: (-c[0], c[1], c[2]))
    top = cands[0][0]
    picked = sorted([c for c in cands[:n_sent] if c[0] >= 0.6 * top], key=lambda c: (c[1], c[2]))
    cites = sorted({c[1] for c in picked})
    out: list[str] = []
    last_where = None
    for c in picked:  # the source is named once for consecutive sentences from it
        out.append(("" if c[4] == last_where else f"From {c[4]}: ") + f"{c[3]} [{c[1]}]")
        last_where = c[4]
    return " ".join(out), cites


def reader_passages(tree: DocumentTree, ids: list[str], question: str = "") -> list[Passage]:
    """What the extractive reader reads: every ranked item with up to ITEM_CHARS of context. A
    model's prompt is packed to its token budget (`pack_passages`); the reader costs no prompt
    tokens, and the answer is often further down the ranking than a small budget reaches. A
    table longer than its room shows the rows holding the `question`'s words (`focused_table`),
    as the prompt does: a statement's first rows rarely hold the line item asked about. A long
    text block shows its start, where its topic is stated."""
    return build_passages(tree, ids, budget_chars=ITEM_CHARS * max(1, len(ids)), question=question,
                          focus_blocks=False)


def prompt_passages(ctx: IndexContext, ids: list[str], question: str, budget_tokens: int | None = None,
                    weights: EvidenceWeights | None = None) -> list[Passage]:
    """What a model reads for the ranked `ids`: the passages that fit its evidence budget
    (`pack_passages`, or the fitted selection: `evidence_select.packed_passages`; `weights`: a
    fit being measured). When the question asks for arithmetic over line items the document's
    tables print and the ranking leads with those tables (`Reduce.lead_with_computed`), the first
    passage opens with the computed result and every cell it used (`Computed.note`), unless
    `answer.computed` is "never": a model reads tables and checks a sum better than it does one,
    and a DPO or a three-year average done in its head is where it goes wrong."""
    budget = evidence_tokens(ctx) if budget_tokens is None else budget_tokens
    found = computed_answer(ctx.tree, question) if ctx.settings.answer.computed != "never" and ids else None
    if found is None or ids[:len(found.node_ids)] != found.node_ids:
        return packed_passages(ctx, ids, budget, question, weights)
    rough = found.note(len(found.node_ids))
    passages = packed_passages(ctx, ids, budget - estimate_tokens(rough) - 1, question, weights)
    if not passages:
        return passages
    first, note = passages[0], found.note(len(passages)) + "\n"
    return [replace(first, text=note + first.text,
                    page_starts=tuple((at + len(note), page) for at, page in first.page_starts)),
            *passages[1:]]


def _reader_units(ctx: IndexContext) -> tuple[frozenset[str], frozenset[str]]:
    """What the extractive reader is told of the document: its running headers and footers, and
    its reference entries' ids with their blocks'."""
    if ctx.views.furniture is None:
        ctx.views.furniture = recurring_blocks(ctx.tree)
    entry_of = doc_structure(ctx).entry  # a block -> its reference entry
    return ctx.views.furniture, frozenset(entry_of) | frozenset(entry_of.values())


def reader_weights(ctx: IndexContext) -> CandidateWeights | None:
    """The weights the reader picks its answer by (`answer.reader_choice`): None for the hand-set
    order, else the shipped fitted weights (a ConfigError when none ship)."""
    if ctx.settings.answer.reader_choice != "fitted":
        return None
    weights = shipped_weights()
    if weights is None:
        raise ConfigError("answer.reader_choice is 'fitted' but no fitted weights ship "
                          "(bookindex/operators/candidate_weights.json): run scripts/fit_reader.py --write")
    return weights


def extractive_answer(ctx: IndexContext, question: str, passages: list[Passage],
                      numbers: list[int] | None = None, reports: list[dict[str, Any]] | None = None
                      ) -> tuple[str, list[int]]:
    """The no-LLM answer: the extractive reader's span or sentence (`operators.reader`), or the
    best-matching sentences when the reader finds no sentence holding the question's words.
    `reports`: where the reader's choice is recorded for `--explain` (`choice_report`)."""
    furniture, entries = _reader_units(ctx)
    weights = reader_weights(ctx)
    choose = partial(fitted_choice, weights=weights) if weights is not None else None

    def explain(a: Any, cands: list[Any], chosen: Any) -> None:
        if reports is not None:
            reports.append(choice_report(a, cands, chosen, weights))

    text, cites = read(question, passages, numbers, furniture, entries, ctx.page_labels, choose,
                       explain if reports is not None else None)
    if text:
        return text, cites
    ids = [p.node_id for p in passages]
    return best_sentences(ctx.tree, question, ids, numbers=numbers) if ids else (NOT_ANSWERABLE, [])


def diversify(tree: DocumentTree, scored: list[tuple[str, float]], decay: float = 0.3) -> list[tuple[str, float]]:
    """Order by score where the k-th node of a page counts decay^k (ties: input order)."""
    seen: dict[int, int] = {}
    adj = []
    for pos, (i, sc) in enumerate(sorted(scored, key=lambda t: -t[1])):
        pg = tree.nodes[i].page_idx
        adj.append((sc * decay ** seen.get(pg, 0), pos, i, sc))
        seen[pg] = seen.get(pg, 0) + 1
    return [(i, sc) for _, _, i, sc in sorted(adj, key=lambda t: (-t[0], t[1]))]


def rank_candidates(ctx: IndexContext, state: State) -> str | None:
    """A global plan's evidence ranking: its filtered nodes, most relevant to the question first
    (diversified), when no reasoning step ranked anything. Returns a note when the filters matched
    nothing and the most relevant content of the whole document stands in. Map runs it before its
    partial answers; a search (no Map) runs it alone."""
    if state.ranked:
        return None
    tree = ctx.tree
    rel = hybrid_scores(ctx, state.question)
    pool = [i for i in (state.candidates or []) if tree.nodes[i].type != "document"]
    note = None
    if not pool:  # the filters matched nothing: show the most relevant content instead
        pool = [i for i, _ in sorted(rel.items(), key=lambda kv: (-kv[1], kv[0]))[:40]]
        note = "filters matched no node; evidence ranked from the whole document"
    state.ranked = diversify(tree, [(i, rel.get(i, 0.0)) for i in pool])
    return note


class MapParams(Params):
    group_size: int = 8
    max_groups: int = 6
    use_llm: bool = True
    max_images: int = 4  # image/chart nodes of a group sent to the VLM as cropped page regions
    # without a model, a sub-question's partial answer reads the whole merged ranking after its
    # own evidence (questions asked in one: the whole question's retrieval finds either part)
    read_ranking: bool = False


class Map(Operator[MapParams]):
    """Partial answers: one per sub-question (multi-hop) or per group of filtered evidence (global).

    For a COUNT or LIST plan (`state.operation`, which the executor takes from the plan's Reduce)
    the partials are extractive: Reduce answers from the tree, so a model call would be wasted."""

    name = "Map"
    kind = "synthesizer"

    Params = MapParams

    def _ask_vlm(self, question: str, ids: list[str], nums: list[int] | None, visual: list[str]) -> Any:
        """Image and chart evidence goes to the VLM as the cropped page region, with the group's
        text evidence alongside; None when no region could be rendered."""
        images = [img for img in (self.ctx.region_image(i) for i in visual) if img]
        if not images:
            return None
        text = prompts.MAP.format(query=question, evidence=format_evidence(self.ctx.tree, ids, nums))
        text += f"\n\nThe {len(images)} attached image(s) show the figure/chart evidence items in order."
        return self.ctx.active_vlm.complete([user_message(text, images)], schema=prompts.Partial, stage="map-vision")

    def _extractive_partial(self, question: str, ids: list[str], nums: list[int] | None,
                            number: dict[str, int]) -> tuple[str, list[int]]:
        """The extractive reader's partial answer from the group's evidence (`read_ranking`: then
        from the rest of the ranking, as the reader reads a single-hop question's)."""
        tree = self.ctx.tree
        if not self.params.read_ranking or nums is None:
            return extractive_answer(self.ctx, question, build_passages(tree, ids, question=question,
                                                                        focus_blocks=False), nums)
        read = ids + [i for i in number if i not in ids]
        return extractive_answer(self.ctx, question, reader_passages(tree, read, question), [number[i] for i in read])

    def apply(self, state: State) -> State:
        tree = self.ctx.tree
        groups: list[tuple[str, list[str]]] = []
        if state.sub_results:
            groups = [(r["question"], [i for i, _ in r["ranked"]]) for r in state.sub_results]
        else:
            ids = [i for i in (state.candidates or []) if tree.nodes[i].type != "document"]
            g = self.params.group_size
            cap = g * self.params.max_groups
            fallback = rank_candidates(self.ctx, state)
            if fallback:
                self.note(evidence_fallback=fallback)
            if len(ids) > cap:
                # more filtered nodes than the groups hold: the most relevant ones, in document order
                keep = {i for i, _ in state.ranked[:cap]}
                self.note(grouped=f"{cap} most relevant of {len(ids)} filtered nodes")
                ids = [i for i in ids if i in keep]
            groups = [(state.question, ids[k:k + g]) for k in range(0, len(ids), g)][: self.params.max_groups]
        from_tree = state.operation in ("COUNT", "LIST")
        if not from_tree and computed_on(self.ctx.settings, self.params.use_llm and self.ctx.llm_available) \
                and computed_answer(self.ctx.tree, state.question) is not None:
            from_tree = True  # Reduce computes the question's arithmetic from the tables
        use_llm = self.params.use_llm and self.ctx.llm_available and not from_tree
        use_vlm = self.params.use_llm and self.ctx.vlm_available and not from_tree
        if from_tree:
            self.note(skipped_llm=f"{state.operation or 'ANSWER'}: Reduce computes the answer from the tree")
        state.partials = []
        number = {nid: k for k, (nid, _) in enumerate(state.ranked, 1)}
        for question, ids in groups:
            part: dict[str, Any] = {"question": question, "evidence": ids}
            nums = [number[i] for i in ids] if all(i in number for i in ids) else None
            visual = [i for i in ids if tree.nodes[i].type == "image"][: self.params.max_images]
            if use_vlm and visual:
                try:
                    res = self._ask_vlm(question, ids, nums, visual)
                    if res is not None:
                        part.update(answer=reply_text(res, nums), source="vlm", images=visual)
                except Exception as exc:  # noqa: BLE001 - the text path below still answers
                    self.note(vlm_fallback=f"VLM failed ({type(exc).__name__}); used captions and OCR text")
                    use_vlm = False
            if use_llm and ids and "answer" not in part:
                try:
                    res = self.ctx.active_llm.complete(prompts.MAP.format(query=question, evidence=format_evidence(tree, ids, nums)),
                                                schema=prompts.Partial, stage="map")
                    part.update(answer=reply_text(res, nums), source="llm")
                except Exception as exc:  # noqa: BLE001
                    self.note(fallback=self.llm_failed(exc))
                    use_llm = False
            if "answer" not in part:
                text, cites = self._extractive_partial(question, ids, nums, number) if ids else (NOT_ANSWERABLE, [])
                part.update(answer=text, source="extractive", cites=cites)
            state.partials.append(part)
        self.note(outputs=[{"question": p["question"], "evidence": len(p["evidence"]), "source": p["source"]}
                           for p in state.partials])
        return state


def _holds_all(terms: list[str]) -> Callable[[str], bool]:
    """Whether a text holds every one of `terms` as whole words, case-insensitive (the "F1" of
    "how many tables include "F1"?")."""
    pats = [re.compile(rf"(?<!\w){re.escape(t)}(?!\w)", re.I) for t in terms]
    return lambda text: all(p.search(text) for p in pats)


def _lead_with(state: State, ids: list[str]) -> None:
    """The counted parts are the answer's evidence: first in the ranking, in document order."""
    counted = list(dict.fromkeys(ids))
    score_of, first = dict(state.ranked), set(counted)
    state.ranked = [(i, score_of.get(i, 0.0)) for i in counted] + [(i, sc) for i, sc in state.ranked if i not in first]
    state.emit("evidence", [i for i, _ in state.ranked])


class ReduceParams(Params):
    operation: Literal["ANSWER", "COUNT", "LIST", "SUMMARIZE", "ANALYZE"] = "ANSWER"
    use_llm: bool = True
    max_evidence: int = 10
    # COUNT/LIST: only items whose text contains every one of these terms (case-insensitive,
    # whole words), e.g. the "F1" of "how many tables include "F1"?"
    must_contain: list[str] = []
    # COUNT/LIST: the document part counted ("figures", "appendices"): the parts the document
    # labels with its word ("Figure 3", "Appendix B") are counted when there are any
    unit: str | None = None
    # the page or section range of the question (Filter_Range's parameters), for labelled parts
    scope: dict[str, str] | None = None
    # COUNT/LIST: the words that narrow the unit ("pie" of "pie charts"): the parts whose caption
    # or text names them are counted, every part (with a note) when none does
    qualifiers: list[str] = []
    # the sub-questions are questions the user joined in one ("Which X ..., and where is Y?"):
    # a merged answer must answer each one whose partial answer found something (cite its evidence)
    each_part: bool = False


class Reduce(Operator[ReduceParams]):
    """The final answer: grounded generation over evidence or partials; COUNT/LIST from the tree."""

    name = "Reduce"
    kind = "synthesizer"

    Params = ReduceParams

    def _scope(self) -> set[str] | None:
        """The node ids of the question's page or section range (None: the whole document)."""
        sc = self.params.scope
        if not sc:
            return None
        tree = self.ctx.tree
        if sc.get("range_type") == "section":
            sec = tree.find_section(sc.get("value", ""))
            return {n.id for n in tree.walk(sec)} if sec is not None else None
        first, last = parse_page_range(sc.get("value", "1"), tree.page_count)
        return {n.id for n in tree.walk() if first <= n.page_idx <= last}

    def _parts(self, state: State, terms: list[str]) -> tuple[list[Labelled], str, str] | None:
        """The parts a COUNT/LIST of `unit` counts, from the tree: the pages of the range, the
        parts the document labels with the unit's word ("Figure 3", "Appendix B"), or the sections
        of its outline; narrowed to the items holding every term and naming the unit's qualifiers
        ("pie" of "pie charts"). Returns (parts, what was counted, a note) or None when the tree
        has no such parts (the filtered nodes are counted)."""
        tree = self.ctx.tree
        unit = self.params.unit or ""
        scope = self._scope()
        if label_word(unit) == "page":
            sc = self.params.scope or {}
            if sc.get("range_type") == "page":
                first_p, last_p = parse_page_range(sc.get("value", "1"), tree.page_count)
                pages = list(range(first_p, last_p + 1))
            elif scope is not None:
                pages = sorted({n.page_idx for n in tree.walk() if n.id in scope})
            else:
                pages = list(range(tree.page_count))
            first: dict[int, str] = {}
            for n in tree.walk():
                first.setdefault(n.page_idx, n.id)
            return [Labelled(f"p. {p + 1}", first.get(p, tree.root_id), p + 1) for p in pages], "pages", ""
        filtered = [i for i in (state.candidates or []) if tree.nodes[i].type != "document"]
        if filtered and all(tree.nodes[i].type != node_type(unit) for i in filtered):
            return None  # the filters (an edited plan) select other parts than the unit: count those
        quals = [q for q in self.params.qualifiers if q.strip()]
        kind = asked_figure_kind(unit, quals)
        if kind:
            by_kind = self._kind_parts(kind, scope, terms, quals)
            if by_kind is not None:
                return by_kind
        parts, how = labelled_parts(tree, unit, scope), "document labels"
        if not parts and label_word(unit) in ("section", "chapter", "subsection"):
            parts, how = outline_parts(tree, unit, scope), "document outline"
        if not parts:
            return None
        if terms:
            holds = _holds_all(terms)
            parts = [x for x in parts if holds(part_text(tree, x.node_id))]
        note = ""
        if quals and parts:
            pats = [re.compile(rf"(?<!\w){re.escape(q)}", re.I) for q in quals]
            named = [x for x in parts if all(p.search(part_text(tree, x.node_id)) for p in pats)]
            if named:
                parts = named
            else:
                note = (f"no {unit} says {' '.join(quals)!r} in its caption or text: the kind of each is not in "
                        f"the text, so every one is counted")
        return parts, how, note

    def _kind_parts(self, kind: str, scope: set[str] | None, terms: list[str],
                    quals: list[str]) -> tuple[list[Labelled], str, str] | None:
        """The figures of the asked kind ("pie chart" of "how many pie charts"), by the kind the
        parser told from each figure's pixels; None when no figure has that kind (the labelled
        parts are counted, `_parts`). The note says how many figures have no known kind and which
        of the question's words could not be checked ("exterior" of "exterior photos")."""
        tree = self.ctx.tree
        parts, unknown = kind_parts(tree, kind, scope)
        if terms:
            holds = _holds_all(terms)
            parts = [x for x in parts if holds(part_text(tree, x.node_id))]
        if not parts:
            return None
        notes = []
        if unknown:
            notes.append(f"{unknown} other figure{'s' if unknown > 1 else ''} of no known kind "
                         f"{'are' if unknown > 1 else 'is'} not counted")
        kind_words = set(kind.split()) | {"photograph"}
        unchecked = [q for q in quals if q.lower() not in kind_words]
        if unchecked:
            notes.append(f"{' '.join(unchecked)!r} is not checked: every {kind} is counted")
        return parts, f"figure kind ({kind})", "; ".join(notes)

    def _count_parts(self, state: State, op: str, terms: list[str]) -> bool:
        """COUNT/LIST of the parts `_parts` finds, each cited by its label and page; False when
        the tree has none (the filtered nodes are counted)."""
        found = self._parts(state, terms)
        if found is None:
            return False
        parts, how, note = found
        listing: list[dict[str, Any]] = [{"node_id": x.node_id, "type": self.ctx.tree.nodes[x.node_id].type,
                                          "page": x.page, "label": x.label} for x in parts]
        state.structural = {"operation": op, "count": len(parts), "items": listing, "counted": how}
        if how != "pages":
            _lead_with(state, [x.node_id for x in parts])
        if terms:
            state.structural["must_contain"] = terms
        if note:
            state.structural["note"] = note
        if how == "pages":
            cited = (f"pp. {parts[0].page}-{parts[-1].page}" if len(parts) == parts[-1].page - parts[0].page + 1
                     else ", ".join(x.label for x in parts)) if parts else ""
        else:
            cited = "; ".join(f"{x.label}, p. {x.page}" for x in parts)
        if op == "COUNT":
            state.answer = f"{len(parts)}" + (f" ({cited})" if cited else "") + (f". Note: {note}" if note else "")
        else:
            state.answer = "\n".join(f"- {x.label} (p. {x.page})" for x in parts) or "none"
            if note:
                state.answer += f"\nNote: {note}"
        self.note(outputs={"count": len(parts)}, source=f"tree: {how}")
        return True

    def lead_with_counted(self, state: State) -> None:
        """Put the parts a COUNT/LIST counts first in the evidence ranking without answering (a
        search ranks what the answer would count)."""
        if self.params.operation not in ("COUNT", "LIST") or not self.params.unit or \
                self.params.unit in ("columns", "rows"):
            return
        found = self._parts(state, [t for t in self.params.must_contain if t.strip()])
        if found is not None and found[1] != "pages":
            _lead_with(state, [x.node_id for x in found[0]])

    def _table_dimension(self, state: State) -> bool:
        """"How many columns / rows does <the table> have?": counted on the table's grid
        (`operators.table_shape`), cited by the table; False when no one table is meant."""
        tree = self.ctx.tree
        cands = [i for i in (state.candidates or []) if tree.nodes[i].type != "document"]
        picked = pick_table(tree, state.question, cands)
        if picked is None:
            return False
        table, how = picked
        dim = self.params.unit or "columns"
        sh = shape(table)
        n = sh.columns if dim == "columns" else sh.rows
        page = table.page_idx + 1
        state.answer = f"{n} ({dim} holding text in {how}, p. {page})"
        state.structural = {"operation": "COUNT", "count": n, "counted": f"table {dim}", "chosen": how,
                            "items": [{"node_id": table.id, "type": "table", "page": page, "label": table.label}]}
        self.note(outputs={"count": n}, source=f"tree: table {dim}")
        return True

    def _lookup(self, state: State) -> bool:
        """"On which page is Table 3?", "What is the title of Figure 2?": the labelled part's
        page, section or title from the tree (`operators.lookup`), cited by the part's node."""
        found = lookup(self.ctx.tree, state.question, self.ctx.page_labels)
        if found is None:
            return False
        node = self.ctx.tree.nodes[found.node_id]
        state.ranked = [(found.node_id, 1.0), *[(i, sc) for i, sc in state.ranked if i != found.node_id]]
        state.answer, state.citations = found.answer, [1]
        state.structural = {"operation": "LOOKUP", "asked": found.asked, "count": 1, "counted": "document labels",
                            "items": [{"node_id": node.id, "type": node.type, "page": node.page_idx + 1,
                                       "label": node.label}]}
        state.emit("evidence", [i for i, _ in state.ranked])
        self.note(source="tree: labelled part", outputs={"asked": found.asked, "node": found.node_id})
        return True

    def lead_with_computed(self, state: State) -> None:
        """Put the tables that print the line items of the question's arithmetic first in the
        evidence ranking without answering: what a model reads, and what a search returns."""
        if self.params.operation not in ("COUNT", "LIST"):
            found = computed_answer(self.ctx.tree, state.question)
            if found is not None:
                _lead_with(state, found.node_ids)

    def _compute(self, state: State) -> bool:
        """"What is the FY2016 working capital ratio? Define it as ...": the arithmetic the
        question asks, over the line items the document's tables print (`operators.computed`),
        cited by those tables. Without an LLM or with the in-process one (`answer.computed`); a
        model you bring reads those tables first in its evidence (`lead_with_computed`)."""
        found = computed_answer(self.ctx.tree, state.question)
        if found is None:
            return False
        _lead_with(state, found.node_ids)
        state.answer, state.citations = found.answer, list(range(1, len(found.node_ids) + 1))
        state.structural = found.structural
        self.note(source="tree: computed from table cells", outputs={"value": found.structural["value"]})
        return True

    def apply(self, state: State) -> State:
        tree = self.ctx.tree
        op = self.params.operation
        state.operation = op
        if op in ("COUNT", "LIST"):
            terms = [t for t in self.params.must_contain if t.strip()]
            if self.params.unit in ("columns", "rows") and self._table_dimension(state):
                return state
            if self.params.unit and self._count_parts(state, op, terms):
                return state
            items = [i for i in (state.candidates or []) if tree.nodes[i].type != "document"]
            decoration = recurring_images(tree)  # a banner on every page is no figure to count
            items = [i for i in items if i not in decoration]
            if terms:
                holds = _holds_all(terms)
                items = [i for i in items if holds(tree.nodes[i].content)]
            listing: list[dict[str, Any]] = [{"node_id": i, "type": tree.nodes[i].type, "page": tree.nodes[i].page_idx + 1,
                        "label": tree.nodes[i].label} for i in items]
            state.structural = {"operation": op, "count": len(items), "items": listing}
            if terms:
                state.structural["must_contain"] = terms
            if op == "COUNT":
                kinds = sorted({str(x["type"]) for x in listing})
                cond = f" containing {', '.join(repr(t) for t in terms)}" if terms else ""
                pages = ", ".join(str(x["page"]) for x in listing)  # every item counted, cited by its page
                state.answer = f"{len(items)}" + (f" ({', '.join(kinds)} nodes matching the filters{cond}: "
                                                  f"p. {pages})" if kinds else "")
            else:
                state.answer = "\n".join(f"- {x['label']} (p. {x['page']})" for x in listing) or "none"
            kind = asked_figure_kind(self.params.unit or "", self.params.qualifiers)
            if kind and any(x["type"] == "image" for x in listing):
                # the kind asked was told of no figure: the count is of every figure, and says so
                note = f"no figure was told to be a {kind} from its pixels: every one is counted"
                state.structural["note"] = note
                state.answer += f". Note: {note}" if op == "COUNT" else f"\nNote: {note}"
            self.note(outputs={"count": len(items)}, source="tree")
            return state
        if op == "ANSWER" and not state.sub_results and self._lookup(state):
            return state
        if computed_on(self.ctx.settings, self.params.use_llm and self.ctx.llm_available):
            if self._compute(state):
                return state
        else:
            self.lead_with_computed(state)
        ev = [i for i, _ in state.ranked][: self.params.max_evidence] if state.ranked else \
            [i for i in (state.candidates or []) if tree.nodes[i].type != "document"][: self.params.max_evidence]
        read_ids = list(ev)  # the extractive reader reads every ranked item (reader_passages)
        merge = bool(state.partials and (state.sub_results or op in ("SUMMARIZE", "ANALYZE")))
        if merge:
            parts = "\n".join(f"- {p['question']}: {p['answer']}" for p in state.partials)
            prompt = prompts.REDUCE.format(query=state.synthesis or state.question, partials=parts)
            sources = None
        else:
            # the best-ranked passages that fit the model's evidence budget; the rest is not shown
            passages = prompt_passages(self.ctx, ev, state.question)
            if passages and passages[0].text.startswith(NOTE_OPENS):
                self.note(computed=passages[0].text.split("\n", 1)[0])  # what the model was told
            if len(passages) < len(ev):
                self.note(packed=f"{len(passages)} of {len(ev)} evidence items fit {evidence_tokens(self.ctx)} tokens")
            ev = [p.node_id for p in passages]  # the ranked nodes shown, in their order (a citation's number)
            prompt = prompts.ANSWER.format(query=state.question, evidence=format_passages(passages))
            sources = passage_sources(passages)

        # partials cite the whole ranking (Map numbers it); the answer's evidence then reaches the
        # highest number cited (build_answer)
        allowed = range(1, (len(state.ranked) if merge and state.ranked else len(ev)) + 1)

        reader_reports: list[dict[str, Any]] = []

        def read() -> tuple[str, list[int]]:
            if not read_ids:
                return NOT_ANSWERABLE, []
            return extractive_answer(self.ctx, state.question, reader_passages(tree, read_ids, state.question),
                                     reports=reader_reports)

        def extractive() -> tuple[str, list[int]]:
            if state.partials and state.sub_results:
                text = " ".join(p["answer"] for p in state.partials if p["answer"] != NOT_ANSWERABLE) or NOT_ANSWERABLE
                return text, [n for n in cited_numbers(text) if n in allowed]
            return read()

        llm = self.ctx.active_llm if self.params.use_llm and self.ctx.llm_available else None
        state.emit("evidence", [i for i, _ in state.ranked] if state.ranked else ev)
        if llm is not None and not merge and read_ids and extractive_quantities_on(self.ctx.settings):
            # a quantity the reader finds as a number of the kind asked: the in-process model is
            # not asked (`answer.extractive_quantities`; docs/configuration.md says why)
            found = read_quantity(state.question, reader_passages(tree, read_ids, state.question),
                                  None, *_reader_units(self.ctx))
            if found is not None:
                state.answer, state.citations, state.citation_check = found[0], found[1], "extractive"
                self.note(source="extractive: a number of the kind asked, the model not asked",
                          citations="extractive", outputs={"citations": state.citations})
                return state
        each = answered_parts(state.partials, allowed) if merge and self.params.each_part else None
        res = grounded_answer(llm, prompt, allowed, extractive, sources=sources,
                              on_event=state.on_event, refusal_fallback=refusal_fallback_on(self.ctx.settings),
                              reader=read, question=(state.synthesis or state.question) if merge else state.question,
                              parts=each)
        state.answer, state.citations, state.citation_check = res.answer, res.citations, res.check
        self.note(source="llm" if res.check in MODEL_CHECKS else "extractive",
                  citations=res.check, outputs={"citations": state.citations}, **res.notes)
        if reader_reports and res.check not in MODEL_CHECKS:
            self.note(reader=reader_reports[-1])
        return state
