"""The web inspector: library, document tree with page images and boxes, ask with
citations, plan trace and plan editor, graph neighbourhoods, skills hierarchy; at `/ui/`.

Server-rendered Jinja2 templates with one small vanilla script and one stylesheet, all shipped
in this package (no CDN, nothing downloaded at run time). `mount(app)` adds the routes and the
static files to the REST server's app; the routes call the Engine only.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from bookindex.server.inspector.routes import PREFIX, router

STATIC = Path(__file__).resolve().parent / "static"


def mount(app: FastAPI) -> None:
    """Add the inspector to the server app: pages under /ui/, files under /ui/static/."""
    app.include_router(router)
    app.include_router(router, prefix="/libraries/{library}")  # a named library's pages
    app.mount(PREFIX + "/static", StaticFiles(directory=str(STATIC)), name="inspector-static")

    @app.get(PREFIX, include_in_schema=False)
    def _ui_root() -> RedirectResponse:
        return RedirectResponse(PREFIX + "/", status_code=307)
