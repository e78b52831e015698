"""Formulator operators (BookRAG §5.2, eqs. 2–3): Extract query entities, Decompose questions."""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process

from bookindex.operators import prompts
from bookindex.operators.base import LinkedEntity, Operator, Params, State
from bookindex.operators.context import LINK_CACHE, IndexContext
from bookindex.operators.question_shape import coordinated_questions
from bookindex.operators.textscore import prefetch_vectors, query_vector
from bookindex.providers.lexical import STOPWORDS
from bookindex.providers.nlp import english_if_installed

NOT_FOR_CHUNKS = ["ner", "lemmatizer"]  # components noun chunks do not need, left out of their parse


def noun_chunk_model() -> Any | None:
    """spaCy's small English pipeline (loaded once per process and shared with the reader: a second
    copy cost a second and a half and its memory), or None; noun chunks parse without
    `NOT_FOR_CHUNKS`."""
    return english_if_installed()


_GENERIC = STOPWORDS | {"document", "report", "paper", "page", "pages", "section", "figure", "table",
                        "question", "answer", "example", "information", "thing", "way", "number",
                        "guide", "manual", "it", "they", "one", "type", "kind", "part"}


_NOT_NAME = re.compile(r"[^\w\s.+#-]")


def _norm(s: str) -> str:
    return " ".join(_NOT_NAME.sub(" ", s.lower()).split())


def noun_chunk_mentions(question: str, limit: int = 6) -> list[str]:
    """Candidate entity mentions without an LLM: quoted strings, noun chunks, code-like tokens.
    Kept per question text (the planner, a multi-hop question's batch embedding and Extract ask
    for the same ones; spaCy's parse is the cost)."""
    return list(_mentions(question, limit))


@functools.lru_cache(maxsize=1024)
def _mentions(question: str, limit: int) -> tuple[str, ...]:
    out: list[str] = []

    def add(m: str) -> None:
        m = " ".join(m.strip(" ?.,;:!'\"").split())
        words = [w for w in m.lower().split() if w not in _GENERIC]
        if not words or len(m) < 2:
            return
        m = " ".join(w for w in m.split() if w.lower() not in ("the", "a", "an", "this", "that", "these",
                                                                  "those", "its", "their", "our", "what", "which"))
        if m and m.lower() not in (o.lower() for o in out):
            out.append(m)

    for q in re.findall(r"[\"“'‘]([^\"”'’]{2,60})[\"”'’]", question):
        add(q)
    nlp = noun_chunk_model()
    if nlp is not None:
        for chunk in nlp(question, disable=NOT_FOR_CHUNKS).noun_chunks:
            add(chunk.text)
    else:
        for w in re.findall(r"\b[A-Za-z][\w-]{3,}\b", question):
            add(w)
    for tok in re.findall(r"\b(?:[A-Z]{2,}[\w-]*|\w+_\w+|\w+\(\))", question):
        add(tok)
    return tuple(out[:limit])


class ExtractParams(Params):
    max_entities: int = 5
    links_per_mention: int = 3
    min_similarity: float = 0.75
    min_fuzzy: float = 92.0
    use_llm: bool = True
    mentions: list[str] | None = None  # fixed mentions (an edited plan); skips extraction


class Extract(Operator[ExtractParams]):
    """Eq. (3): E_q = LLM(P_Ext, q), each mention linked to G by exact name, alias, fuzzy name or
    embedding similarity. Without an LLM the mentions are noun chunks."""

    name = "Extract"
    kind = "formulator"

    Params = ExtractParams

    def rule_texts(self, question: str) -> list[str] | None:
        """The texts `apply` will embed for `question` when its mentions come from the rules
        (given or noun chunks), so a multi-hop question can embed all its sub-questions' texts in
        one batch first; None when an LLM picks the mentions (not known before it answers)."""
        p = self.params
        mentions = list(p.mentions or [])
        if not mentions:
            if p.use_llm and self.ctx.llm_available:
                return None
            mentions = noun_chunk_mentions(question)
        return [question] + (mentions[: p.max_entities] if self.ctx.graph.entities else [])

    def apply(self, state: State) -> State:
        p = self.params
        how = "given"
        mentions = list(p.mentions or [])
        if not mentions:
            how = "noun-chunks"
            if p.use_llm and self.ctx.llm_available:
                try:
                    res = self.ctx.active_llm.complete(prompts.EXTRACT.format(query=state.question, max_entities=p.max_entities),
                                                schema=prompts.Extraction, stage="extract")
                    mentions = [e.name for e in res.entities if e.name.strip()]
                    how = "llm"
                except Exception as exc:  # noqa: BLE001 - any LLM failure falls back, and says so
                    self.note(fallback=self.llm_failed(exc))
            if not mentions:
                mentions = noun_chunk_mentions(state.question)
        mentions = mentions[: p.max_entities]
        prefetch_vectors(self.ctx, [state.question] + (mentions if self.ctx.graph.entities else []))
        state.entities = [le for le in (self.link(m) for m in mentions) if le.entity_ids]
        self.note(mentions=mentions, mention_source=how,
                  linked=[le.to_dict() for le in state.entities],
                  outputs={"entities": [[e, self.ctx.graph.entities[e].name] for e in state.entity_ids]})
        return state

    # -- linking -----------------------------------------------------------------------
    def _name_index(self) -> dict[str, list[str]]:
        if self.ctx.views.entity_names is None:
            idx: dict[str, list[str]] = {}
            for eid, e in self.ctx.graph.entities.items():
                for nm in [e.name, *e.aliases]:
                    idx.setdefault(_norm(nm), []).append(eid)
            self.ctx.views.entity_names = idx
        return self.ctx.views.entity_names

    def link(self, mention: str) -> LinkedEntity:
        """`mention` linked to G (see `_link`); kept per document and parameters, a copy returned."""
        p = self.params
        key = (mention, p.links_per_mention, p.min_fuzzy, p.min_similarity)
        cache = self.ctx.views.links
        le = cache.get(key)
        if le is None:
            le = cache[key] = self._link(mention)
            while len(cache) > LINK_CACHE:
                cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        return LinkedEntity(mention=le.mention, entity_ids=list(le.entity_ids), scores=list(le.scores), how=le.how)

    def _link(self, mention: str) -> LinkedEntity:
        """By exact name or alias, a name inside the mention, a fuzzy name, or the embedding."""
        graph = self.ctx.graph
        le = LinkedEntity(mention=mention)
        if not graph.entities:
            return le
        idx = self._name_index()
        m = _norm(mention)
        if m in idx:
            hits = idx[m][: self.params.links_per_mention]
            le.entity_ids, le.scores, le.how = hits, [1.0] * len(hits), "name"
            return le
        words = m.split()
        for size in range(len(words) - 1, 0, -1):  # "default linewidth" → "linewidth"
            for start in range(len(words) - size + 1):
                sub = " ".join(words[start:start + size])
                if sub in idx and sub not in _GENERIC and len(sub) > 2:
                    hits = idx[sub][: self.params.links_per_mention]
                    score = size / len(words)
                    le.entity_ids, le.scores, le.how = hits, [score] * len(hits), f"name:{sub}"
                    return le
        # fuzzy name/alias match (typos, plural, word order)
        best: list[tuple[float, str]] = []
        if self.ctx.views.entity_name_lengths is None:
            names = list(idx)
            self.ctx.views.entity_name_lengths = names, np.fromiter(map(len, names), dtype=np.int64, count=len(names))
        names, lengths = self.ctx.views.entity_name_lengths
        near = [names[i] for i in np.flatnonzero(np.abs(lengths - len(m)) <= max(4, len(m) // 2))]
        # one batched call: scoring names one by one was most of a question's linking time
        for nm, s, _ in process.extract(m, near, scorer=fuzz.token_sort_ratio,
                                        score_cutoff=self.params.min_fuzzy, limit=None):
            best.extend((s / 100.0, e) for e in idx[nm])
        if best:
            best.sort(key=lambda t: (-t[0], t[1]))
            best = best[: self.params.links_per_mention]
            le.entity_ids, le.scores, le.how = [e for _, e in best], [s for s, _ in best], "fuzzy"
            return le
        ids, mat = self.ctx.entity_matrix()
        if mat is not None and len(ids):
            qv = query_vector(self.ctx, mention)
            if qv is not None:
                sims = mat @ qv
                order = np.argsort(-sims)[: self.params.links_per_mention]
                keep = [(ids[i], float(sims[i])) for i in order if sims[i] >= self.params.min_similarity]
                if keep:
                    le.entity_ids, le.scores, le.how = [k for k, _ in keep], [s for _, s in keep], "embedding"
        return le


_SPLIT = re.compile(r"\s*(?:\bcompared (?:to|with)\b|\bversus\b|\bvs\.?\s|,?\s+\band\b\s+|,?\s+\bor\b\s+|;\s*)\s*", re.I)


def split_question(question: str) -> tuple[list[str], str]:
    """No-LLM decomposition: split on comparisons and conjunctions, keep the question frame.

    A part that is a question or a clause of its own is asked as it is; a bare noun phrase stands
    for its parallel in the first part (`_in_place_of`): "How much lower is the accuracy of GPT-4
    on SituatedQA compared to MMLU Chemistry?" → "... accuracy of GPT-4 on SituatedQA?", "...
    accuracy of GPT-4 on MMLU Chemistry?". Questions joined in one are split where spaCy's parse
    joins them (`coordinated_questions`), not at every "and". The original question is the
    synthesis step.
    """
    joined = coordinated_questions(question)
    if joined:
        return list(joined), question
    q = question.strip().rstrip("?").strip()
    parts = [p.strip(" ,") for p in _SPLIT.split(q) if p and p.strip(" ,")]
    if len(parts) < 2:
        return [question], question
    nlp = english_if_installed()
    if nlp is None:
        return _split_by_frame(question), question
    first = nlp(_COMPARISON.sub("", parts[0]))  # each part is looked up alone: "What is the png terminal?"
    whole = None  # the whole question parsed, for a bare part only
    subs = [first.text + "?"]
    for part in parts[1:4]:
        doc = nlp(part)
        if _ASKS.match(part) or any(t.pos_ in ("VERB", "AUX") for t in doc):
            subs.append(part + "?")
        else:
            whole = whole if whole is not None else nlp(q)
            subs.append(_in_place_of(first, doc, _conjunct_in_place(first, whole, q.find(part), part)) + "?")
    return subs, question


def _conjunct_in_place(first: Any, whole: Any, at: int, part: str) -> str | None:
    """The first part with the conjunct `part`, at character `at` of the whole question, in
    place of the word it is coordinated with, as spaCy parses the whole question: "... who
    self-identify as Hispanic or Non-Hispanic" → "... who self-identify as Non-Hispanic" (the
    parallel of a bare part is the word the parser attaches it to, not a noun chunk that merely
    comes last). None where the parser sees no coordination there, or its head lies outside the
    first part."""
    start = next((t for t in whole if t.idx == at), None)
    if start is None:
        return None
    conj = next((t for t in [start, *start.ancestors] if t.dep_ == "conj" and t.left_edge.i == start.i), None)
    if conj is None or conj.head.idx + len(conj.head) > len(first.text) or first.text[:conj.head.idx] != whole.text[:conj.head.idx]:
        return None
    head = conj.head
    end = max([head.i, *(c.right_edge.i for c in head.rights if c.i < conj.i and c.dep_ not in ("cc", "punct"))])
    stop = whole[end].idx + len(whole[end])
    return f"{first.text[:head.left_edge.idx if head.left_edge.i < head.i and _same_phrase(head) else head.idx]}" \
           f"{part}{first.text[stop:]}".strip()


def _same_phrase(head: Any) -> bool:
    """Whether the words before `head` in its phrase are its modifiers (a noun phrase replaced
    whole) rather than a preposition's frame."""
    return head.pos_ in ("NOUN", "PROPN") and all(t.dep_ in ("compound", "amod", "det", "nummod", "poss")
                                                   for t in head.lefts)


_COMPARISON = re.compile(r"\b(?:the\s+)?(?:differences?|comparison)\s+(?:between|of|in)\s+", re.I)


_ASKS = re.compile(r"^(what|which|who|whom|whose|how|when|where|why|is|are|was|were|does|do|did|can)\b", re.I)


def _in_place_of(first: Any, part: Any, conjunct: str | None = None) -> str:
    """The first part with `part` (a noun phrase, both parsed by spaCy) in place of its parallel:
    from the noun chunk whose head noun is the part's ("the width of thin lines" / "the width of
    thick lines"), else the word the parser coordinates it with (`conjunct`), else the first
    part's last noun chunk ("... on SituatedQA" / "MMLU Chemistry")."""
    head = next((c.root.lemma_.lower() for c in part.noun_chunks), part[-1].lemma_.lower())
    same = next((t for t in first if t.lemma_.lower() == head and t.pos_ in ("NOUN", "PROPN")), None)
    if same is None and conjunct is not None:
        return conjunct
    if same is not None:
        start = same.left_edge.idx
    else:
        chunks = list(first.noun_chunks)
        if not chunks:
            return f"{first.text} {part.text}"
        start = chunks[-1].start_char
    return f"{first.text[:start]}{part.text}".strip()


def _split_by_frame(question: str) -> list[str]:
    """Without spaCy: the question's frame ("What is the difference between") taken off and
    "What is" (or the frame's start) put before each part."""
    q = question.strip().rstrip("?").strip()
    m = re.match(r"^(?P<head>.*?\b(?:difference|differ|compare|comparison|between|greater|higher|lower|larger|smaller"
                 r"|more|less)\b.*?\b(?:between|of|than|in)\b)\s+(?P<rest>.+)$", q, re.I)
    head, rest = ("", q)
    if m:
        head, rest = m.group("head"), m.group("rest")
    parts = [p.strip(" ,") for p in _SPLIT.split(rest) if p and p.strip(" ,")]
    if len(parts) < 2:
        return [question]
    frame = re.sub(r"\b(?:the )?(?:difference|differ|compare|comparison)\b.*$", "", head, flags=re.I).strip()
    if not frame or len(frame.split()) < 2:
        frame = "What is"
    return [part + "?" if _ASKS.match(part) else f"{frame} {part}?" for part in parts[:4]]


class DecomposeParams(Params):
    use_llm: bool = True
    max_sub_questions: int = 4
    sub_questions: list[str] | None = None  # precomputed (planner or an edited plan)
    synthesis: str | None = None


class Decompose(Operator[DecomposeParams]):
    """Eq. (2): Q_s = LLM(P_Dec, q) — independent retrieval sub-questions plus one synthesis step.
    Without an LLM (or when it fails) the question is split on comparisons and conjunctions."""

    name = "Decompose"
    kind = "formulator"

    Params = DecomposeParams

    def apply(self, state: State) -> State:
        p = self.params
        if p.sub_questions:
            subs, synth, how = list(p.sub_questions), p.synthesis or state.question, "given"
        else:
            subs, synth, how = decompose(self.ctx, state.question, p.use_llm, self)
        state.sub_questions = subs[: p.max_sub_questions]
        state.synthesis = synth
        self.note(sub_questions=state.sub_questions, synthesis=synth, source=how)
        return state


def decompose(ctx: IndexContext, question: str, use_llm: bool = True, op: Operator | None = None) -> tuple[list[str], str, str]:
    """Shared by the operator and the planner (which fills the sub-questions into the plan)."""
    if use_llm and ctx.llm_available:
        try:
            res = ctx.active_llm.complete(prompts.DECOMPOSE.format(query=question), schema=prompts.Decomposition,
                                   stage="decompose")
            subs = [s.question for s in res.sub_questions if s.type == "retrieval" and s.question.strip()]
            synth = next((s.question for s in res.sub_questions if s.type == "synthesis"), question)
            if subs:
                return subs, synth, "llm"
        except Exception as exc:  # noqa: BLE001
            if op is not None:
                op.note(fallback=Operator.llm_failed(exc))
    subs, synth = split_question(question)
    return subs, synth, "rules"
