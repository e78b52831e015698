"""Agent-based planning (BookRAG §5.2): classify the question, then build its operator plan.

Classification uses the paper's prompt (Figure 10) with an LLM and rules without one. Plans follow
eqs. (9)–(12):
  single-hop: Extract → Select_by_Entity [fallback Select_by_Section] → (Graph ∥ Text) → Skyline → Reduce
  multi-hop:  Decompose → ForEach(single-hop without Reduce) → Map → Reduce
  global:     Π(Filter_Modal | Filter_Range) → Map → Reduce(COUNT | LIST | SUMMARIZE | ANALYZE)
Ablation flags in `settings.retrieval` (planning, selector, graph_reasoning, text_reasoning)
shape the plan, so ablations are configuration, not code paths.
"""

from __future__ import annotations

import re
from typing import Any

from bookindex.core.quantities import digits_for_words
from bookindex.operators import prompts
from bookindex.operators.context import IndexContext
from bookindex.operators.formulator import Extract, decompose, noun_chunk_mentions
from bookindex.operators.labels import find_labelled, qualifiers
from bookindex.operators.question_shape import coordinated_questions
from bookindex.operators.selector import unit_of
from bookindex.operators.table_shape import asked_dimension
from bookindex.retrieval.plans import Plan, Step

STRUCT_NOUNS = (r"(?:figures?|images?|pictures?|photos?|photographs?|charts?|plots?|graphs?|diagrams?|illustrations?"
           r"|tables?|equations?|formulas?|sections?|subsections?|chapters?|appendi(?:x|ces)"
           r"|code (?:listings?|blocks?|examples?)|pages?)")
_GLOBAL = [
    re.compile(rf"\bhow many\s+(?:\w+\s+){{0,3}}{STRUCT_NOUNS}\b", re.I),
    re.compile(rf"\b(?:number|count|total)\s+of\s+(?:\w+\s+){{0,2}}{STRUCT_NOUNS}\b", re.I),
    re.compile(r"\b(?:list|enumerate|name)\s+(?:all|every|each)\b", re.I),
    re.compile(rf"\b(?:count|list)\s+(?:the\s+)?(?:\w+\s+){{0,2}}{STRUCT_NOUNS}\b", re.I),
    re.compile(r"\bwhat are all\b", re.I),
    re.compile(rf"\b{STRUCT_NOUNS}\b.*\b(?:pages?\s+\d+\s*(?:-|–|to|through)\s*\d+|first\s+\d+\s+pages|last\s+\d+\s+pages)", re.I),
    re.compile(r"\b(?:summari[sz]e|give an overview of|overview of)\b", re.I),
]
_MULTI = [
    re.compile(r"\bdifference(?:s)?\s+(?:between|in)\b", re.I),
    re.compile(r"\b(?:compare|compared|comparing|comparison|versus|vs\.?)\b", re.I),
    re.compile(r"\bdiffer(?:s)?\s+from\b", re.I),
    re.compile(r"\bwhich\b.*\b(?:greater|higher|larger|bigger|smaller|lower|more|less|fewer)\b.*\bor\b", re.I),
    re.compile(r"\b(?:greater|higher|larger|bigger|smaller|lower|more|fewer|less)\s+than\b", re.I),
]


_AGGREGATION = re.compile(
    r"\b(?:how many|number of|count|counts|list|all|every|each|total|summari[sz]e|summary|overview|"
    r"across|throughout|entire|whole|overall|figures|tables|charts|images|pages|sections|chapters)\b", re.I)


def classify_rules(question: str, ctx: IndexContext | None = None) -> tuple[str, str]:
    """(query_type, reason) without an LLM."""
    dim = asked_dimension(question)
    if dim:
        return "global", f"counts the {dim} of a table"
    for rx in _GLOBAL:
        m = rx.search(question)
        if m:
            return "global", f"matched {m.group(0)!r}"
    parts = coordinated_questions(question)
    if parts:
        return "multi-hop", f"{len(parts)} questions joined in one: " + " | ".join(parts)
    for rx in _MULTI:
        m = rx.search(question)
        if m:
            return "multi-hop", f"matched {m.group(0)!r}"
    if ctx is not None and ctx.graph.entities and re.search(r"\b(?:and|both|or)\b", question, re.I):
        ext = Extract(ctx, {"use_llm": False})
        linked = [le for le in (ext.link(m) for m in ext_mentions(question)) if le.entity_ids]
        if len(linked) >= 2:
            units = unit_of(ctx, ctx.settings.retrieval.select_depth)
            secs = [{units.get(n) for e in le.entity_ids for n in ctx.graph.nodes_of(e)} for le in linked[:2]]
            if secs[0] and secs[1] and not (secs[0] & secs[1]):
                return "multi-hop", f"two linked entities in separate sections: {linked[0].mention!r}, {linked[1].mention!r}"
    return "single-hop", "no aggregation or comparison cue"


def ext_mentions(question: str) -> list[str]:
    return noun_chunk_mentions(question)


# Words that can join two lookups ("the X of A and of B", "after doing X, which ..."): a question
# with one of them and no cue the rules recognise goes to the LLM under "rules-first".
_JOINERS = re.compile(r"\b(?:and|or|both|either|neither|then|after|before|while|whose|respectively)\b", re.I)
CONFIDENT_MAX_WORDS = 30


def rules_confident(question: str, qtype: str, reason: str) -> bool:
    """Whether the rules' class can stand without asking the LLM (retrieval.classifier =
    "rules-first"): a global or multi-hop cue matched, or a short question with no word that could
    join two lookups. The LLM call costs seconds on a CPU; on the handbook and MMLongBench
    samples the rules' confident classes cost no accuracy (docs/benchmarks.md, "Answer latency")."""
    if qtype != "single-hop":
        return True
    return len(question.split()) <= CONFIDENT_MAX_WORDS and not _JOINERS.search(question)


def classify(question: str, ctx: IndexContext) -> tuple[str, dict[str, Any]]:
    mode = ctx.settings.retrieval.classifier
    if ctx.llm_available and mode == "rules-first":
        qt, why = classify_rules(question, ctx)
        if rules_confident(question, qt, why):
            return qt, {"classifier": "rules", "reason": why, "confident": True}
    if ctx.llm_available and mode != "rules":
        try:
            res = ctx.active_llm.complete(prompts.CLASSIFY.format(query=question), schema=prompts.Classification,
                                   stage="classify")
            cat = {"simple": "single-hop", "complex": "multi-hop"}.get(res.category, res.category)
            if cat == "single-hop" and coordinated_questions(question):
                # one single-hop plan answers one of the questions joined; the parse is sure
                qt, why = classify_rules(question, ctx)
                return qt, {"classifier": "rules", "reason": why,
                            "override": "LLM said single-hop but the question joins two questions"}
            if cat == "global" and not _AGGREGATION.search(question):
                # A global plan filters and aggregates the whole document; without any aggregation
                # word in the question that is a misclassification (small models make it often,
                # and it throws away the scent-based retrieval), so the rules decide.
                qt, why = classify_rules(question, ctx)
                return qt, {"classifier": "rules", "reason": why,
                            "override": "LLM said global but the question has no aggregation cue"}
            return cat, {"classifier": "llm"}
        except Exception as exc:  # noqa: BLE001 - fall back to rules, and say so
            qt, why = classify_rules(question, ctx)
            return qt, {"classifier": "rules", "reason": why,
                        "fallback": f"LLM failed ({type(exc).__name__}); classified by rules"}
    qt, why = classify_rules(question, ctx)
    return qt, {"classifier": "rules", "reason": why}


# -- plan builders ------------------------------------------------------------------------

def _flags(ctx: IndexContext) -> dict[str, Any]:
    r = ctx.settings.retrieval
    return {"selector": r.selector, "graph": r.graph_reasoning, "text": r.text_reasoning, "depth": r.select_depth,
            "cap": r.max_evidence, "alpha": r.ppr_alpha, "offline_graph_weight": r.offline_graph_weight,
            "skyline": r.skyline, "extractor": r.entity_extractor}


def retrieval_steps(ctx: IndexContext) -> list[Step]:
    """Eq. (9) + the reasoning part of eq. (10), without the final Reduce."""
    f = _flags(ctx)
    # plan entities by spaCy noun chunks + the entity index unless retrieval.entity_extractor = llm
    steps = [Step(op="Extract", params={} if f["extractor"] == "llm" else {"use_llm": False})]
    if f["selector"]:
        steps.append(Step(op="Select_by_Entity", params={"depth": f["depth"]},
                          fallback=Step(op="Select_by_Section", params={"depth": f["depth"]})))
    branches = []
    if f["graph"]:
        branches.append(Step(op="Graph_Reasoning", params={"alpha": f["alpha"]}))
    if f["text"]:
        branches.append(Step(op="Text_Reasoning"))
    if not branches:  # both reasoners off: keep text so the plan still ranks something
        branches.append(Step(op="Text_Reasoning"))
    steps.append(Step(op="Parallel", steps=branches) if len(branches) > 1 else branches[0])
    sky: dict[str, Any] = {"criteria": [b.op.split("_")[0].lower() for b in branches], "max_results": f["cap"],
                           "mode": f["skyline"]}
    if f["graph"] and not ctx.graph_from_llm:
        # An offline (co-occurrence) G is a weaker signal than an LLM-built one: it shapes the
        # skyline set and only nudges the order (see docs/benchmarks.md for the measured weights).
        sky["weights"] = {"graph": f["offline_graph_weight"], "text": 1.0}
    steps.append(Step(op="Skyline_Ranker", params=sky))
    return steps


def single_hop_plan(question: str, ctx: IndexContext) -> list[Step]:
    """Eqs. (9)–(10)."""
    return retrieval_steps(ctx) + [Step(op="Reduce", params={"operation": "ANSWER", "max_evidence": _flags(ctx)["cap"]})]


def multi_hop_plan(question: str, ctx: IndexContext, notes: dict[str, Any]) -> list[Step]:
    dec = Step(op="Decompose")
    joined = coordinated_questions(question)
    if joined:
        # questions joined in one: the parse gives each exactly, so no model is asked to split them
        subs, synth, how = list(joined), question, "rules: questions joined in one"
    else:
        holder = Extract(ctx)  # only to collect a fallback note from decompose()
        subs, synth, how = decompose(ctx, question, True, holder)
        if holder.record.get("fallback"):
            notes["decompose_fallback"] = holder.record["fallback"]
    dec.params = {"sub_questions": subs, "synthesis": synth}
    notes["decomposer"] = how
    reduce: dict[str, Any] = {"operation": "ANSWER", "max_evidence": _flags(ctx)["cap"]}
    map_params: dict[str, Any] = {}
    if joined:
        reduce["each_part"] = True  # the answer must answer each question, not the first one only
        map_params["read_ranking"] = True
    return [dec, Step(op="ForEach", params={"with_question": True}, steps=retrieval_steps(ctx)),
            Step(op="Map", params=map_params), Step(op="Reduce", params=reduce)]


_MODAL_WORDS = [
    (re.compile(r"\b(?:figures?|images?|pictures?|photos?|photographs?|charts?|plots?|graphs?|diagrams?|illustrations?)\b", re.I), "image"),
    (re.compile(r"\btables?\b", re.I), "table"),
    (re.compile(r"\b(?:equations?|formulas?)\b", re.I), "equation"),
    (re.compile(r"\bcode (?:listings?|blocks?|examples?)\b", re.I), "code"),
]


def global_spec_rules(question: str) -> tuple[prompts.GlobalSpec, list[str]]:
    """Filters and operation without an LLM: page ranges, section references, modal nouns.

    Returns the spec in the paper's filter vocabulary plus extra modal types it lacks
    (equation, code)."""
    q = digits_for_words(question)  # "page three" → "page 3", "first ten pages" → "first 10 pages"
    filters: list[prompts.FilterSpec] = []
    m = (re.search(r"\bpages?\s+(\d+)\s*(?:-|–|to|through|and)\s*(?:page\s+)?(\d+)", q, re.I)
         or re.search(r"\bfrom page\s+(\d+)\s+to\s+(?:page\s+)?(\d+)", q, re.I))
    if m:
        filters.append(prompts.FilterSpec(filter_type="page", filter_value=f"{m.group(1)}-{m.group(2)}"))
    else:
        m = re.search(r"\b(first|last)\s+(\d+)\s+pages\b", q, re.I)
        n = int(m.group(2)) if m else 0
        if m and n:
            filters.append(prompts.FilterSpec(filter_type="page", filter_value=f"{m.group(1).lower()} {n}"))
        else:
            m = re.search(r"\b(?:on|in|at) page\s+(\d+)\b", q, re.I)
            if m:
                filters.append(prompts.FilterSpec(filter_type="page", filter_value=m.group(1)))
    m = (re.search(r"\b(?:in|within|of|from)\s+(?:the\s+)?(?:section|chapter|appendix)\s+((?:\d+\.)*\d+|[A-Z])\b", q, re.I)
         or re.search(r"\b(?:in|within|of|from)\s+(?:the\s+)?[\"“'‘]([^\"”'’]+)[\"”'’]\s*(?:section|chapter)?", q, re.I)
         or re.search(r"\b(?:in|within|of|from)\s+the\s+((?:[A-Z][\w-]*\s?){1,5})\s+(?:section|chapter)\b", q)
         # "how many pages does section 3 span", "how many figures does chapter 2 have"
         or re.search(r"\b(?:section|chapter|appendix)\s+((?:\d+\.)*\d+|(?-i:[A-Z]))\b", q, re.I))
    if m:
        filters.append(prompts.FilterSpec(filter_type="section", filter_value=m.group(1).strip()))
    target = next((t for rx, t in _MODAL_WORDS if rx.search(q)), None)
    extra: list[str] = []
    if target in ("image", "table"):
        filters.append(prompts.FilterSpec(filter_type=target))
    elif target is not None:
        extra.append(target)
    elif re.search(r"\b(?:sections?|chapters?|subsections?|appendi(?:x|ces))\b", q, re.I) and \
            re.search(r"\b(?:how many|count|number of|list)\b", q, re.I):
        filters.append(prompts.FilterSpec(filter_type="section"))
    if re.search(r"\b(?:how many|count|number of|total)\b", q, re.I):
        op = "COUNT"
    elif re.search(r"\b(?:list|enumerate|what are all|which|name all)\b", q, re.I):
        op = "LIST"
    elif re.search(r"\b(?:summari[sz]e|summary|overview)\b", q, re.I):
        op = "SUMMARIZE"
    else:
        op = "ANALYZE"
    return prompts.GlobalSpec(filters=filters, operation=op), extra


_CONTAINS = re.compile(r"\b(?:include|includes|including|contain|contains|containing|mention|mentions|"
                       r"mentioning|use|uses|using|report|reports|reporting|show|shows|showing|with)\b", re.I)
_QUOTED = re.compile(r"[\"“]([^\"”]{1,40})[\"”]")


def content_terms(question: str) -> list[str]:
    """Quoted terms a COUNT/LIST question requires of each item ("How many tables include
    "F1"?"): the structural count is then of the filtered items that contain them."""
    return [t.strip() for t in _QUOTED.findall(question) if t.strip()] if _CONTAINS.search(question) else []


_COUNTED = re.compile(rf"\b(?:how many|number of|count(?: of)?|list(?: all)?(?: of)?(?: the)?)\s+(?:\w+\s+){{0,2}}?({STRUCT_NOUNS})\b",
                      re.I)


def counted_unit(question: str) -> str | None:
    """The document part a COUNT/LIST question counts ("figures" in "how many figures are in
    the report?"; "columns" in "how many columns does Table 2 have?"), None when it counts
    something else."""
    dim = asked_dimension(question)
    if dim:
        return dim
    m = _COUNTED.search(question)
    return m.group(1).lower() if m else None


_PART_NAMED = re.compile(r"\b(chapter|appendix|section|part)\s+((?:\d+|(?-i:[A-Z])|(?-i:[IVXL]+))(?:\.\d+)*)\b", re.I)


def labelled_section(ctx: IndexContext, question: str, value: str) -> str:
    """The title of the section the question names by its label ("chapter 3" -> "Chapter 3. The
    Filesystem Root") when the filter value is that label's number and the document labels the
    section so; else the value as given (a number alone matches numbered titles, not labels)."""
    for m in _PART_NAMED.finditer(question):
        if m.group(2).upper() == value.strip().upper():
            part = find_labelled(ctx.tree, m.group(1), m.group(2))
            if part is not None and ctx.tree.nodes[part.node_id].type == "section":
                return ctx.tree.nodes[part.node_id].title
    return value


def global_plan(question: str, ctx: IndexContext, notes: dict[str, Any]) -> list[Step] | None:
    """The filters, Map and Reduce of a global question; None when its only constraint names a
    section the document does not have (a question about a passage, not an aggregation)."""
    spec: prompts.GlobalSpec | None = None
    extra: list[str] = []
    rules, rules_extra = global_spec_rules(question)
    if ctx.settings.retrieval.classifier == "rules-first" and rules.operation in ("COUNT", "LIST") \
            and counted_unit(question) is not None:
        # a count or list of the document's own parts ("how many tables ...", "list the figures"):
        # the tree answers it exactly, and a small model's filters lose it (a SUMMARIZE of the
        # whole document, docs/benchmarks.md "Structure answers from the tree")
        spec, extra = rules, rules_extra
        notes["filters"] = "rules"
        notes["confident"] = "a count or list of the document's parts"
    elif ctx.llm_available:
        try:
            spec = ctx.active_llm.complete(prompts.FILTERS.format(query=question), schema=prompts.GlobalSpec, stage="filters")
            notes["filters"] = "llm"
        except Exception as exc:  # noqa: BLE001
            notes["filters_fallback"] = f"LLM failed ({type(exc).__name__}); filters from rules"
    if spec is None:
        spec, extra = rules, rules_extra
        notes["filters"] = "rules"
    steps: list[Step] = []
    chapters = re.search(r"\bchapters?\b", question, re.I) is not None
    for f in spec.filters:
        if f.filter_type == "page" and f.filter_value:
            steps.append(Step(op="Filter_Range", params={"range_type": "page", "value": f.filter_value}))
        elif f.filter_type == "section" and f.filter_value:
            f.filter_value = labelled_section(ctx, question, f.filter_value)
            if ctx.tree.find_section(f.filter_value) is None:
                # a title the planner made up (often the question's own words): filtering on it
                # would leave nothing to answer from
                notes.setdefault("unmatched_sections", []).append(f.filter_value)
                continue
            steps.append(Step(op="Filter_Range", params={"range_type": "section", "value": f.filter_value}))
        elif f.filter_type == "section":
            params: dict[str, Any] = {"modal_types": ["section"]}
            if chapters:
                params["section_level"] = 1
            steps.append(Step(op="Filter_Modal", params=params))
        elif f.filter_type in ("image", "table"):
            steps.append(Step(op="Filter_Modal", params={"modal_types": [f.filter_type]}))
    if extra:
        steps.append(Step(op="Filter_Modal", params={"modal_types": extra}))
    if not steps:
        if notes.get("unmatched_sections"):
            return None
        # nothing structural to filter on: the whole document, grouped
        steps.append(Step(op="Filter_Modal", params={"modal_types": ["text", "list", "table", "image", "equation", "code"]}))
    reduce: dict[str, Any] = {"operation": spec.operation}
    terms = content_terms(question) if spec.operation in ("COUNT", "LIST") else []
    if terms:
        reduce["must_contain"] = terms
    unit = counted_unit(question) if spec.operation in ("COUNT", "LIST") else None
    if unit:
        # the parts the document numbers itself ("Figure 3", "Appendix B") are counted first
        reduce["unit"] = unit
        quals = qualifiers(question, unit)
        if quals:
            reduce["qualifiers"] = quals
        scope = next((s.params for s in steps if s.op == "Filter_Range"), None)
        if scope:
            reduce["scope"] = {"range_type": scope["range_type"], "value": scope["value"]}
    return steps + [Step(op="Map"), Step(op="Reduce", params=reduce)]


def make_plan(question: str, ctx: IndexContext) -> Plan:
    """Eq. (8): P = Agent_Plan(q, c, O). With planning disabled: the static single-hop plan."""
    notes: dict[str, Any] = {}
    if not ctx.settings.retrieval.planning:
        notes = {"classifier": "none", "reason": "planning disabled: static standard plan"}
        return Plan(question=question, query_type="single-hop", steps=single_hop_plan(question, ctx), planner=notes)
    qt, notes = classify(question, ctx)
    if qt == "global":
        planned = global_plan(question, ctx, notes)
        if planned is None:
            notes["note"] = "the section filter matches no section: single-hop plan"
            qt, planned = "single-hop", single_hop_plan(question, ctx)
        steps = planned
    elif qt == "multi-hop":
        steps = multi_hop_plan(question, ctx, notes)
        if len(steps[0].params.get("sub_questions", [])) < 2:
            notes["note"] = "decomposition found one part: single-hop plan"
            qt, steps = "single-hop", single_hop_plan(question, ctx)
    else:
        steps = single_hop_plan(question, ctx)
    return Plan(question=question, query_type=qt, steps=steps, planner=notes)
