"""extract_json over broken replies as models write them (tests/json_cases.py): every one parses to
the value it meant, and a reply without JSON raises NoJSON (the client's cue for a repair call)."""

from __future__ import annotations

from typing import Any

import pytest
from json_cases import ALL_CASES, NO_JSON

from bookindex.providers.llm.jsonfix import NoJSON, extract_json


@pytest.mark.parametrize("raw,intended", [c[1:] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES])
def test_broken_reply_parses_to_the_intended_value(raw: str, intended: Any) -> None:
    assert extract_json(raw) == intended


@pytest.mark.parametrize("raw", NO_JSON)
def test_reply_without_json_raises_nojson(raw: str) -> None:
    with pytest.raises(NoJSON):
        extract_json(raw)


def test_prose_braces_alone_are_not_taken_for_json() -> None:
    """json-repair turns almost any bracket into a value ("{if}" -> ["if}"]); a repaired value
    is kept only when it has the type of its bracket, so prose braces still mean "no JSON"."""
    with pytest.raises(NoJSON):
        extract_json("Use {placeholders} and {if} here.")
