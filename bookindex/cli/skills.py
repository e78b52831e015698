"""`bookindex skills build | add | remove | tree | ask`: compile a corpus into a skill folder, keep it
current and navigate it (Corpus2Skill). Each command calls one Engine method and prints its typed
report; `ask` lives in `bookindex.cli.skills_ask`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from bookindex.cli.context import get_settings
from bookindex.cli.output import make_console
from bookindex.cli.skills_ask import ask_command
from bookindex.cli.skills_navigate import navigate_command
from bookindex.engine import (
    Engine,
    SkillsAddRequest,
    SkillsBuildReport,
    SkillsBuildRequest,
    SkillsRemoveRequest,
    SkillsTreeView,
    SkillsUpdateReport,
)
from bookindex.skills.compiler.requests import DEFAULT_DRIFT, SOFT, SOFT_MARGIN, SkillNodeView

skills_app = typer.Typer(no_args_is_help=True, help="Compile a corpus into a navigable skill tree (Corpus2Skill).")
skills_app.command("ask")(ask_command)
skills_app.command("navigate")(navigate_command)


def register(app: typer.Typer) -> None:
    app.add_typer(skills_app, name="skills")


def _engine(ctx: typer.Context) -> Engine:
    return Engine(None, get_settings(ctx))


def _err() -> Console:
    return make_console(stderr=True)


def _echo_json(model: BaseModel) -> None:
    typer.echo(json.dumps(model.model_dump(mode="json"), indent=2, ensure_ascii=False))


@skills_app.command("build")
def build_cmd(
    ctx: typer.Context,
    sources: list[Path] = typer.Argument(..., help="Files (.md .txt .json .jsonl), folders of them, or bookindex libraries."),
    output: Path = typer.Option(..., "-o", "--output", help="Skill folder to write (new, empty, or an existing skill tree)."),
    branching: int = typer.Option(10, "--branching", min=2, help="Branching ratio p: children per cluster."),
    top: int = typer.Option(8, "--top", min=1, help="At most this many top-level skills (K)."),
    min_size: int = typer.Option(3, "--min-size", min=1, help="Smaller leaf clusters merge into the nearest one."),
    compact: bool = typer.Option(False, "--compact", help="List leaf groups inside their parent's file."),
    seed: int = typer.Option(0, "--seed", help="K-Means seed (same corpus + seed: identical files)."),
    embed_chars: int = typer.Option(2000, "--embed-chars", min=100, help="Characters of each document embedded."),
    soft: int = typer.Option(SOFT, "--soft", min=0,
                             help="List a document in up to this many other leaves near it too (0: one leaf only)."),
    soft_margin: float = typer.Option(SOFT_MARGIN, "--soft-margin", min=0.0,
                                      help="... when their centroid is within this cosine of its own leaf's."),
    no_llm: bool = typer.Option(False, "--no-llm", help="Extractive summaries and key-term labels, no LLM."),
    documents: bool = typer.Option(False, "--documents",
                                   help="Sources are libraries: also write each document's section tree as a skill under its topic."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
) -> None:
    """Compile documents into skill-NN-label/SKILL.md and group-NN-label/INDEX.md files."""
    req = SkillsBuildRequest(sources=[str(s) for s in sources], output=str(output), branching=branching, top=top,
                             min_size=min_size, seed=seed, compact=compact, embed_chars=embed_chars, no_llm=no_llm,
                             documents=documents, soft=soft, soft_margin=soft_margin)
    err = _err()

    def on_event(event: str, info: dict[str, Any]) -> None:
        if quiet:
            return
        if event == "loaded":
            err.print(f"  loaded {info['documents']} documents; embedding ...")
        elif event == "documents":
            err.print(f"  document skills: {info['rendered']} rendered, {info['reused']} unchanged")
        elif event == "level":
            err.print(f"  level {info['level']}: {info['items']} items -> {info['clusters']} clusters; summarising ...")

    report = _engine(ctx).skills.build(req, on_event=on_event, progress=not quiet)
    if as_json:
        _echo_json(report)
        return
    _print_build(report)


def _print_build(r: SkillsBuildReport) -> None:
    c = make_console()
    c.print(f"[green]built[/] {escape(r.output)}: {r.documents} documents, {r.clusters} clusters "
            f"({r.leaves} leaves, {r.roots} skills, {r.levels} levels), {r.files} navigation files "
            f"(median {r.median_file_bytes / 1024:.1f} KB), {r.seconds:.1f} s")
    calls = {stage: int(u.get("calls", 0)) for stage, u in r.llm_usage.items()}
    c.print(f"  summaries: {r.summaries} ({'LLM ' + escape(r.llm) if r.llm else 'extractive, no LLM'})"
            + (f"; LLM calls {calls}" if calls else ""))
    if r.documents_rendered or r.documents_reused:
        c.print(f"  document skills: {len(r.documents_rendered)} rendered, {len(r.documents_reused)} unchanged")
    for w in r.warnings[:5]:
        c.print(f"  [yellow]warning:[/] {escape(w)}")


@skills_app.command("add")
def add_cmd(
    ctx: typer.Context,
    folder: Path = typer.Argument(..., help="Skill folder."),
    sources: list[Path] = typer.Argument(..., help="Documents to add (files, folders, libraries)."),
    drift: float = typer.Option(DEFAULT_DRIFT, "--drift", min=0.0,
                                help="Re-summarise a touched cluster when its size moved by more than this fraction (0: always)."),
    no_llm: bool = typer.Option(False, "--no-llm", help="Extractive summaries, no LLM."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Add documents: each goes to the nearest leaf; only touched clusters are re-summarised."""
    report = _engine(ctx).skills.add(SkillsAddRequest(folder=str(folder), sources=[str(s) for s in sources],
                                                      drift=drift, no_llm=no_llm))
    _print_update(report, as_json)


@skills_app.command("remove")
def remove_cmd(
    ctx: typer.Context,
    folder: Path = typer.Argument(..., help="Skill folder."),
    ids: list[str] = typer.Argument(..., help="Document ids to remove."),
    drift: float = typer.Option(DEFAULT_DRIFT, "--drift", min=0.0, help="As for `add`."),
    no_llm: bool = typer.Option(False, "--no-llm", help="Extractive summaries, no LLM."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Remove documents by id; clusters left empty are dropped."""
    report = _engine(ctx).skills.remove(SkillsRemoveRequest(folder=str(folder), ids=list(ids), drift=drift, no_llm=no_llm))
    _print_update(report, as_json)


def _print_update(r: SkillsUpdateReport, as_json: bool) -> None:
    if as_json:
        _echo_json(r)
        return
    c = make_console()
    what = f"added {len(r.added)}" if r.added else f"removed {len(r.removed)}"
    c.print(f"[green]{what}[/] in {escape(r.folder)}: now {r.documents} documents, {r.clusters} clusters; "
            f"{r.touched} clusters touched, {r.summaries} re-summarised, {r.splits} split, "
            f"{r.deleted_clusters} dropped ({r.seconds:.1f} s)")
    for w in r.warnings[:5]:
        c.print(f"  [yellow]warning:[/] {escape(w)}")


@skills_app.command("tree")
def tree_cmd(
    ctx: typer.Context,
    folder: Path = typer.Argument(..., help="Skill folder."),
    depth: int = typer.Option(0, "--depth", min=0, help="Levels to show (0: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print the hierarchy: labels, folders and document counts."""
    view = _engine(ctx).skills.tree(folder)
    if as_json:
        _echo_json(view)
        return
    _print_tree(view, depth)


def _print_tree(view: SkillsTreeView, depth: int) -> None:
    c = make_console()
    c.print(f"{escape(view.folder)}: {view.documents} documents, {view.clusters} clusters")

    def show(n: SkillNodeView, indent: int) -> None:
        if depth and indent >= depth:
            return
        name = n.path.rsplit("/", 1)[-1].split("#")[-1]
        c.print(f"{'  ' * indent}{escape(name)} ({n.num_documents} docs) [dim]L{n.level} {escape(n.description[:90])}[/]")
        for k in n.children:
            show(k, indent + 1)

    for r in view.roots:
        show(r, 1)
