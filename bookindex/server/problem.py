"""Errors as RFC 9457 problem details: `{"type", "title", "status", "detail", "instance"}`
served as `application/problem+json`, so every client parses one error shape.

This module imports no web framework (the MCP server and the CLI use it without loading
FastAPI); `handlers` installs the FastAPI side.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from pydantic import ValidationError

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


def problem_body(status: int, detail: str, instance: str, title: str | None = None,
                 **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "about:blank", "title": title or HTTPStatus(status).phrase,
                            "status": status, "detail": detail, "instance": instance}
    body.update(extra)
    return body


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


def anticipated(exc: BaseException) -> tuple[int, str] | None:
    """The status and one-line detail REST answers for an error it expects (an Engine error, a
    Problem, a pydantic ValidationError of a request model, named by its first field as the 422
    handler does); None for anything else, a crash. The MCP server maps the same errors to tool
    and resource errors, so both protocols refuse the same input with the same words."""
    if isinstance(exc, BookIndexError):
        return status_of(exc), " ".join(str(exc).split())
    if isinstance(exc, Problem):
        return exc.status, exc.detail
    if isinstance(exc, ValidationError):
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid input"}
        return 422, f"{'.'.join(str(x) for x in first.get('loc', ()))}: {first.get('msg', '')}"
    return None
