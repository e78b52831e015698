"""Streaming a reply as it is generated: what the reader sees of a JSON reply while it is written.

Answers are requested as JSON (`{"answer": "...", "citations": [...]}`): small models cite more
reliably when the numbers are a field. A user should still see the answer text as the model
writes it, not braces and keys, so `FieldStreamer` follows the raw token deltas and passes on
only the decoded characters of one string field (escapes resolved), as soon as they are final.
A reply without that field (plain prose, a broken JSON) streams nothing here; the caller shows the
validated answer when it is complete.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

TextSink = Callable[[str], None]

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def first_string_field(json_schema: dict[str, Any] | None) -> str | None:
    """The first property of an object schema whose type is string (`answer` of `Grounded`)."""
    props = (json_schema or {}).get("properties") or {}
    for name, spec in props.items():
        if isinstance(spec, dict) and spec.get("type") == "string":
            return str(name)
    return None


class FieldStreamer:
    """Feed raw deltas with `feed`; the decoded text of `"<field>": "..."` goes to `sink`."""

    def __init__(self, field: str, sink: TextSink) -> None:
        self._start = re.compile(r'"' + re.escape(field) + r'"\s*:\s*"')
        self._sink = sink
        self._raw = ""
        self._pos = -1  # index in _raw of the next undecoded character of the value; -1: not found yet
        self._done = False
        self.emitted = ""

    def feed(self, delta: str) -> None:
        if self._done or not delta:
            return
        self._raw += delta
        if self._pos < 0:
            m = self._start.search(self._raw)
            if m is None:
                return
            self._pos = m.end()
        out: list[str] = []
        raw, i = self._raw, self._pos
        while i < len(raw):
            ch = raw[i]
            if ch == '"':
                self._done = True
                break
            if ch == "\\":
                if i + 1 >= len(raw):
                    break  # the escape is not complete yet
                nxt = raw[i + 1]
                if nxt == "u":
                    if i + 6 > len(raw):
                        break
                    try:
                        out.append(chr(int(raw[i + 2:i + 6], 16)))
                    except ValueError:
                        out.append(raw[i:i + 6])
                    i += 6
                    continue
                out.append(_ESCAPES.get(nxt, nxt))
                i += 2
                continue
            out.append(ch)
            i += 1
        self._pos = i
        if out:
            text = "".join(out)
            self.emitted += text
            self._sink(text)


def text_sink_for(json_schema: dict[str, Any] | None, sink: TextSink) -> Callable[[str], None]:
    """A raw-delta consumer: the whole text without a schema, else the schema's first string field."""
    if json_schema is None:
        return sink
    field = first_string_field(json_schema)
    if field is None:
        return lambda _delta: None
    return FieldStreamer(field, sink).feed


def replay_text(raw: str, json_schema: dict[str, Any] | None) -> str:
    """What streaming `raw` would have shown (a cache hit replays it as one chunk)."""
    shown: list[str] = []
    feed = text_sink_for(json_schema, shown.append)
    feed(raw)
    return "".join(shown)
