"""`bookindex index | list | remove | tree | show`: build and inspect a document library."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from bookindex.cli.context import engine_for, get_settings
from bookindex.cli.output import make_console
from bookindex.core.errors import BookIndexError, InputError
from bookindex.core.model import DocumentTree, Node
from bookindex.parsing.dispatch import check_path
from bookindex.parsing.identity import DocumentIdentity
from bookindex.parsing.mineru import detect_format, is_mineru_json, load_json, output_base
from bookindex.storage import s3
from bookindex.storage.lock import describe

PARSERS = ("auto", "pymupdf", "mineru", "markdown", "text")
DOC_EXT = {".pdf", ".md", ".markdown", ".mdown", ".mkd", ".txt", ".text", ".json"}


def expand_inputs(paths: list[Path], prefer_mineru: bool = False) -> list[Path]:
    """Files to index: files as given; folders searched recursively for PDFs, Markdown, text
    and MinerU JSON (one JSON per MinerU output, and a PDF and its MinerU output only once)."""
    for p in paths:
        check_path(p)
    out: list[Path] = []
    for p in paths:
        if p.is_file():
            out.append(p)
            continue
        if not p.is_dir():
            raise InputError(f"{p}: not a regular file or folder (a pipe, socket or device)")
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in DOC_EXT
                       and not any(part.startswith(".") for part in f.relative_to(p).parts))
        by_dir: dict[tuple[Path, str], list[Path]] = {}
        for f in files:
            if f.suffix.lower() == ".json":
                if is_mineru_json(f):
                    by_dir.setdefault((f.parent, output_base(f)), []).append(f)
        rank = {"middle_v4": 0, "middle_v1": 0, "content_list_v2": 1, "content_list_v1": 2}
        chosen_json = {key: sorted(js, key=lambda j: rank.get(detect_format(load_json(j)) or "", 9))[0]
                       for key, js in by_dir.items()}
        pdf_keys = {(f.parent, f.stem) for f in files if f.suffix.lower() == ".pdf"}
        for f in files:
            ext = f.suffix.lower()
            if ext == ".json":
                key = (f.parent, output_base(f))
                if chosen_json.get(key) != f:
                    continue
                if not prefer_mineru and (f.parent, key[1]) in pdf_keys:
                    continue  # the PDF itself is indexed
                out.append(f)
            elif ext == ".pdf":
                if prefer_mineru and (f.parent, f.stem) in {k for k in chosen_json}:
                    continue
                out.append(f)
            else:
                out.append(f)
    if not out:
        raise InputError(f"nothing to index in {', '.join(map(str, paths))} (supported: PDF, MinerU JSON, Markdown, text)")
    return out


def one_line(message: str, limit: int = 400) -> str:
    """A message as one line of at most `limit` characters (what every user-facing error is)."""
    text = " ".join(message.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Progress:
    """tqdm bars fed by construction events: nodes embedded, graph nodes extracted; PDF parsing
    draws its own pages/s bar."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.info: dict[str, Any] = {}

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        self.info[event] = info
        if not self.enabled:
            return
        from tqdm import tqdm

        if event == "lock_wait":
            make_console(stderr=True).print(f"  waiting for the library lock, held by {escape(describe(info.get('holder')))} ...")
            return
        if event == "parsed":
            c = make_console(stderr=True)
            rate = info["pages"] / info["seconds"] if info["seconds"] > 0 else float("inf")
            c.print(f"  parsed {_n(info['pages'], 'page')}, {_n(info['blocks'], 'block')} in {info['seconds']:.2f} s "
                    f"({rate:.1f} pages/s)")
            for w in info.get("warnings", [])[:5]:
                c.print(f"  [yellow]warning:[/] {escape(str(w))}")
            if len(info.get("warnings", [])) > 5:
                c.print(f"  [yellow]... {len(info['warnings']) - 5} more warnings (see build.json)[/]")
        elif event == "embed_start":
            self.bar = tqdm(total=info["total"], unit="node", desc="  embed", file=sys.stderr, leave=False)
        elif event == "embed_advance" and self.bar is not None:
            self.bar.update(info["n"])
        elif event == "embed_done" and self.bar is not None:
            self.bar.close()
            self.bar = None
        elif event in ("graph_start", "graph_retry_start"):
            if event == "graph_start":
                make_console(stderr=True).print("  building the knowledge graph ...")
            else:
                make_console(stderr=True).print(f"  retrying {_n(info['nodes'], 'graph node')} whose extraction failed last time ...")
            if info.get("nodes"):
                self.bar = tqdm(total=info["nodes"], unit="node", desc="  graph", file=sys.stderr, leave=False)
        elif event == "graph_advance" and self.bar is not None:
            self.bar.update(info["n"])
        elif event in ("graph_done", "graph_retry_done") and self.bar is not None:
            self.bar.close()
            self.bar = None


def index_cmd(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., help="Files or folders: PDF, MinerU JSON, Markdown, text."),
    index_dir: Path = typer.Option(..., "-i", "--index", help="Library folder (created if missing)."),
    parser: str = typer.Option("auto", "--parser", help="auto | pymupdf | mineru | markdown | text"),
    no_outline: bool = typer.Option(False, "--no-outline", help="Ignore PDF bookmarks; detect headings by rules/LLM."),
    no_graph: bool = typer.Option(False, "--no-graph", help="Skip knowledge-graph construction."),
    no_tables: bool = typer.Option(False, "--no-tables", help="Skip table detection (faster)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
    workers: int = typer.Option(1, "--workers", min=1, help="Build in N local processes; this one commits."),
    ray: Optional[str] = typer.Option(None, "--ray", metavar="ADDRESS",
                                      help="One Ray task per document: local (start one here), auto, ray://HOST:PORT."),
    ray_cpus: Optional[int] = typer.Option(None, "--ray-cpus", min=1, help="CPUs of a --ray local instance."),
) -> None:
    """Index documents into a library folder or s3://BUCKET/PREFIX (re-indexing an unchanged file is a no-op)."""
    remote = s3.parse(index_dir)
    if remote is not None:  # build into the writer's local mirror, publish to S3 at the end
        with s3.writer_session(remote, get_settings(ctx)) as local:
            _index_into(ctx, paths, local, parser, no_outline, no_graph, no_tables, quiet, workers, ray, ray_cpus)
        return
    _index_into(ctx, paths, index_dir, parser, no_outline, no_graph, no_tables, quiet, workers, ray, ray_cpus)


def _index_into(ctx: typer.Context, paths: list[Path], index_dir: Path, parser: str, no_outline: bool,
                no_graph: bool, no_tables: bool, quiet: bool, workers: int, ray: Optional[str],
                ray_cpus: Optional[int]) -> None:
    """`bookindex index` into a local library folder."""
    if parser not in PARSERS:
        raise InputError(f"--parser {parser!r}: choose one of {', '.join(PARSERS)}")
    files = expand_inputs(list(paths), prefer_mineru=parser == "mineru")
    lib_root = index_dir.expanduser().resolve()
    files = [f for f in files if lib_root not in f.resolve().parents]  # never index the library itself
    if not files:
        raise InputError(f"nothing to index outside the library folder {lib_root}")
    engine = engine_for(index_dir, ctx, existing=False)
    engine.library  # noqa: B018 - a folder that is not a library fails before any work
    opts: dict[str, Any] = {"parser": parser}
    if no_outline:
        opts["use_outline"] = False
    if no_graph:
        opts["graph"] = False
    if no_tables:
        opts["tables"] = False
    c = make_console(stderr=True)
    if workers > 1 or ray:
        _index_parallel(engine, files, opts, workers, ray, ray_cpus, quiet)
        return
    counts: Counter[str] = Counter()
    total_pages = 0
    nodes_failed = 0  # graph nodes whose extraction failed, over the documents built or retried now
    t_all = time.perf_counter()
    for k, f in enumerate(files, 1):
        if not quiet:
            c.print(f"[bold]\\[{k}/{len(files)}][/] {escape(str(f))}")
        prog = _Progress(not quiet)
        t0 = time.perf_counter()
        try:
            doc = engine.index(f, on_event=prog, progress=not quiet, **opts)
        except BookIndexError as e:
            if len(files) == 1:
                raise  # one file: its error is the whole message (one line, exit 2)
            counts["failed"] += 1
            c.print(f"[bold red]error:[/] {escape(one_line(str(e)))}")
            continue
        except (Exception, RecursionError) as e:  # one file's bug never stops the batch
            message = one_line(f"{f}: could not be indexed ({type(e).__name__}: {e})")
            if len(files) == 1:
                raise InputError(message) from e
            counts["failed"] += 1
            c.print(f"[bold red]error:[/] {escape(message)}")
            continue
        counts[doc.status] += 1
        if doc.status != "unchanged":
            total_pages += doc.pages
        graph = doc.graph
        nodes_failed += int(graph.get("nodes_failed") or 0)
        if not quiet:
            if doc.status == "unchanged":
                c.print(f"  unchanged: {escape(doc.name)} ({doc.doc_id}) is already indexed with these options")
            elif doc.status == "retried":
                r = doc.retry or {}
                color = "yellow" if r.get("still_failed") else "green"
                c.print(f"  [green]retried[/] {escape(doc.name)} ({doc.doc_id}): {_n(r.get('nodes', 0), 'failed graph node')}"
                        f" re-extracted with {_n(r.get('llm_calls', 0), 'LLM call')}: [{color}]{r.get('recovered', 0)} "
                        f"recovered, {r.get('still_failed', 0)} still failing[/]; graph now "
                        f"{_n(r.get('entities', 0), 'entity', 'entities')}, {_n(r.get('relations', 0), 'relation')} "
                        f"({time.perf_counter() - t0:.1f} s)")
            else:
                c.print(f"  [green]{doc.status}[/] {escape(doc.name)} -> {doc.doc_id}: {_n(doc.pages, 'page')}, "
                        f"{_n(doc.blocks, 'block')}, {_n(doc.sections, 'section')}, {_n(doc.nodes, 'node')}, "
                        f"graph {'yes' if doc.graph_built else 'no'} "
                        f"({time.perf_counter() - t0:.1f} s)")
                if graph.get("built"):
                    c.print("  " + graph_summary(graph))
    secs = time.perf_counter() - t_all
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    failed_note = (f"; [yellow]{_n(nodes_failed, 'graph node')} failed extraction[/] (run the same command "
                   "again to retry only those)") if nodes_failed else ""
    c.print(f"{summary}; {_n(total_pages, 'page')} in {secs:.1f} s -> {escape(str(engine.root))}{failed_note}")
    if counts["failed"]:
        raise typer.Exit(2)


class _BatchProgress:
    """One bar over documents for a parallel run; its postfix shows the cluster (nodes, CPUs,
    tasks in flight) or the local workers, and each committed or failed document prints a line."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.total = total
        self.counts: Counter[str] = Counter()
        self.pages = 0

    def progress(self, event: str, info: dict[str, Any]) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        if event == "lock_wait":
            make_console(stderr=True).print(f"  waiting for the library lock, held by {escape(describe(info.get('holder')))} ...")
        elif event == "planned":
            self.bar = tqdm(total=self.total, unit="doc", desc="index", file=sys.stderr)
        elif event == "cluster" and self.bar is not None:
            self.bar.set_postfix_str(f"cluster {info['nodes']} node(s), {info['cpus']} CPUs, "
                                     f"{info['in_flight']} in flight, {info['queued']} queued")
        elif event == "submitted" and self.bar is not None:
            self.bar.set_postfix_str(f"{info['workers']} workers, {info['jobs']} builds")
        elif event == "retry":
            make_console(stderr=True).print(f"  [yellow]retrying[/] {escape(str(info['name']))} (a worker died; attempt {info['attempt']})")

    def item(self, item: Any) -> None:
        self.counts[item.status] += 1
        if item.doc is not None and item.status != "unchanged":
            self.pages += int(item.doc.manifest.get("pages") or 0)
        if self.bar is not None:
            self.bar.update(1)
        if not self.enabled:
            if item.status == "failed":
                make_console(stderr=True).print(f"[bold red]error:[/] {escape(one_line(item.error or ''))}")
            return
        if item.status == "failed":
            make_console(stderr=True).print(f"[bold red]error:[/] {escape(one_line(item.error or ''))}")
        elif item.doc is not None:
            where = f" on {item.worker}" if item.worker else ""
            make_console(stderr=True).print(f"  [green]{item.status}[/] {escape(item.doc.name)} -> {item.doc.doc_id}"
                             f"{where} ({item.seconds:.1f} s)")


def _index_parallel(engine: Any, files: list[Path], opts: dict[str, Any], workers: int, ray: str | None,
                    ray_cpus: int | None, quiet: bool) -> None:
    """`bookindex index --workers N | --ray ADDRESS`: builds elsewhere, this process commits."""
    t0 = time.perf_counter()
    prog = _BatchProgress(len(files), not quiet)
    engine.index_many(files, workers=workers, ray=ray, ray_cpus=ray_cpus, on_item=prog.item,
                      on_progress=prog.progress, **opts)
    if prog.bar is not None:
        prog.bar.close()
    summary = ", ".join(f"{v} {k}" for k, v in sorted(prog.counts.items()))
    mode = f"Ray {ray}" if ray else f"{workers} workers"
    make_console(stderr=True).print(f"{summary}; {_n(prog.pages, 'page')} in {time.perf_counter() - t0:.1f} s ({mode}) -> "
                     f"{escape(str(engine.root))}")
    if prog.counts["failed"]:
        raise typer.Exit(2)


def list_cmd(index_dir: Path = typer.Argument(..., help="Library folder."),
             as_json: bool = typer.Option(False, "--json", help="Manifests as JSON.")) -> None:
    """List the documents of a library."""
    engine = engine_for(index_dir)
    docs = engine.documents()
    if as_json:
        typer.echo(json.dumps([d.manifest for d in docs], indent=2, ensure_ascii=False))
        return
    if not docs:
        typer.echo(f"no documents in {engine.root}")
        return
    from rich.table import Table

    t = Table(title=f"{engine.root} ({len(docs)} documents)")
    for col in ("id", "name", "about", "pages", "parser", "sections", "nodes", "graph", "created"):
        t.add_column(col, justify="right" if col in ("pages", "sections", "nodes") else "left")
    for d in docs:
        m = d.manifest
        about = DocumentIdentity.from_dict(m.get("identity")).summary()
        t.add_row(d.doc_id, d.name, about, str(m.get("pages")), str(m.get("parser")), str(m.get("sections")),
                  str(m.get("nodes")), "yes" if m.get("graph") else "no", str(m.get("created", ""))[:19])
    make_console(soft_wrap=False, tty_min_width=100).print(t)


def remove_cmd(index_dir: Path = typer.Argument(..., help="Library folder."),
               doc: str = typer.Argument(..., help="Document id or file name.")) -> None:
    """Remove a document from a library (a folder or s3://BUCKET/PREFIX)."""
    remote = s3.parse(index_dir)
    if remote is not None:
        with s3.writer_session(remote, get_settings()) as local:
            d = engine_for(local).remove(doc)
    else:
        d = engine_for(index_dir).remove(doc)
    typer.echo(f"removed {d.name} ({d.doc_id})")


def refresh_cmd(index_dir: Path = typer.Argument(..., help="Library folder (or s3://BUCKET/PREFIX)."),
                docs: Optional[list[str]] = typer.Argument(None, help="Document ids or file names (default: all)."),
                dry_run: bool = typer.Option(False, "--dry-run", help="Show what would change; write nothing.")) -> None:
    """Re-read each document's identity (organisation, form, fiscal year ...) from its stored tree,
    without parsing or embedding again, and store its BM25 index, graph index and table rows where
    they are missing or stale; a changed document is replaced atomically."""
    remote = s3.parse(index_dir)
    if remote is not None:
        if dry_run:
            raise InputError("--dry-run reads a local library folder; give the folder, not s3://")
        with s3.writer_session(remote, get_settings()) as local:
            _refresh(engine_for(local), docs, write=True)
        return
    engine = engine_for(index_dir)
    engine.require_library()
    _refresh(engine, docs, write=not dry_run)


def _refresh(engine: Any, docs: list[str] | None, write: bool) -> None:
    targets = docs or [d.doc_id for d in engine.documents()]
    changed = 0
    lexical = "lexical index stored" if write else "lexical index to store"
    graph = "graph index stored" if write else "graph index to store"
    tables = "table rows stored" if write else "table rows to store"
    for doc in targets:
        info, old, new, lexical_stale, regrouped, graph_stale, tables_stale = engine.refresh_identity(doc, write=write)
        before, after = DocumentIdentity.from_dict(old).summary(), DocumentIdentity.from_dict(new).summary()
        notes = ([lexical] if lexical_stale else []) + ([graph] if graph_stale else []) + ([tables] if tables_stale else []) + \
            ([f"tree {'regrouped' if write else 'to regroup'}: {_n(regrouped, 'node')}"] if regrouped else [])
        if old == new:
            if notes:
                changed += 1
                typer.echo(f"{info.name}: {'; '.join(notes)} ({after or 'no identity'})")
            else:
                typer.echo(f"{info.name}: unchanged ({after or 'no identity'})")
            continue
        changed += 1
        fields = ", ".join(sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k)))
        note = "".join(f"; {x}" for x in notes)
        typer.echo(f"{info.name}: {before or 'no identity'} -> {after or 'no identity'} ({fields}){note}")
    verb = "refreshed" if write else "would change"
    typer.echo(f"{changed} of {len(targets)} documents {verb}")
    if write and len(engine.documents()) > 1:
        # the router of the library as it is now, stored (.router/): the next server starts
        # routing without reading a document
        t = time.perf_counter()
        engine.routing.router()
        typer.echo(f"library router stored ({time.perf_counter() - t:.1f} s)")


def tree_cmd(index_dir: Path = typer.Argument(..., help="Library folder."),
             doc: Optional[str] = typer.Option(None, "--doc", help="Document id or file name (default: all)."),
             depth: Optional[int] = typer.Option(None, "--depth", min=0, help="Deepest section level shown."),
             as_json: bool = typer.Option(False, "--json", help="Nested JSON tree (a list of trees without --doc)."),
             leaves: bool = typer.Option(False, "--leaves", help="Also list text/table/image nodes.")) -> None:
    """Print the table of contents: node types, pages and child counts."""
    engine = engine_for(index_dir)
    trees = [engine.tree(doc)] if doc else [engine.tree(d.doc_id) for d in engine.documents()]
    if as_json:
        out = [t.to_nested(depth=depth) for t in trees]
        typer.echo(json.dumps(out[0] if doc else out, indent=2, ensure_ascii=False))
        return
    if not trees:
        typer.echo(f"no documents in {engine.root}")
        return
    for tree in trees:
        for line in render_toc(tree, depth=depth, leaves=leaves):
            typer.echo(line)


def render_toc(tree: DocumentTree, depth: int | None = None, leaves: bool = False) -> list[str]:
    """Indented table of contents, one line per section (and leaf with `leaves`)."""
    root = tree.root
    lines = [f"{tree.name} ({tree.doc_id})  [document, {_pages(root)}, {_kids(tree, root)}]"]

    def visit(nid: str, indent: int) -> None:
        n = tree.nodes[nid]
        if n.type == "section":
            if depth is not None and n.level > depth:
                return
            kind = f"{n.role}, section" if n.role else "section"
            lines.append(f"{'  ' * indent}{n.title}  [{kind} L{n.level}, {_pages(n)}, {_kids(tree, n)}]")
            for c in n.children:
                visit(c, indent + 1)
        elif leaves:
            lines.append(f"{'  ' * indent}- {n.type}, {_pages(n)}: {n.label}")

    for c in root.children:
        visit(c, 1)
    return lines


def graph_summary(graph: dict[str, Any]) -> str:
    """One line from build.json's graph report: size, ER merges, and the nodes that failed."""
    line = (f"graph ({graph.get('extractor', '?')} extractor, er={graph.get('er', '?')}): "
            f"{_n(int(graph.get('entities') or 0), 'entity', 'entities')}, "
            f"{_n(int(graph.get('relations') or 0), 'relation')}, {_n(int(graph.get('er_merges') or 0), 'ER merge')}, ")
    failed = int(graph.get("nodes_failed") or 0)
    processed = graph.get("nodes_processed")
    of = f" of {processed}" if processed is not None else ""
    if failed:
        return line + f"[yellow]{failed}{of} nodes failed extraction[/] (listed in build.json)"
    return line + f"0{of} nodes failed"


def _n(k: int, word: str, plural: str | None = None) -> str:
    return f"{k} {word}" if k == 1 else f"{k} {plural or word + 's'}"


def _pages(n: Node | Any) -> str:
    a, b = n.page_idx + 1, n.page_end_idx + 1
    return f"p. {a}" if a == b else f"pp. {a}-{b}"


def _kids(tree: DocumentTree, n: Node) -> str:
    if not n.children:
        return "0 children"
    c = Counter(tree.nodes[k].type for k in n.children)
    parts = ", ".join(f"{v} {t}" for t, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{len(n.children)} {'child' if len(n.children) == 1 else 'children'}: {parts}"


def show_cmd(index_dir: Path = typer.Argument(..., help="Library folder."),
             node_id: str = typer.Argument(..., help="Node id (as printed by `tree --json` or search)."),
             as_json: bool = typer.Option(False, "--json", help="The node as JSON.")) -> None:
    """Print one node: text, page, bbox and its parent path."""
    engine = engine_for(index_dir)
    n = engine.node(node_id)
    if as_json:
        typer.echo(json.dumps(n.model_dump(mode="json"), indent=2, ensure_ascii=False, default=str))
        return
    typer.echo(f"{n.id}  [{n.type}, level {n.level}]  in {n.document}")
    typer.echo(f"page: {n.page_ref} (page_idx {n.page_idx}..{n.page_end_idx})")
    typer.echo("bbox: " + (", ".join(f"{x:.1f}" for x in n.bbox) if n.bbox else "none"))
    typer.echo("path: " + " > ".join(n.parent_path))
    if n.children:
        typer.echo(f"children: {_kids(engine.tree(n.doc_id), engine.tree(n.doc_id).nodes[n.id])}")
    for key in ("caption", "footnote", "figure_kind", "image_path", "language"):
        if n.meta.get(key):
            v = n.image_file if key == "image_path" else n.meta[key]
            typer.echo(f"{key}: {v}")
    typer.echo("")
    typer.echo(n.title if n.type == "section" else n.text)
    # a figure's words: a chart's text-layer labels in rows, or what OCR read inside it
    for key, label in (("chart_text", "chart, its labels in rows"), ("ocr_text", "words read by OCR")):
        if n.meta.get(key):
            typer.echo(f"{label}:\n{n.meta[key]}")


def register(app: typer.Typer) -> None:
    """Add the library commands to the bookindex CLI."""
    app.command("index")(index_cmd)
    app.command("list")(list_cmd)
    app.command("remove")(remove_cmd)
    app.command("refresh")(refresh_cmd)
    app.command("tree")(tree_cmd)
    app.command("show")(show_cmd)
