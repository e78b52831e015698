"""Gradient-based entity resolution (BookRAG §4.3.2, Algorithm 1), incremental.

Each new entity v_n is looked up among the entities already in the graph, one at a time, so
the cost is a top_k lookup per entity instead of all pairs:

1. E_c <- the top_k most similar existing entities (numpy matrix of entity vectors in memory);
2. S <- reranker scores of E_c against v_n (default: embedding cosine, sharpened, see below);
3. sort; Sel <- [E_c[0]]; walk down the list while the drop is *gentle*;
4. every candidate kept (no gradient, Case A) -> v_n is a new entity;
   a sharp drop after one candidate (Case B) -> merge v_n into it;
   a sharp drop after several -> the LLM picks the canonical one (no LLM: the highest score;
   the LLM may also answer "none", then v_n is new, as the paper's adjudication prompt allows).

Reading of the gradient test: the paper writes `S[v_c] > score / g` with g = 0.6, which can never
hold for scores sorted in descending order (score / 0.6 > score). Its evident intent - "keep
v_c while the drop from the previous score is gentle" - is implemented: v_c is kept while
`S[v_c] >= g * previous`, i.e. a fall to below 60 % of the previous score is a sharp drop.

Two practical details the paper leaves open:
- Score calibration. Raw cosine similarities of a small embedding model live in a narrow band
  (near-duplicates ~0.95, unrelated names ~0.3-0.7), so a ratio test on them never sees a sharp
  drop. The default scorer therefore maps cosine c to exp((max(c, floor) - 1) / tau): a ratio
  below g between neighbours then means a cosine gap above tau * ln(1/g) (~0.05), and everything
  below `floor` is equally (flatly) irrelevant. Reranker scores (probabilities) are clamped at
  `rerank_floor` for the same reason: an irrelevant tail must look flat, not steep.
- A guard: names whose numbers differ ("Chapter 1" / "Chapter 2") are never merged.
- Short candidate lists. With fewer than top_k entities in the graph a single near-duplicate
  would be "all candidates kept" (Case A). The list is padded with floor-valued virtual
  candidates, which is what an irrelevant tail would have scored.

`graph.er = exact` merges only equal normalized names (the paper's "Basic" baseline);
`gradient` does that first (equal names are trivially the same entity) and then Algorithm 1 on
the distinct names; `none` merges nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from pydantic import BaseModel

from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import Entity, Relation
from bookindex.core.protocols import LLM, Reranker

MAX_DESCRIPTIONS = 6       # distinct descriptions kept on a merged entity
MAX_DESCRIPTION_CHARS = 1500


# -- Algorithm 1, lines 4-14 on a list of scores --------------------------------------------

def gradient_selection(scores: Sequence[float], g: float) -> int:
    """Length of Sel: how many top candidates survive the walk down sorted `scores`."""
    if not len(scores):
        return 0
    n = 1
    prev = scores[0]
    for s in scores[1:]:
        if s >= g * prev and s > 0:
            n += 1
            prev = s
        else:
            break
    return n


def decide(scores: Sequence[float], g: float) -> tuple[str, int]:
    """Case of Algorithm 1 for descending `scores`: ("new", 0) | ("merge", 1) | ("select", n)."""
    n = gradient_selection(scores, g)
    if n == 0 or n == len(scores):
        return "new", 0
    return ("merge", 1) if n == 1 else ("select", n)


_NUM = re.compile(r"\d+")


def compatible(a: str, b: str) -> bool:
    """Names that differ in their numbers ("Chapter 1" / "Chapter 2", years) are never merged."""
    return sorted(_NUM.findall(a)) == sorted(_NUM.findall(b))


def sharpen_cosine(cos: np.ndarray, floor: float, tau: float) -> np.ndarray:
    """Map cosine similarity to a score whose ratios reflect cosine gaps (see module doc)."""
    return np.exp((np.maximum(cos, floor) - 1.0) / tau)


# -- merging -------------------------------------------------------------------------------

def absorb(keep: Entity, drop: Entity) -> None:
    """Union `drop` into `keep`: descriptions, aliases (incl. its name) and GT-links."""
    descs = [d for d in keep.description.split("\n") if d]
    for d in drop.description.split("\n"):
        if d and d not in descs and len(descs) < MAX_DESCRIPTIONS:
            descs.append(d)
    keep.description = "\n".join(descs)[:MAX_DESCRIPTION_CHARS]
    for a in [drop.name, *drop.aliases]:
        if a != keep.name and a not in keep.aliases:
            keep.aliases.append(a)
    for nid in drop.node_ids:
        if nid not in keep.node_ids:
            keep.node_ids.append(nid)


def merge_entities(graph: KnowledgeGraph, keep_id: str, drop_id: str) -> None:
    """MergeEntity(G, v_n, v_sel): fold `drop_id` into `keep_id`, moving relation ends."""
    if keep_id == drop_id:
        return
    absorb(graph.entities[keep_id], graph.entities.pop(drop_id))
    rewrite_relations(graph, {drop_id: keep_id})


def rewrite_relations(graph: KnowledgeGraph, mapping: dict[str, str]) -> None:
    """Point relation ends at canonical ids; drop self-loops; combine parallel relations."""
    acc: dict[tuple[str, str], Relation] = {}
    for r in graph.relations:
        r.source = mapping.get(r.source, r.source)
        r.target = mapping.get(r.target, r.target)
        if r.source == r.target:
            continue
        key = (r.source, r.target) if r.source < r.target else (r.target, r.source)
        cur = acc.get(key)
        if cur is None:
            acc[key] = r
            continue
        cur.weight += r.weight
        for k in r.keywords:
            if k not in cur.keywords:
                cur.keywords.append(k)
        for nid in r.node_ids:
            if nid not in cur.node_ids:
                cur.node_ids.append(nid)
        if r.description and r.description not in cur.description and cur.description.count("\n") < MAX_DESCRIPTIONS - 1:
            cur.description = (cur.description + "\n" + r.description).strip()
    graph.relations = list(acc.values())
    graph.invalidate()


# -- LLM selection (Algorithm 1, line 13) ----------------------------------------------------

class ERSelection(BaseModel):
    select_id: int
    explanation: str = ""


_SELECT_PROMPT = """You decide whether a newly extracted entity is the same real-world concept as one of
several candidate entities already in a document's knowledge graph.
Rules: names must be near-identical, an abbreviation/expansion, or a well-known alias; parallel but
distinct concepts are NOT the same; types need only be compatible; descriptions may differ because
they come from different parts of the document. Be conservative: a wrong merge corrupts the graph,
a missed one is harmless. If unsure, answer -1.
Answer with JSON only: {{"select_id": <candidate id or -1>, "explanation": "<one sentence>"}}

New entity:
{new}

Candidates:
{cands}"""


def _entity_card(e: Entity) -> str:
    desc = " ".join(e.description.split())[:300]
    return f"name: {e.name}; type: {e.type}; description: {desc}"


def llm_select(llm: LLM, new: Entity, candidates: list[Entity]) -> int:
    """Index of the candidate the LLM picks as canonical, or -1 for "a new entity"."""
    cands = "\n".join(f"id {i}: {_entity_card(c)}" for i, c in enumerate(candidates))
    prompt = _SELECT_PROMPT.format(new=_entity_card(new), cands=cands)
    out = llm.complete([{"role": "user", "content": prompt}], schema=ERSelection, stage="er")
    sel = int(out.select_id)
    return sel if 0 <= sel < len(candidates) else -1


# -- the incremental resolver ------------------------------------------------------------------

@dataclass
class ERStats:
    exact_merges: int = 0
    gradient_merges: int = 0
    llm_selects: int = 0
    llm_rejects: int = 0
    llm_failures: int = 0
    case_a: int = 0
    case_b_single: int = 0
    case_b_several: int = 0
    number_guard: int = 0     # Case B decisions vetoed because the names' numbers differ
    seconds: float = 0.0
    samples: list[dict[str, Any]] = field(default_factory=list)  # a few merges, for inspection

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


ScoreFn = Callable[[Entity, list[Entity], np.ndarray], np.ndarray]
SelectFn = Callable[[Entity, list[Entity]], int]


class GradientResolver:
    """Algorithm 1 over a stream of entities, with the entity vectors in a numpy matrix.

    `score_fn(new, candidates, cosines) -> scores` replaces the default sharpened cosine (a
    reranker); `select_fn(new, candidates) -> index | -1` replaces the default highest-score pick
    (the LLM). Every processed entity adds a row (its own vector) owned by its canonical entity,
    which is the paper's DB update: later aliases of a merged name find the canonical entity.
    """

    def __init__(self, dim: int, *, g: float = 0.6, top_k: int = 10, floor: float = 0.8,
                 tau: float = 0.1, score_fn: ScoreFn | None = None,
                 select_fn: SelectFn | None = None, capacity: int = 1024,
                 stats: ERStats | None = None, pad_score: float | None = None) -> None:
        self.g, self.top_k, self.floor, self.tau = g, top_k, floor, tau
        # what an irrelevant candidate scores; pads short candidate lists (None: no padding)
        self.pad_score = pad_score if score_fn is not None else \
            float(sharpen_cosine(np.array([floor]), floor, tau)[0])
        self.score_fn, self.select_fn = score_fn, select_fn
        self._mat = np.zeros((capacity, dim), dtype=np.float32)
        self._owner: list[str] = []
        self.entities: dict[str, Entity] = {}
        self.stats = stats or ERStats()

    def _add_row(self, vec: np.ndarray, owner: str) -> None:
        n = len(self._owner)
        if n == len(self._mat):
            self._mat = np.concatenate([self._mat, np.zeros_like(self._mat)])
        self._mat[n] = vec
        self._owner.append(owner)

    def candidates(self, vec: np.ndarray, sims: np.ndarray | None = None) -> tuple[list[str], np.ndarray]:
        """Top_k distinct existing entities by cosine (Algorithm 1, line 1)."""
        n = len(self._owner)
        if n == 0:
            return [], np.zeros(0, dtype=np.float32)
        if sims is None:
            sims = self._mat[:n] @ vec
        m = min(n, self.top_k * 4)
        idx = np.argpartition(-sims, m - 1)[:m] if m < n else np.arange(n)
        idx = idx[np.argsort(-sims[idx], kind="stable")]
        ids: list[str] = []
        cos: list[float] = []
        for i in idx:
            o = self._owner[i]
            if o not in ids:
                ids.append(o)
                cos.append(float(sims[i]))
                if len(ids) == self.top_k:
                    break
        return ids, np.asarray(cos, dtype=np.float32)

    def resolve(self, ent: Entity, vec: np.ndarray, sims: np.ndarray | None = None) -> str:
        """Add `ent` (Case A) or merge it into an existing entity (Case B); return the canonical id."""
        cand_ids, cos = self.candidates(vec, sims)
        target = self._decide(ent, cand_ids, cos)
        if target is None:
            self.entities[ent.id] = ent
            self._add_row(vec, ent.id)
            return ent.id
        keep = self.entities[target]
        if len(self.stats.samples) < 50:
            self.stats.samples.append({"merged": ent.name, "into": keep.name})
        absorb(keep, ent)
        self.stats.gradient_merges += 1
        self._add_row(vec, target)
        return target

    def _decide(self, ent: Entity, cand_ids: list[str], cos: np.ndarray) -> str | None:
        target = self._algorithm1(ent, cand_ids, cos)
        if target is not None and not compatible(ent.name, self.entities[target].name):
            self.stats.number_guard += 1
            return None
        return target

    def _algorithm1(self, ent: Entity, cand_ids: list[str], cos: np.ndarray) -> str | None:
        if not cand_ids:
            return None
        cands = [self.entities[c] for c in cand_ids]
        if self.score_fn is None:
            scores = sharpen_cosine(cos, self.floor, self.tau)
        else:
            scores = np.asarray(self.score_fn(ent, cands, cos), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")
        scores = scores[order]
        cands = [cands[i] for i in order]
        pad = self.top_k - len(scores) if self.pad_score is not None else 0
        padded = np.concatenate([scores, np.full(max(pad, 0), self.pad_score or 0.0)])
        case, n_sel = decide(list(padded), self.g)
        if case == "new":
            self.stats.case_a += 1
            return None
        if case == "merge" or n_sel == 1:
            self.stats.case_b_single += 1
            return cands[0].id
        self.stats.case_b_several += 1
        sel = cands[:n_sel]
        if self.select_fn is None:
            return sel[0].id
        try:
            i = self.select_fn(ent, sel)
        except Exception:  # an LLM failure must not abort the build: fall back to the top score
            self.stats.llm_failures += 1
            return sel[0].id
        self.stats.llm_selects += 1
        if i < 0:
            self.stats.llm_rejects += 1
            return None
        return sel[i].id

    def resolve_all(self, ents: list[Entity], vecs: np.ndarray, block: int = 512) -> list[str]:
        """Resolve a stream in order; similarities are computed block-wise with one matmul.

        Equivalent to calling `resolve` one entity at a time: every entity adds exactly one row,
        so the rows are the earlier entities' vectors whatever was decided for them.
        """
        out: list[str] = []
        base = len(self._owner)
        for a in range(0, len(ents), block):
            b = min(a + block, len(ents))
            if base + b > len(self._mat):
                grow = max(len(self._mat), base + b)
                self._mat = np.concatenate([self._mat, np.zeros((grow, self._mat.shape[1]), np.float32)])
            self._mat[base + a:base + b] = vecs[a:b]  # provisional rows, owners appended below
            sims_block = vecs[a:b] @ self._mat[:base + b].T
            for r in range(b - a):
                i = a + r
                n = base + i  # rows available to entity i
                sims = sims_block[r, :n]
                cand_ids, cos = self.candidates(vecs[i], sims) if n else ([], np.zeros(0))
                target = self._decide(ents[i], cand_ids, cos)
                if target is None:
                    self.entities[ents[i].id] = ents[i]
                    self._owner.append(ents[i].id)
                    out.append(ents[i].id)
                else:
                    keep = self.entities[target]
                    if len(self.stats.samples) < 50:
                        self.stats.samples.append({"merged": ents[i].name, "into": keep.name})
                    absorb(keep, ents[i])
                    self.stats.gradient_merges += 1
                    self._owner.append(target)
                    out.append(target)
        return out


RERANK_FLOOR = 0.05


def reranker_score_fn(reranker: Reranker, floor: float = RERANK_FLOOR) -> ScoreFn:
    """Scores from a configured reranker, squashed to (0, 1) and clamped at `floor`."""
    def score(new: Entity, cands: list[Entity], cos: np.ndarray) -> np.ndarray:
        raw = np.asarray(reranker.score(_entity_card(new), [_entity_card(c) for c in cands]), dtype=np.float64)
        if raw.size and (raw.min() < 0 or raw.max() > 1):
            raw = 1.0 / (1.0 + np.exp(-raw))
        return np.maximum(raw, floor)
    return score


def llm_select_fn(llm: LLM) -> SelectFn:
    return lambda new, cands: llm_select(llm, new, cands)


__all__ = [
    "ERSelection", "ERStats", "GradientResolver", "absorb", "decide", "gradient_selection",
    "llm_select", "llm_select_fn", "merge_entities", "reranker_score_fn", "rewrite_relations",
    "sharpen_cosine",
]

