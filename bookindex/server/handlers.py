"""FastAPI exception handlers: every error the app can raise becomes a problem document
(`problem.problem_body`) with its status."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from bookindex.core.errors import BookIndexError
from bookindex.server.problem import PROBLEM_JSON, Problem, problem_body, status_of


def problem_response(request: Request, status: int, detail: str, *, title: str | None = None,
                     headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    return JSONResponse(problem_body(status, detail, request.url.path, title, **extra), status_code=status,
                        media_type=PROBLEM_JSON, headers=headers)


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
