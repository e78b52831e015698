"""Parsing the large JSON files of a document folder (its tree, its graph, the graph's entities).

orjson parses them about twice as fast as the standard library (a dependency); the standard
library is the fallback where orjson is absent. One helper, so every reader of those files
parses them the same way.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson

    def loads(data: bytes) -> Any:
        """The value of the JSON document `data`."""
        return orjson.loads(data)
except ImportError:  # pragma: no cover
    def loads(data: bytes) -> Any:
        """The value of the JSON document `data`."""
        return json.loads(data)
