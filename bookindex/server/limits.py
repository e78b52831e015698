"""One set of request limits for the REST and the MCP server, so a value refused on one is
refused on the other with the same message: question length, k, depth. Out-of-range values are
refused (422), never clamped, so a client learns that its request was not what it got.

The configurable limits live in `[server]` (`ServerSettings`): `max_question_chars`,
`max_body_kb`, `max_upload_mb`; the fixed ranges are here. No web framework is imported.
"""

from __future__ import annotations

from bookindex.core.config import ServerSettings
from bookindex.server.problem import Problem
from bookindex.server.views import MAX_DEPTH

MAX_K = 100  # hits a search returns at most (REST /search, MCP search and skills_search)


def question(text: str, limits: ServerSettings, field: str = "question") -> str:
    """A question or query: not blank, at most `max_question_chars` characters."""
    if not text.strip():
        raise Problem(422, f"{field}: must not be empty")
    if len(text) > limits.max_question_chars:
        raise Problem(422, f"{field}: {len(text)} characters; the limit is {limits.max_question_chars}")
    return text


def k(value: int, field: str = "k") -> int:
    if not 1 <= value <= MAX_K:
        raise Problem(422, f"{field}: must be between 1 and {MAX_K}, not {value}")
    return value


def depth(value: int, field: str = "depth") -> int:
    if not 0 <= value <= MAX_DEPTH:
        raise Problem(422, f"{field}: must be between 0 and {MAX_DEPTH}, not {value}")
    return value
