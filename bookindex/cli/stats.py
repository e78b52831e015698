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

from bookindex.cli.context import engine_for
from bookindex.cli.output import make_console


def _print(rows: list[tuple[str, dict[str, Any]]]) -> None:
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
    console = make_console(soft_wrap=False, tty_min_width=140)
    console.print(t)
    for label, s in rows:
        types = ", ".join(f"{k} {v}" for k, v in sorted(s["nodes"].items()))
        console.print(f"{label}: nodes by type: {types}")


def stats_cmd(index_dir: Path = typer.Argument(..., help="Library folder."),
              doc: Optional[str] = typer.Option(None, "--doc", help="Document id or file name (default: all)."),
              as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Tree and knowledge-graph statistics, ER merges and the build's LLM ledger."""
    engine = engine_for(index_dir)
    out = engine.stats(doc)
    per = [out] if doc else out["documents_stats"]
    rows = [(p["name"], p) for p in per] + ([("ALL", out)] if len(per) > 1 and not doc else [])
    if as_json:
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False, default=str))
        return
    if not per:
        typer.echo(f"no documents in {engine.root}")
        return
    _print(rows)


def register(app: typer.Typer) -> None:
    app.command("stats")(stats_cmd)
