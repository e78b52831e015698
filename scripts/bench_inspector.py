"""Web inspector latency in a real browser: headless Chromium (Debian's `chromium`,
driven by Playwright) against `bookindex serve`'s app on 127.0.0.1 over an indexed library.

Per run: open the document page and time navigation start -> the section tree first shown
(`inspectorMarks.treeShown`, set after the rows are in the DOM), then click the first top-level
node with a page and time click -> its page image loaded (`img.onload`). Cold: the PNG cache of
that page is removed first (the server renders the page with PyMuPDF); warm: it is kept.

    python scripts/bench_inspector.py LIBRARY [--doc gnuplot.pdf] [--runs 5] [--out DIR]

Writes inspector.json and inspector.md (DIR, default bench-out/) and prints the table. It
never changes the library, only LIB/.server/pages (the page cache the server owns).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from server_helpers import thread_server  # noqa: E402

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.engine import Engine  # noqa: E402
from bookindex.server.app import SERVER_DIR, create_app  # noqa: E402
from bookindex.server.auth import Keys  # noqa: E402


def one_run(browser: Any, base: str, doc: str, cache: Path | None, node_index: int) -> dict[str, float]:
    """Time tree-shown and page-image-shown for one fresh page load."""
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(f"{base}/ui/documents/{doc}")
        page.wait_for_selector("#tree[data-ready]")
        tree_ms = page.evaluate("window.inspectorMarks.treeShown")  # from navigation start
        links = page.locator("#tree > li .node-link")
        links.nth(node_index).click()
        page.wait_for_selector("#viewer img[data-loaded]", timeout=30_000)
        img_ms = page.evaluate("window.inspectorMarks.pageLoaded - window.inspectorMarks.nodeClicked")
        rows = page.locator("#tree li").count()
    finally:
        page.close()
    return {"tree_ms": round(float(tree_ms), 1), "page_ms": round(float(img_ms), 1), "rows": rows}


def chromium_and_engine(library: Path) -> tuple[str, Engine] | None:
    """Debian's chromium and an Engine on `library` without an LLM; None (said on stderr) when
    there is no chromium."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("no chromium executable: apt-get install chromium", file=sys.stderr)
        return None
    return exe, Engine(library, load_settings(overrides={"llm.provider": "none"}, env={}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", type=Path)
    ap.add_argument("--doc", default="gnuplot.pdf")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--node", type=int, default=3, help="which top-level row to click (0-based)")
    ap.add_argument("--out", type=Path, default=REPO / "bench-out")
    args = ap.parse_args()
    found = chromium_and_engine(args.library)
    if found is None:
        return 2
    exe, engine = found
    info = engine.document(args.doc)
    nodes = len(engine.tree(info.doc_id))
    cache = Path(engine.root) / SERVER_DIR / "pages" / info.doc_id
    results: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
    with thread_server(create_app(engine, Keys(frozenset(), frozenset()))) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        one_run(browser, base, info.doc_id, None, args.node)  # server warm-up: catalog, tree read once
        for _ in range(args.runs):
            results["cold"].append(one_run(browser, base, info.doc_id, cache, args.node))
            time.sleep(0.2)
        for _ in range(args.runs):
            results["warm"].append(one_run(browser, base, info.doc_id, None, args.node))
        browser.close()

    summary: dict[str, Any] = {"library": str(args.library), "doc": info.name, "pages": info.pages, "nodes": nodes,
                               "runs": args.runs, "browser": exe, "results": results}
    lines = ["| PNG cache | runs | tree first shown, median (min–max) ms | page image after click, median (min–max) ms |",
             "|---|---|---|---|"]
    for kind, rs in results.items():
        t = [r["tree_ms"] for r in rs]
        p = [r["page_ms"] for r in rs]
        summary[kind] = {"tree_ms_median": statistics.median(t), "page_ms_median": statistics.median(p)}
        lines.append(f"| {kind} | {len(rs)} | {statistics.median(t):.0f} ({min(t):.0f}–{max(t):.0f}) "
                     f"| {statistics.median(p):.0f} ({min(p):.0f}–{max(p):.0f}) |")
    table = "\n".join(lines)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "inspector.json").write_text(json.dumps(summary, indent=2))
    (args.out / "inspector.md").write_text(f"{info.name}: {info.pages} pages, {nodes} nodes\n\n{table}\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "results"}, indent=2))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
