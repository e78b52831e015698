"""`bookindex skills navigate DIR "question" -i LIB`: walk a library hierarchy.

The hierarchy (`bookindex skills build LIB --documents -o DIR`) is descended without an LLM:
topics by the embedding beam, the reached documents ranked by the library router, then the best
document's retrieval (`search_document`), the section INDEX.md and the block it leads to.
`--explain` prints every step, `--json` the whole `LibraryAnswer`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from bookindex.cli.context import engine_for
from bookindex.cli.output import make_console
from bookindex.core.errors import InputError
from bookindex.skills.navigator.libnav import LibraryAnswer


def render(ans: LibraryAnswer, explain: bool) -> list[str]:
    out = [f"{i:>2}. {d.doc_id}  {d.score:.4f}  {d.title}  [{d.path}]" for i, d in enumerate(ans.documents[:5], 1)]
    titles = {d.doc_id: d.title for d in ans.documents}
    for doc_id in dict.fromkeys(e.doc_id for e in ans.evidence):
        out.append(f"evidence in {titles.get(doc_id, doc_id)}:")
        out += [f"  [{e.rank}] {e.page_ref} {e.type:<7} {e.node_id}  {e.snippet[:80]}"
                for e in ans.evidence if e.doc_id == doc_id]
    if explain:
        out.append("path:")
        out += ["  " + line for line in ans.path()]
    out.append(f"[hierarchy: {len(ans.steps)} steps, {ans.seconds:.2f} s]")
    return out


def navigate_command(
    folder: Path = typer.Argument(..., metavar="DIR", help="A hierarchy built by `skills build LIB --documents`."),
    question: str = typer.Argument(..., help="The question."),
    index: Path = typer.Option(..., "-i", "--index", help="The library the hierarchy was built from."),
    k: int = typer.Option(10, "--k", min=1, help="Evidence items from the chosen document."),
    no_search: bool = typer.Option(False, "--no-search", help="Stop at the routing decision."),
    documents: int = typer.Option(1, "--documents", min=1, help="Search the best N documents (comparisons)."),
    explain: bool = typer.Option(False, "--explain", help="Print every navigation step."),
    as_json: bool = typer.Option(False, "--json", help="Print the LibraryAnswer as JSON (with the steps)."),
) -> None:
    """Navigate a library hierarchy from topics to a block, without an LLM."""
    if not question.strip():
        raise InputError('the question is empty: bookindex skills navigate DIR "What is ...?" -i LIB')
    ans = engine_for(index).navigate_library(question, skills=str(folder), k=k, search=not no_search,
                                          documents=documents)
    if as_json:
        typer.echo(ans.model_dump_json(indent=1))
        return
    con = make_console()
    for line in render(ans, explain):
        con.print(line, markup=False)
