"""Errors as RFC 9457 problem details: `{"type", "title", "status", "detail", "instance"}`
served as `application/problem+json`, so every client parses one error shape."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from bookindex.core.errors import BookIndexError, IndexFormatError, InputError

PROBLEM_JSON = "application/problem+json"


class Problem(Exception):
    """Raise from a route to answer with a problem document of this status."""

    def __init__(self, status: int, detail: str, *, title: str | None = None,
                 headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.title = title or HTTPStatus(status).phrase
        self.headers = headers or {}
        self.extra = extra


def problem_response(request: Request, status: int, detail: str, *, title: str | None = None,
                     headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"type": "about:blank", "title": title or HTTPStatus(status).phrase,
                            "status": status, "detail": detail, "instance": request.url.path}
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def status_of(exc: BookIndexError) -> int:
    """An Engine error's HTTP status: a missing document or node is 404, an ambiguous name or
    other bad input 400 (the message says which), an unreadable index 409."""
    msg = str(exc)
    if isinstance(exc, IndexFormatError):
        return 409
    if isinstance(exc, InputError) and (": no document " in msg or ": no node " in msg
                                        or "belongs to no document" in msg):
        return 404
    return 400


def install(app: FastAPI) -> None:
    """Route every error the app can raise to a problem document."""

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> JSONResponse:
        return problem_response(request, exc.status, exc.detail, title=exc.title, headers=exc.headers,
                                **exc.extra)

    @app.exception_handler(BookIndexError)
    async def _engine(request: Request, exc: BookIndexError) -> JSONResponse:
        return problem_response(request, status_of(exc), " ".join(str(exc).split()))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors()]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        detail = f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
        return problem_response(request, 422, detail, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return problem_response(request, exc.status_code, str(exc.detail), headers=dict(exc.headers or {}))
