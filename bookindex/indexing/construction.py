"""The BookIndex construction pipeline for one document: parse → tree T → node vectors → graph G.

Everything is written into `doc_dir` (files as bookindex.indexing.document_folder names them),
which the library creates as a staging folder and commits only when this returns, so a failure
at any stage leaves the library untouched.
Stages report through an optional `on_event(event, info)` callback (the CLI draws progress bars
from it); the per-stage timings and the LLM ledger go to build.json.
"""

from __future__ import annotations

import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bookindex.core.errors import BookIndexError, InputError
from bookindex.core.events import Events
from bookindex.core.model import DocumentTree, node_text
from bookindex.indexing.document_folder import (
    images_dir,
    load_build_report,
    load_entity_vectors,
    load_graph,
    load_tree,
    parser_work_dir,
    save_graph,
    tree_digest,
    write_build_report,
    write_lexical_index,
    write_node_vectors,
    write_tree,
)
from bookindex.indexing.graph.build import build_graph, extraction_nodes, update_graph
from bookindex.indexing.stored_statements import write_statements
from bookindex.parsing.dispatch import parse_file, to_tree
from bookindex.parsing.identity import identify
from bookindex.providers.embedding_batches import encode_distinct, memo_for


def _noop(event: str, info: dict[str, Any]) -> None:
    return None


def node_texts(tree: DocumentTree) -> tuple[list[str], list[str]]:
    """(node ids, texts) of every non-document node with text to embed (`node_text`, "vector")."""
    pairs = [(n.id, node_text(tree, n)) for n in tree.walk() if n.type != "document"]
    return [i for i, t in pairs if t], [t for _, t in pairs if t]


def embed_nodes(tree: DocumentTree, embedder: Any, doc_dir: Path, on_event: Events = _noop,
                vectors_backend: str = "npz") -> dict[str, Any]:
    """Encode node texts in batches and store them in doc_dir: node_vectors.npz, or with
    `vectors_backend` "lancedb" the LanceDB table vectors.lance/nodes."""
    ids, texts = node_texts(tree)
    on_event("embed_start", {"total": len(texts)})
    t0 = time.perf_counter()
    # Each distinct text once (running heads, repeated rows; short ones across the documents
    # this process builds), in batches of similar length.
    vecs = encode_distinct(embedder, texts, memo=memo_for(embedder),
                           on_batch=lambda n: on_event("embed_advance", {"n": n}))
    dim = int(vecs.shape[1])
    write_node_vectors(doc_dir, tree, ids, vecs, vectors_backend)
    secs = time.perf_counter() - t0
    on_event("embed_done", {"n": len(ids), "seconds": secs})
    return {"nodes": len(ids), "dim": dim, "seconds": round(secs, 3),
            "model": getattr(embedder, "model_name", None) or getattr(embedder, "name", None)}


def _relativize_images(tree: DocumentTree, doc_dir: Path) -> None:
    """Image paths inside the (temporary) doc dir become relative, so the rename keeps them valid."""
    root = doc_dir.resolve()
    for n in tree.nodes.values():
        p = n.meta.get("image_path")
        if isinstance(p, str) and p:
            try:
                n.meta["image_path"] = Path(p).resolve().relative_to(root).as_posix()
            except ValueError:
                pass


def build_document(path: Path, doc_dir: Path, *, doc_id: str, name: str, settings: Any, llm: Any = None,
                   embedder: Any = None, reranker: Any = None, on_event: Events = _noop,
                   progress: bool = False) -> dict[str, Any]:
    """Run every stage for one file into `doc_dir`; return the build report (also build.json)."""
    timings: dict[str, float] = {}
    report: dict[str, Any] = {"doc_id": doc_id, "name": name, "source": str(path)}
    t0 = time.perf_counter()
    on_event("parse_start", {"name": name})
    try:
        parsed = parse_file(path, settings, llm=llm, image_dir=images_dir(doc_dir), progress=progress,
                            work_dir=parser_work_dir(doc_dir))
    except BookIndexError:
        raise
    except MemoryError:
        raise InputError(f"{path}: out of memory while parsing") from None
    except Exception as e:  # parsers' library errors (corrupt files): name the file and the cause
        raise InputError(f"{path}: cannot parse ({type(e).__name__}: {e})") from None
    timings["parse_s"] = time.perf_counter() - t0
    if parsed.page_count == 0 or not parsed.blocks:
        raise InputError(f"{path}: no content found ({parsed.page_count} pages, 0 blocks)")
    on_event("parsed", {"pages": parsed.page_count, "blocks": len(parsed.blocks), "seconds": timings["parse_s"],
                        "warnings": list(parsed.warnings)})
    report["identity"] = identify(parsed.blocks).to_dict()

    t1 = time.perf_counter()
    tree = to_tree(parsed, doc_id, name, settings, llm)
    _relativize_images(tree, doc_dir)
    timings["tree_s"] = time.perf_counter() - t1
    write_tree(doc_dir, tree)
    write_lexical_index(doc_dir, tree)
    write_statements(doc_dir, tree, tree_digest(doc_dir))
    on_event("tree", {"nodes": len(tree), "sections": len(tree.sections())})
    shutil_rm(parser_work_dir(doc_dir))

    if embedder is not None:
        report["embedding"] = embed_nodes(tree, embedder, doc_dir, on_event, settings.storage.vectors)
        timings["embed_s"] = report["embedding"]["seconds"]

    report["graph"] = {"built": False}
    if settings.graph.enabled:
        t2 = time.perf_counter()
        todo = extraction_nodes(tree)
        on_event("graph_start", {"nodes": len(todo)})
        graph, graph_report = build_graph(tree, settings=settings, llm=llm, embedder=embedder,
                                          reranker=reranker, progress=progress, nodes=todo,
                                          on_done=lambda n: on_event("graph_advance", {"n": n}))
        save_graph(graph, doc_dir, embedder=embedder, vectors_backend=settings.storage.vectors)
        timings["graph_s"] = time.perf_counter() - t2
        report["graph"] = {"built": True, **graph_report}
        on_event("graph_done", {"seconds": timings["graph_s"]})

    pages = parsed.page_count
    report.update({
        "pages": pages, "blocks": len(parsed.blocks), "nodes": len(tree),
        "sections": len(tree.sections()), "parser": parsed.parser,
        "warnings": list(parsed.warnings),
        "timings": {k: round(v, 3) for k, v in timings.items()},
        "pages_per_s": round(pages / timings["parse_s"], 2) if timings["parse_s"] > 0 else None,
    })
    if llm is not None and hasattr(llm, "ledger"):
        try:
            report["llm"] = llm.ledger.snapshot()
        except Exception:  # a ledger problem must not fail an otherwise finished build
            report["llm"] = None
    write_build_report(doc_dir, report)
    return report


def retry_graph_nodes(doc_dir: Path, node_ids: list[str], *, settings: Any, llm: Any = None,
                      embedder: Any = None, reranker: Any = None, on_event: Events = _noop,
                      progress: bool = False) -> dict[str, Any]:
    """Re-extract the failed graph nodes of a stored build in `doc_dir` (a private copy the
    library renames into place afterwards): update the graph and build.json; return the outcome.

    Only `node_ids` go to the extractor; their new entities are resolved against the stored
    graph with the stored entity vectors (bookindex.indexing.graph.build.update_graph).
    """
    t0 = time.perf_counter()
    tree = load_tree(doc_dir)
    graph = load_graph(doc_dir)
    ids, mat = load_entity_vectors(doc_dir)
    on_event("graph_retry_start", {"nodes": len(node_ids)})
    rep = update_graph(graph, tree, list(node_ids), settings=settings, llm=llm, embedder=embedder,
                       reranker=reranker, vectors=(ids, mat) if ids else None, progress=progress,
                       on_done=lambda n: on_event("graph_advance", {"n": n}))
    save_graph(graph, doc_dir, embedder=embedder, vectors_backend=settings.storage.vectors)
    still = [i for i in rep["failed_node_ids"]]
    outcome = {
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "nodes": len(node_ids), "recovered": len(node_ids) - len(still), "still_failed": len(still),
        "llm_calls": rep.get("llm_calls", 0), "er_merges": rep.get("er_merges", 0),
        "entities": len(graph.entities), "relations": len(graph.relations),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    report = load_build_report(doc_dir)
    g = report.setdefault("graph", {"built": True})
    failures = {k: v for k, v in (g.get("failures") or {}).items() if k not in set(node_ids)}
    failures.update(rep.get("failures") or {})
    g.update({"nodes_failed": len(still), "failed_node_ids": sorted(still), "failures": failures,
              "entities": len(graph.entities), "relations": len(graph.relations)})
    g.setdefault("retries", []).append(outcome)
    if llm is not None and hasattr(llm, "ledger"):
        try:
            outcome["llm"] = llm.ledger.snapshot()
        except Exception:  # accounting must not fail a finished retry
            outcome["llm"] = None
    write_build_report(doc_dir, report)
    on_event("graph_retry_done", outcome)
    return outcome


def shutil_rm(p: Path) -> None:
    if p.exists():
        shutil.rmtree(p, ignore_errors=True)
