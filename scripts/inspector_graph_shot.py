"""A screenshot of the inspector's graph page: an entity's neighbourhood as cytoscape.js draws it,
in headless Chromium (Debian's `chromium`, driven by Playwright) against `bookindex serve`'s app
on 127.0.0.1. How docs/img/inspector-graph.png is made (gnuplot.pdf, its graph built with an LLM):

    python scripts/inspector_graph_shot.py LIBRARY --doc gnuplot.pdf --q terminal \
        --out docs/img/inspector-graph.png

It opens the graph page with `q`, clicks the first entity found, waits until the drawing is done
and saves the viewport (1280x800). The server it starts writes LIB/.server (its runner lock),
so point it at a copy of a library you must not change.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from bench_inspector import chromium_and_engine  # noqa: E402
from server_helpers import thread_server  # noqa: E402

from bookindex.server.app import create_app  # noqa: E402
from bookindex.server.auth import Keys  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", type=Path)
    ap.add_argument("--doc", required=True, help="the document (name or id)")
    ap.add_argument("--q", default="", help="the entity search; the first entity found is drawn")
    ap.add_argument("--out", type=Path, required=True, help="the PNG to write")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    args = ap.parse_args()
    found = chromium_and_engine(args.library)
    if found is None:
        return 2
    exe, engine = found
    info = engine.document(args.doc)
    if not info.graph:
        print(f"{info.name} has no knowledge graph: index it with --graph", file=sys.stderr)
        return 2
    with thread_server(create_app(engine, Keys(frozenset(), frozenset()))) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(f"{base}/ui/documents/{info.doc_id}/graph?q={quote(args.q)}")
        if page.locator("ul.plain a").count() == 0:
            print(f"no entity of {info.name} matches {args.q!r}", file=sys.stderr)
            return 2
        page.locator("ul.plain a").first.click()
        page.wait_for_selector("#graph-canvas[data-ready]", timeout=30_000)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
        browser.close()
    print(f"{args.out}: {info.name}, entity search {args.q!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
