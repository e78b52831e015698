"""`bookindex ask | plan | run-plan`: questions, their operator plans, and edited plans."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import typer

from bookindex.cli.context import engine_for
from bookindex.cli.output import make_console
from bookindex.core.errors import InputError
from bookindex.engine import AskEvent, AskRequest
from bookindex.retrieval import METHODS, Answer, Plan

METHOD_HELP = "bookindex (planned retrieval) or a baseline: bm25, dense, hybrid, chunks, tree."


def _check(question: str) -> None:
    if not question.strip():
        raise InputError('the question is empty: bookindex ask DIR "What is ...?"')
    if not any(ch.isalnum() for ch in question):
        # nothing to retrieve with: evidence for "?!" would be noise shown with confidence
        raise InputError(f"the question {question[:40]!r} has no words or numbers to search for")


def _check_save_plan(path: Path) -> None:
    """--save-plan must name a file in an existing folder; checked before the question is answered."""
    if path.is_dir():
        raise InputError(f"{path}: --save-plan names a folder; give a file name, e.g. {path / 'plan.json'}")
    parent = path.expanduser().parent
    if not parent.is_dir():
        raise InputError(f"{path}: --save-plan folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise InputError(f"{path}: --save-plan folder {parent} is not writable")


def render_explain(answer: Any) -> Any:
    """Plan + trace as a rich tree: what each operator received, kept, and why."""
    from rich.markup import escape
    from rich.tree import Tree

    root = Tree(f"[bold]{escape(answer.question)}[/bold]  →  [cyan]{answer.query_type}[/cyan]"
                + (f"  ({escape(json.dumps(answer.plan.planner))})" if answer.plan is not None else ""))
    for rec in answer.trace:
        _trace_node(root, rec.model_dump(exclude_none=True))
    ev = root.add("[bold]evidence[/bold]")
    for e in answer.evidence:
        ev.add(f"{e.rank}. {e.page_ref} {e.type} [dim]{escape(e.node_id)}[/dim] "
               f"{escape(json.dumps(e.scores))} — {escape(e.snippet[:90])}")
    return root


_SHOW = ("chosen", "navigation", "mentions", "mention_source", "linked", "sub_questions", "synthesis", "source", "sections",
         "text_guard_sections", "section_scores", "skipped", "fallback", "fallback_to", "types", "pages",
         "section", "warning", "subgraph", "seeds", "top_entities", "criteria", "layers", "mode",
         "pool", "scored", "reranked", "count")


def _trace_node(parent: Any, rec: dict[str, Any]) -> None:
    from rich.markup import escape

    head = f"[bold green]{rec.get('op')}[/bold green] [dim]{rec.get('ms', 0):.1f} ms[/dim]"
    if rec.get("params"):
        head += f"  params={escape(json.dumps(rec['params']))}"
    if rec.get("llm") and any(rec["llm"].values()):
        head += f"  [magenta]LLM {rec['llm']}[/magenta]"
    node = parent.add(head)
    if isinstance(rec.get("inputs"), dict):
        node.add(f"received: {rec['inputs'].get('candidates')} candidate nodes")
    for key in _SHOW:
        if key in rec and not (key == "sub_questions" and rec.get("op") == "ForEach"):
            style = "red" if key in ("fallback", "skipped", "warning") else "white"
            node.add(f"[{style}]{key}: {escape(json.dumps(rec[key], ensure_ascii=False)[:300])}[/{style}]")
    if "outputs" in rec:
        node.add(f"kept: {escape(json.dumps(rec['outputs'], ensure_ascii=False)[:400])}")
    if isinstance(rec.get("reader"), dict):
        _reader_node(node, rec["reader"])
    for b in rec.get("branches", []):
        _trace_node(node, b)
    if rec.get("op") == "ForEach":
        if isinstance(rec.get("whole_question"), dict):
            whole = node.add(f"[bold]whole question (leads the merge):[/bold] "
                             f"{escape(rec['whole_question']['question'])}")
            for r in rec["whole_question"]["trace"]:
                _trace_node(whole, r)
        for sq in rec.get("sub_questions", []):
            sub = node.add(f"[bold]sub-question:[/bold] {escape(sq['question'])}")
            for r in sq["trace"]:
                _trace_node(sub, r)


def _reader_node(parent: Any, report: dict[str, Any]) -> None:
    """The extractive reader's choice: how it chose and its best candidates with what decided."""
    from rich.markup import escape

    node = parent.add(f"reader: {report.get('choice')} choice among {report.get('candidates')} candidates "
                      f"(question kind: {report.get('kind')})")
    for c in report.get("top", []):
        mark = "[bold]→[/bold] " if c.get("chosen") else "  "
        scores = f"rule {c.get('rule_score')}" + (f", fitted {c['fitted_score']}" if "fitted_score" in c else "")
        line = f"{mark}[{c.get('passage')}] {c.get('via')} ({scores}) {escape(repr(c.get('span') or c.get('sentence')))}"
        if c.get("features"):
            line += f"  [dim]{escape(json.dumps(c['features']))}[/dim]"
        node.add(line)


CHECK_WORDS = {
    "valid": "verified (every [n] is shown evidence)",
    "repaired": "verified after one repair round",
    "fallback": (
        "the LLM answer failed the citation check twice; the extractive answer"
        " (for a question in parts, the cited partial answers) is shown instead"
    ),
    "extractive": "extractive answer (no LLM)",
    "not-answerable": "none needed (not answerable)",
    "refused-extractive": "the LLM found no answer; the extractive reader's answer is shown instead",
}


def render_usage(answer: Answer) -> Any:
    """Where the question's time went: LLM calls, tokens and seconds per stage."""
    from rich.table import Table

    u = answer.usage
    first = f" · first token {u.first_token_s:.1f} s" if u.first_token_s is not None else ""
    table = Table(title=f"LLM use · {u.ms / 1000:.1f} s{first}", title_justify="left")
    for col in ("stage", "calls", "cache hits", "prompt tok", "of them KV-cached", "completion tok", "seconds"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for name, st in [*u.llm.stages.items(), ("total", u.llm.total)]:
        table.add_row(name, str(st.calls), str(st.cache_hits), str(st.prompt_tokens), str(st.cached_tokens),
                      str(st.completion_tokens), f"{st.seconds:.1f}")
    return table


def stream_answer(events: Iterator[AskEvent], con: Any) -> Answer:
    """Print the answer's tokens as they come; returns the final Answer. Streamed text that was
    withdrawn (a citation repair, the extractive fallback) is followed by the kept answer."""
    from rich.markup import escape

    shown = ""
    answer: Answer | None = None
    for ev in events:
        if ev.kind == "evidence" and not shown:
            con.print(f"[dim]{len(ev.data)} evidence items; answering...[/dim]")
        elif ev.kind == "token":
            con.print(escape(ev.data), end="")
            con.file.flush()
            shown += ev.data
        elif ev.kind == "reset" and shown:
            con.print(f"\n[dim]({escape(str(ev.data))})[/dim]")
            shown = ""
        elif ev.kind == "answer":
            answer = ev.data
    if answer is None:  # the Engine always ends with the answer; a stream cut short is a bug
        raise RuntimeError("the answer stream ended without an answer")
    if answer.answer != shown:
        if shown:
            con.print()
        con.print(escape(answer.answer[len(shown):] if answer.answer.startswith(shown) else answer.answer), end="")
    con.print()
    return answer


def _print_answer(answer: Answer, as_json: bool, explain: bool, streamed: bool = False) -> None:
    if as_json:
        print(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2))
        return
    con = make_console()
    from rich.markup import escape

    if explain:
        con.print(render_explain(answer))
        con.print()
    head = f"[bold]{escape(answer.doc.get('name', ''))}[/bold] · {answer.query_type} · {answer.method}"
    if streamed:  # the answer is on screen already
        con.print(f"[dim]{head}[/dim]")
    else:
        con.print(head)
        con.print(escape(answer.answer))
    con.print()
    for e in answer.evidence:
        mark = "*" if e.rank in answer.citations else " "
        con.print(f"{mark}[{e.rank}] {e.page_ref} {e.type:<7} {escape(e.section[:40]):<40} {escape(e.snippet[:80])}")
    if answer.citation_check:
        con.print(f"[dim]citations: {escape(CHECK_WORDS.get(answer.citation_check, answer.citation_check))}[/dim]")
    usage = answer.usage.llm.total
    first = f" · first token {answer.usage.first_token_s:.1f} s" if answer.usage.first_token_s is not None else ""
    con.print(f"[dim]{answer.usage.ms:.0f} ms{first} · LLM calls {usage.calls} · "
              f"tokens {usage.prompt_tokens}+{usage.completion_tokens}[/dim]")
    if explain:
        con.print(render_usage(answer))


def register(app: typer.Typer) -> None:
    @app.command("ask")
    def ask_cmd(
        index_dir: Path = typer.Argument(..., help="Library folder."),
        question: str = typer.Argument(..., help="The question."),
        doc: Optional[str] = typer.Option(None, "--doc", help="Document id or file name (default: routed)."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        explain: bool = typer.Option(False, "--explain", help="Show the plan and its trace as a tree."),
        save_plan: Optional[Path] = typer.Option(None, "--save-plan", help="Write the plan as JSON."),
        method: str = typer.Option("bookindex", "--method", help=METHOD_HELP),
        k: Optional[int] = typer.Option(None, "--k", min=1, max=1000, help="Evidence count for baseline methods."),
        skills: Optional[Path] = typer.Option(None, "--skills",
                                              help="Without --doc: route through this library hierarchy (skills build --documents)."),
        navigator: str = typer.Option("embedding", "--navigator",
                                      help="With --skills: embedding (no LLM) or llm (an LLM walks it with the document tools)."),
        stream: Optional[bool] = typer.Option(None, "--stream/--no-stream",
                                              help="Print the answer as it is written (default: on a terminal)."),
    ) -> None:
        """Answer QUESTION from the indexed documents, with cited evidence."""
        _check(question)
        if method not in METHODS:
            raise InputError(f"--method {method!r}: choose one of {', '.join(METHODS)}")
        if save_plan is not None:
            _check_save_plan(save_plan)
        if navigator not in ("embedding", "llm"):
            raise InputError(f"--navigator {navigator!r}: choose embedding or llm")
        if navigator == "llm" and skills is None:
            raise InputError("--navigator llm walks a library hierarchy: give it with --skills DIR")
        req = AskRequest(question=question, doc=doc, method=method, k=k,
                         skills=str(skills) if skills is not None else None,
                         navigator="llm" if navigator == "llm" else "embedding")
        streamed = (sys.stdout.isatty() if stream is None else stream) and not as_json
        if streamed:
            from rich.markup import escape

            con = make_console()
            con.print(f"[bold]{escape(question)}[/bold]")
            answer = stream_answer(engine_for(index_dir).ask_stream(req), con)
        else:
            answer = engine_for(index_dir).ask(req)
        if save_plan is not None:
            if answer.plan is None:
                raise InputError(f"--save-plan: method {method!r} has no plan")
            answer.plan.save(save_plan)
        _print_answer(answer, as_json, explain, streamed=streamed)

    @app.command("plan")
    def plan_cmd(
        index_dir: Path = typer.Argument(..., help="Library folder."),
        question: str = typer.Argument(..., help="The question."),
        doc: Optional[str] = typer.Option(None, "--doc", help="Document id or file name."),
        as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    ) -> None:
        """Classify QUESTION and print its operator plan; nothing is retrieved."""
        _check(question)
        p = engine_for(index_dir).plan(question, doc=doc)
        if as_json:
            print(p.to_json())
            return
        from rich.markup import escape
        from rich.tree import Tree

        root = Tree(f"[bold]{escape(p.question)}[/bold] → [cyan]{p.query_type}[/cyan] "
                    f"[dim]{escape(json.dumps(p.planner))}[/dim]")

        def add(parent: Any, step: Any) -> None:
            n = parent.add(f"[green]{step.op}[/green] {escape(json.dumps(step.params)) if step.params else ''}")
            for s in step.steps or []:
                add(n, s)
            if step.fallback is not None:
                add(n.add("[dim]fallback when nothing is linked[/dim]"), step.fallback)

        for s in p.steps:
            add(root, s)
        make_console().print(root)

    @app.command("run-plan")
    def run_plan_cmd(
        index_dir: Path = typer.Argument(..., help="Library folder."),
        plan_file: Path = typer.Argument(..., help="A plan saved with --save-plan (possibly edited)."),
        doc: Optional[str] = typer.Option(None, "--doc", help="Document id or file name."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        explain: bool = typer.Option(False, "--explain", help="Show the plan and its trace as a tree."),
    ) -> None:
        """Execute an (edited) operator plan."""
        p = Plan.load(plan_file)
        _print_answer(engine_for(index_dir).run_plan(p, doc=doc), as_json, explain)
