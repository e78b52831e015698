"""`/docs`: Swagger UI served from the installed `swagger-ui-bundle` package, so the API page
works on a machine with no internet access (FastAPI's default page loads it from a CDN).

Without the package, `/docs` is a plain page linking the OpenAPI document (`/openapi.json`).
The page needs a key like every route; its script and stylesheet under `/docs/static/` are open,
like the inspector's.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

STATIC_PREFIX = "/docs/static"


def swagger_files() -> Path | None:
    """The folder of Swagger UI's files in the installed `swagger-ui-bundle`, or None."""
    try:
        import swagger_ui_bundle  # type: ignore[import-untyped]
    except ImportError:
        return None
    path = Path(str(swagger_ui_bundle.swagger_ui_path))
    return path if (path / "swagger-ui-bundle.js").is_file() else None


def install(app: FastAPI, title: str) -> None:
    """Add `/docs` (create the app with `docs_url=None`) and, when the files exist, their route."""
    files = swagger_files()
    if files is not None:
        app.mount(STATIC_PREFIX, StaticFiles(directory=str(files)), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        if files is None:
            return HTMLResponse(f"<!doctype html><title>{title} API</title><h1>{title} API</h1>"
                                "<p>The OpenAPI document: <a href=\"/openapi.json\">/openapi.json</a> "
                                "(install <code>swagger-ui-bundle</code> for the interactive page).</p>")
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{title} API",
                                   swagger_js_url=f"{STATIC_PREFIX}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{STATIC_PREFIX}/swagger-ui.css",
                                   swagger_favicon_url=f"{STATIC_PREFIX}/favicon-32x32.png")
