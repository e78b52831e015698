"""Graph construction for one document: extraction per node, entity resolution, GT-links.

`build_graph(tree, settings=..., llm=..., embedder=..., reranker=...)` returns the knowledge
graph G (entities carry their origin tree nodes: the GT-link M) and a report for build.json:
nodes processed, failed node ids, ER merges, timings, and the LLM ledger snapshot.
"""

from __future__ import annotations

import time
from typing import Any, TypeGuard

import numpy as np

from bookindex.core.config import Settings
from bookindex.core.errors import ConfigError
from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import DocumentTree, Entity, Node, Relation
from bookindex.core.protocols import LLM, Embedder, Reranker
from bookindex.indexing.graph.er import (
    RERANK_FLOOR,
    ERStats,
    GradientResolver,
    absorb,
    llm_select_fn,
    reranker_score_fn,
    rewrite_relations,
)
from bookindex.indexing.graph.extract_llm import LLMExtractor
from bookindex.indexing.graph.extract_offline import OfflineExtractor
from bookindex.indexing.graph.extraction import Extractor, NodeExtraction, NodesDone, name_key
from bookindex.providers.embedding_batches import encode_distinct, memo_for
from bookindex.providers.llm import get_llm

# Fixed calibration of the sharpened cosine score (not settings: GraphSettings has no such keys;
# they were once read through getattr with these defaults, which always won).
ER_FLOOR = 0.8    # cosine below which candidates count as equally irrelevant (see er.py)
EXACT_ONLY_TYPES = ("identifier",)  # code names: similar-looking ones are different functions
ER_TAU = 0.1      # cosine-gap scale of the sharpened score (a gap > tau*ln(1/g) is "sharp")


def extraction_nodes(tree: DocumentTree) -> list[Node]:
    """Every node with content except the document root, in document order (BookRAG: each n_i)."""
    return [n for n in tree.walk() if n.type != "document" and (n.title or n.text or n.meta.get("caption"))]


def _llm_available(llm: LLM | None) -> TypeGuard[LLM]:
    return llm is not None and llm.available


def choose_extractor(settings: Settings, llm: LLM | None, doc_name: str = "") -> Extractor:
    """auto = the LLM extractor when an LLM is available, else the offline one."""
    mode = settings.graph.extractor
    if mode == "llm" or (mode == "auto" and _llm_available(llm)):
        if not _llm_available(llm):
            raise ConfigError("graph.extractor = llm but no LLM is configured (llm.provider = none)")
        vlm = None
        if settings.vlm.provider != "none":
            vlm = get_llm(settings, section="vlm", ledger=llm.ledger)
        return LLMExtractor(llm, batch_tokens=settings.graph.batch_tokens, doc_name=doc_name, vlm=vlm,
                            concurrency=settings.llm.max_concurrency,
                            merge_tokens=settings.graph.merge_tokens)
    return OfflineExtractor()


def assemble(tree_doc_id: str, extractions: list[NodeExtraction], er: str) -> tuple[KnowledgeGraph, list[Entity], ERStats]:
    """Raw graph from node extractions; equal names merged unless er = none.

    Returns the graph, the entities eligible for gradient ER (non-structural, in first-seen
    order), and the stats (exact merges).
    """
    stats = ERStats()
    entities: dict[str, Entity] = {}
    by_key: dict[str, str] = {}
    eligible: list[Entity] = []
    relations: list[Relation] = []
    counter = 0
    for ex in extractions:
        local: dict[str, str] = {}
        for re_ in ex.entities:
            key = name_key(re_.name)
            if not key:
                continue
            gk = (re_.type + "\x00" + key + "\x00" + ex.node_id) if re_.structural else key
            if er != "none" and gk in by_key:
                e = entities[by_key[gk]]
                if ex.node_id not in e.node_ids:
                    e.node_ids.append(ex.node_id)
                if re_.description and re_.description not in e.description and e.description.count("\n") < 5:
                    e.description = (e.description + "\n" + re_.description).strip()
                stats.exact_merges += 1
                local[key] = e.id
                continue
            eid = f"{tree_doc_id}-e{counter:06d}"
            counter += 1
            e = Entity(id=eid, name=re_.name, type=re_.type, description=re_.description, node_ids=[ex.node_id])
            entities[eid] = e
            by_key[gk] = eid
            local[key] = eid
            if not re_.structural and re_.type not in EXACT_ONLY_TYPES:
                eligible.append(e)
        for r in ex.relations:
            s, t = local.get(name_key(r.source)), local.get(name_key(r.target))
            if s and t and s != t:
                relations.append(Relation(s, t, r.description, list(r.keywords), float(r.weight), [ex.node_id]))
    g = KnowledgeGraph(entities, relations)
    rewrite_relations(g, {})  # combine parallel relations
    return g, eligible, stats


def entity_text(e: Entity) -> str:
    """What the entity vector encodes: its name (descriptions would pull co-mentioned names together)."""
    return e.name


def resolve(graph: KnowledgeGraph, eligible: list[Entity], *, embedder: Embedder, settings: Settings,
            llm: LLM | None = None, reranker: Reranker | None = None, stats: ERStats | None = None,
            progress: bool = False) -> tuple[ERStats, list[str], np.ndarray]:
    """Gradient ER over `eligible` (in order), folding merged entities into their canonical one.

    Returns the stats and the vectors of the surviving eligible entities (ids, matrix).
    """
    stats = stats or ERStats()
    t0 = time.perf_counter()
    if not eligible:
        return stats, [], np.zeros((0, embedder.dim or 0), np.float32)
    # No encoder progress bar: the build's own progress output covers this step.
    # names recur across a library's documents: the memo keeps the last ones this process encoded
    vecs = encode_distinct(embedder, [entity_text(e) for e in eligible], memo=memo_for(embedder))
    use_reranker = reranker is not None and settings.reranker.provider != "embedding"
    resolver = GradientResolver(
        vecs.shape[1], g=settings.graph.er_gradient, top_k=settings.graph.er_top_k,
        floor=ER_FLOOR, tau=ER_TAU,
        score_fn=reranker_score_fn(reranker) if reranker is not None and use_reranker else None,
        select_fn=llm_select_fn(llm) if _llm_available(llm) else None,
        capacity=len(eligible), stats=stats, pad_score=RERANK_FLOOR if use_reranker else None)
    canon = resolver.resolve_all(eligible, vecs)
    mapping = {e.id: c for e, c in zip(eligible, canon) if c != e.id}
    for drop in mapping:
        graph.entities.pop(drop, None)
    rewrite_relations(graph, mapping)
    keep_rows = [i for i, (e, c) in enumerate(zip(eligible, canon)) if c == e.id]
    stats.seconds = time.perf_counter() - t0
    return stats, [eligible[i].id for i in keep_rows], vecs[keep_rows]


def build_graph(tree: DocumentTree, *, settings: Settings, llm: LLM | None = None,
                embedder: Embedder | None = None, reranker: Reranker | None = None, progress: bool = False,
                nodes: list[Node] | None = None,
                on_done: NodesDone | None = None) -> tuple[KnowledgeGraph, dict[str, Any]]:
    """Extract, resolve and link the knowledge graph of `tree` (BookRAG §4.3).

    `nodes` restricts extraction to some nodes (a re-run retrying failed ones); default: all.
    `on_done(n)`: n more nodes extracted (progress; see `Extractor`).
    The embedder is needed for er = gradient only. The returned graph carries the entity
    vectors it computed in `graph.meta["vectors"]` so saving does not encode twice.
    """
    t0 = time.perf_counter()
    extractor = choose_extractor(settings, llm, tree.name)
    todo = nodes if nodes is not None else extraction_nodes(tree)
    extractions = extractor.extract(todo, progress=progress, on_done=on_done)
    extract_s = time.perf_counter() - t0
    graph, report = graph_from_extractions(tree, extractions, settings=settings, llm=llm,
                                           embedder=embedder, reranker=reranker, progress=progress)
    report["extractor"] = extractor.name
    report["nodes_processed"] = len(todo)
    report["retried_node_ids"] = list(extractor.retried)
    report["llm_calls"] = extractor.calls
    report["timings"]["extract_s"] = round(extract_s, 3)
    report["timings"]["total_s"] = round(time.perf_counter() - t0, 3)
    return graph, report


def graph_from_extractions(tree: DocumentTree, extractions: list[NodeExtraction], *, settings: Settings,
                           llm: LLM | None = None, embedder: Embedder | None = None,
                           reranker: Reranker | None = None,
                           progress: bool = False) -> tuple[KnowledgeGraph, dict[str, Any]]:
    """Entity resolution and assembly of already extracted node subgraphs (see build_graph)."""
    timings: dict[str, float] = {}
    er = settings.graph.er
    t1 = time.perf_counter()
    graph, eligible, stats = assemble(tree.doc_id, extractions, er)
    timings["assemble_s"] = round(time.perf_counter() - t1, 3)
    ids: list[str] = []
    vecs = None
    if er == "gradient" and eligible:
        if embedder is None:
            raise ConfigError("graph.er = gradient needs an embedder (or set graph.er = exact)")
        stats, ids, vecs = resolve(graph, eligible, embedder=embedder, settings=settings, llm=llm,
                                   reranker=reranker, stats=stats, progress=progress)
        timings["er_s"] = round(stats.seconds, 3)
    if vecs is not None:
        graph.meta["vectors"] = (ids, vecs)
    for e in graph.entities.values():  # GT-links in document order (node ids sort that way)
        e.node_ids = sorted(set(e.node_ids))

    failed = {ex.node_id: ex.error for ex in extractions if not ex.ok}
    ledger = None
    if llm is not None:
        try:  # a usage report must never fail the build
            ledger = llm.ledger.snapshot()
        except Exception:
            ledger = None
    report: dict[str, Any] = {
        "er": er,
        "nodes_failed": len(failed),
        "failed_node_ids": sorted(failed),
        "failures": failed,
        "entities": len(graph.entities),
        "relations": len(graph.relations),
        "er_merges": stats.exact_merges + stats.gradient_merges if er != "none" else 0,
        "er_stats": {k: v for k, v in stats.to_dict().items() if k != "samples"},
        "er_samples": stats.samples[:20],
        "timings": timings,
        "llm": ledger,
    }
    return graph, report


def update_graph(graph: KnowledgeGraph, tree: DocumentTree, node_ids: list[str], *, settings: Settings,
                 llm: LLM | None = None, embedder: Embedder | None = None, reranker: Reranker | None = None,
                 vectors: tuple[list[str], np.ndarray] | None = None,
                 progress: bool = False, fresh: bool = True, on_done: NodesDone | None = None) -> dict[str, Any]:
    """Re-extract `node_ids` (e.g. the failed nodes of an earlier build) into an existing graph.

    Their previous contributions are removed first (entities left without any node disappear),
    then each new entity is resolved against the graph incrementally: exact name/alias match
    first, then Algorithm 1 against the stored entity vectors (`vectors`, from
    store.load_entity_vectors; encoded with `embedder` when absent). Returns a report like
    build_graph's; the graph is modified in place. `fresh`: the LLM calls bypass the completion
    cache (which would replay the answers that failed), still storing the new ones.
    """
    t0 = time.perf_counter()
    wanted = set(node_ids)
    for e in list(graph.entities.values()):
        if wanted & set(e.node_ids):
            e.node_ids = [n for n in e.node_ids if n not in wanted]
            if not e.node_ids:
                del graph.entities[e.id]
    kept: list[Relation] = []
    for r in graph.relations:
        r.node_ids = [n for n in r.node_ids if n not in wanted]
        if r.node_ids and r.source in graph.entities and r.target in graph.entities:
            kept.append(r)
    graph.relations = kept
    extractor = choose_extractor(settings, llm, tree.name)
    if fresh:
        extractor.fresh = True
    extractions = extractor.extract([tree.nodes[i] for i in node_ids if i in tree.nodes], progress=progress,
                                    on_done=on_done)
    prefix = f"{tree.doc_id}-u{int(time.time() * 1000) % 10**9:09d}"
    new, eligible, stats = assemble(prefix, extractions, settings.graph.er)
    mapping: dict[str, str] = {}
    if settings.graph.er != "none":
        by_key: dict[str, str] = {}
        for e in graph.entities.values():
            if e.type not in ("table", "formula", "image"):
                for n in [e.name, *e.aliases]:
                    by_key.setdefault(name_key(n), e.id)
        for e in new.entities.values():
            hit = by_key.get(name_key(e.name)) if e.type not in ("table", "formula", "image") else None
            if hit:
                mapping[e.id] = hit
                stats.exact_merges += 1
    eligible = [e for e in eligible if e.id not in mapping]
    if settings.graph.er == "gradient" and eligible and embedder is not None:
        ids, mat = vectors if vectors is not None else ([], np.zeros((0, 0), np.float32))
        known = {i: k for k, i in enumerate(ids) if i in graph.entities}
        missing = [i for i in graph.entities if i not in known]
        vecs = np.asarray(embedder.encode([entity_text(e) for e in eligible]), np.float32)
        resolver = GradientResolver(
            vecs.shape[1],
            g=settings.graph.er_gradient, top_k=settings.graph.er_top_k,
            floor=ER_FLOOR, tau=ER_TAU,
            select_fn=llm_select_fn(llm) if _llm_available(llm) else None, stats=stats)
        if missing:
            enc = np.asarray(embedder.encode([graph.entities[i].name for i in missing]), np.float32)
        for i, eid in enumerate(list(known) + missing):
            vec = mat[known[eid]] if eid in known else enc[i - len(known)]
            resolver.entities[eid] = graph.entities[eid]
            resolver._add_row(np.asarray(vec, np.float32), eid)
        for e, v in zip(eligible, vecs):
            c = resolver.resolve(e, v)
            if c != e.id:
                mapping[e.id] = c
    for e in new.entities.values():
        if e.id in mapping:  # absorb is idempotent: entities merged by the resolver are already in
            absorb(graph.entities[mapping[e.id]], e)
        else:
            graph.entities[e.id] = e
    graph.relations.extend(new.relations)
    rewrite_relations(graph, mapping)
    for e in graph.entities.values():
        e.node_ids = sorted(set(e.node_ids))
    graph.meta.pop("vectors", None)  # stale: save_graph re-encodes with the embedder
    failed = {ex.node_id: ex.error for ex in extractions if not ex.ok}
    return {"nodes_processed": len(extractions), "nodes_failed": len(failed), "failed_node_ids": sorted(failed),
            "failures": failed, "er_merges": stats.exact_merges + stats.gradient_merges,
            "llm_calls": getattr(extractor, "calls", 0), "seconds": round(time.perf_counter() - t0, 3)}
