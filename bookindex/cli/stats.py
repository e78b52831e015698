"""`bookindex stats DIR [--doc DOC] [--json]`: tree and knowledge-graph statistics of a library.

Per document: nodes by type, entities, relations, density, connected components, diameter of
the largest component (approximate on big graphs), entity-resolution merges, failed extraction
nodes, and the build's LLM ledger (from build.json). Without --doc, a library total is printed
first (disjoint graphs: counts add up, density from the totals, the largest diameter).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from bookindex.errors import InputError


def doc_stats(doc: Any) -> dict[str, Any]:
    """Statistics of one StoredDocument (needs .doc_id, .name, .dir, .tree, .graph)."""
    from bookindex.graph.stats import graph_stats, tree_stats

    build: dict[str, Any] = {}
    bpath = Path(doc.dir) / "build.json"
    if bpath.is_file():
        try:
            build = json.loads(bpath.read_text(encoding="utf-8"))
        except ValueError:
            build = {}
    g = build.get("graph") or {}
    gs = graph_stats(doc.graph)
    return {
        "doc_id": doc.doc_id, "name": doc.name, "pages": build.get("pages", doc.manifest.get("pages") if hasattr(doc, "manifest") else None),
        "nodes": tree_stats(doc.tree),
        "entities": gs["entities"], "relations": gs["relations"], "edges": gs["edges"],
        "density": gs["density"], "components": gs["components"], "lcc_size": gs["lcc_size"],
        "lcc_diameter": gs["lcc_diameter"], "entity_types": gs["entity_types"],
        "er": g.get("er"), "er_merges": g.get("er_merges", 0), "er_stats": g.get("er_stats"),
        "extractor": g.get("extractor"), "graph_built": bool(g.get("built", doc.graph.entities)),
        "nodes_failed": g.get("nodes_failed", 0), "failed_node_ids": g.get("failed_node_ids", []),
        "llm": build.get("llm") or g.get("llm"),
    }


def _add_ledgers(ledgers: list[dict[str, Any] | None]) -> dict[str, Any]:
    total: dict[str, float] = {}
    stages: dict[str, dict[str, float]] = {}
    for led in ledgers:
        if not led:
            continue
        for k, v in (led.get("total") or {}).items():
            if isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + v
        for st, vals in (led.get("stages") or {}).items():
            acc = stages.setdefault(st, {})
            for k, v in vals.items():
                if isinstance(v, (int, float)):
                    acc[k] = acc.get(k, 0) + v
    return {"stages": stages, "total": total}


def library_stats(docs: list[dict[str, Any]]) -> dict[str, Any]:
    nodes: dict[str, int] = {}
    for d in docs:
        for k, v in d["nodes"].items():
            nodes[k] = nodes.get(k, 0) + v
    ents = sum(d["entities"] for d in docs)
    edges = sum(d["edges"] for d in docs)
    return {
        "documents": len(docs), "pages": sum(d["pages"] or 0 for d in docs), "nodes": nodes,
        "entities": ents, "relations": sum(d["relations"] for d in docs),
        "density": 2 * edges / (ents * (ents - 1)) if ents > 1 else 0.0,
        "components": sum(d["components"] for d in docs),
        "lcc_diameter": max((d["lcc_diameter"] for d in docs), default=0),
        "er_merges": sum(d["er_merges"] or 0 for d in docs),
        "nodes_failed": sum(d["nodes_failed"] or 0 for d in docs),
        "llm": _add_ledgers([d["llm"] for d in docs]),
    }


def _print(rows: list[tuple[str, dict[str, Any]]]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="bookindex stats")
    cols = ["document", "pages", "nodes", "entities", "relations", "density", "components",
            "LCC diam.", "ER merges", "failed", "LLM calls", "LLM tokens"]
    for c in cols:
        t.add_column(c, justify="left" if c == "document" else "right")
    for label, s in rows:
        tot = (s.get("llm") or {}).get("total") or {}
        nodes = s["nodes"]
        t.add_row(label, str(s.get("pages") or ""), f"{sum(nodes.values())}", str(s["entities"]),
                  str(s["relations"]), f"{s['density']:.2e}", str(s["components"]), str(s["lcc_diameter"]),
                  str(s["er_merges"]), str(s.get("nodes_failed", 0)), str(int(tot.get("calls", 0))),
                  str(int(tot.get("prompt_tokens", 0) + tot.get("completion_tokens", 0))))
    import shutil

    console = Console(highlight=False, width=max(140, shutil.get_terminal_size((140, 24)).columns))
    console.print(t)
    for label, s in rows:
        types = ", ".join(f"{k} {v}" for k, v in sorted(s["nodes"].items()))
        console.print(f"{label}: nodes by type: {types}")


def stats_cmd(index_dir: Path = typer.Argument(..., help="Library folder."),
              doc: Optional[str] = typer.Option(None, "--doc", help="Document id or file name (default: all)."),
              as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Tree and knowledge-graph statistics, ER merges and the build's LLM ledger."""
    from bookindex.library import CATALOG, Library

    if not (index_dir / CATALOG).is_file():
        raise InputError(f"{index_dir}: no bookindex library here (index documents with "
                         f"`bookindex index PATH -i {index_dir}`)")
    lib = Library.open(index_dir)
    docs = [lib.get(doc)] if doc else lib.documents
    per = [doc_stats(d) for d in docs]
    if doc:
        out: dict[str, Any] = per[0]
        rows = [(per[0]["name"], per[0])]
    else:
        out = {**library_stats(per), "documents_stats": per}
        rows = [(p["name"], p) for p in per] + ([("ALL", out)] if len(per) > 1 else [])
    if as_json:
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False, default=str))
        return
    if not per:
        typer.echo(f"no documents in {lib.root}")
        return
    _print(rows)


def register(app: typer.Typer) -> None:
    app.command("stats")(stats_cmd)
