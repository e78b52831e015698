"""`bookindex skills ask DIR "question"`: navigate a compiled skill folder (Corpus2Skill).

`--navigator llm` (default) lets the configured LLM walk the tree and answer citing the
documents it read; `--navigator embedding` needs no LLM and ranks documents by beam search.
On a library hierarchy (`skills build LIB --documents`) the LLM navigator also gets the document
tools search_document, get_node and get_pages, over the library given with `-i LIB` or, without
it, the one the hierarchy was built from.
`--explain` prints the path taken, `--json` the whole `SkillsAnswer` (steps and usage).
`ask_command` is mounted by the `skills` command group (`bookindex.cli.skills`) beside
build/add/remove/tree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from bookindex.cli.context import engine_for, get_settings
from bookindex.cli.output import make_console
from bookindex.core.errors import InputError
from bookindex.engine import Engine
from bookindex.skills.model import is_hierarchy, load_hierarchy
from bookindex.skills.navigator.answer import SkillsAnswer, SkillsAskRequest


def render(ans: SkillsAnswer, explain: bool) -> list[str]:
    """The lines a person reads: the answer (or ranked documents), citations, the path."""
    out: list[str] = []
    if ans.navigator == "llm":
        out.append(ans.answer or f"(no answer: {ans.stopped})")
        if ans.cited:
            out.append("sources: " + ", ".join(f"{d} ({_title(ans, d)})" for d in ans.cited))
        for c in ans.cited_nodes:
            out.append(f"  [{c.node_id}] p.{c.page}  {_title(ans, c.doc_id)}")
        reached = [d for d in ans.documents if d.via == "listed"][:5]
        if not ans.answer and reached:  # out of rounds: where it had got to
            out.append("listed in the leaves it opened (not read):")
            out.extend(f"  {d.doc_id}  {d.title}  [{d.path}]" for d in reached)
    else:
        for i, d in enumerate(ans.documents, start=1):
            out.append(f"{i:>2}. {d.doc_id}  {d.score:.3f}  {d.title}  [{d.path}]")
    u = ans.usage
    out.append(f"[{ans.navigator}: {u.rounds} rounds, {u.documents_fetched} documents read, "
               + (f"{u.documents_listed} more listed, " if u.documents_listed else "")
               + (f"{u.trimmed} old results cut to fit, " if u.trimmed else "")
               + f"{u.navigation_tokens} navigation + {u.document_tokens} document tokens"
               + (f", {u.llm_calls} LLM calls, {u.prompt_tokens} prompt tokens" if u.llm_calls else "")
               + f", {u.seconds:.1f} s]")
    if explain:
        out.append("path:")
        out.extend("  " + line for line in ans.path())
        out.extend(f"  note: {n}" for n in ans.notes)
    return out


def _built_from(folder: Path) -> Path | None:
    """The library a hierarchy's documents were read from, when they share one that still exists."""
    if not is_hierarchy(folder):
        return None
    libraries = {d.library for d in load_hierarchy(folder).documents.values()}
    if len(libraries) != 1:
        return None
    lib = Path(libraries.pop())
    return lib if Engine(lib).exists() else None


def _title(ans: SkillsAnswer, doc_id: str) -> str:
    return next((d.title for d in ans.documents if d.doc_id == doc_id), "")


def ask_command(
    ctx: typer.Context,
    folder: Path = typer.Argument(..., metavar="DIR", help="A skill folder built by `bookindex skills build`."),
    question: str = typer.Argument(..., help="The question."),
    navigator: str = typer.Option("llm", "--navigator", help="llm (the agent answers) or embedding (no LLM)."),
    explain: bool = typer.Option(False, "--explain", help="Print the navigation path."),
    as_json: bool = typer.Option(False, "--json", help="Print the SkillsAnswer as JSON (with the trace)."),
    k: int = typer.Option(10, "--k", min=1, help="Documents the embedding navigator returns."),
    beam: int = typer.Option(0, "--beam", min=0, help="Beam width of the embedding navigator (0: auto from k)."),
    max_rounds: int = typer.Option(10, "--max-rounds", min=1, help="Tool calls the LLM navigator may make."),
    protocol: str = typer.Option("auto", "--protocol", help="auto, tools (native tool calls) or json (JSON actions)."),
    guided: bool = typer.Option(True, "--guided/--unguided",
                                help="LLM navigator: offer skills, groups and documents nearest the question first "
                                     "(by embedding similarity); --unguided is the paper's agent."),
    index: Optional[Path] = typer.Option(None, "-i", "--index",
                                         help="A library hierarchy's library (default: the one it was built from)."),
) -> None:
    """Ask a question of a skill folder by navigating it."""
    if not question.strip():
        raise InputError('the question is empty: bookindex skills ask DIR "What is ...?"')
    if navigator not in ("llm", "embedding"):
        raise InputError(f"--navigator {navigator!r}: choose llm or embedding")
    if protocol not in ("auto", "tools", "json"):
        raise InputError(f"--protocol {protocol!r}: choose auto, tools or json")
    library = index if index is not None else _built_from(folder) if navigator == "llm" else None
    engine = engine_for(library, ctx) if library is not None else Engine(None, get_settings(ctx))
    req = SkillsAskRequest(folder=str(folder), question=question, navigator=navigator,
                           k=k, beam=beam or None, max_rounds=max_rounds, protocol=protocol,
                           guided=guided)
    ans = engine.skills.ask(req)
    if as_json:
        typer.echo(ans.model_dump_json(indent=1))
        return
    con = make_console()
    for line in render(ans, explain):
        con.print(line, markup=False)

