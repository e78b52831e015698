"""Decide whether bytes are text, and decode them.

Why: UTF-16 files were called "binary data", and random bytes without a NUL decoded as Latin-1
and were indexed as Markdown. Text is decoded from a byte-order mark (UTF-8, UTF-16, UTF-32),
from the NUL pattern of BOM-less UTF-16, as UTF-8, or as Latin-1 when few control characters
show; anything else is refused with a message that says what was found.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from bookindex.core.errors import InputError

SAMPLE = 1 << 16  # bytes inspected to tell text from binary
MAX_CONTROL = 0.05  # share of control characters above which Latin-1 "text" is binary
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_ALLOWED_C0 = {9, 10, 12, 13}


def guess_encoding(raw: bytes, path: Path, kind: str = "text") -> str:
    """The codec to decode `raw` (a file's first bytes or all of it) with, or InputError."""
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            return codec
    sample = raw[:SAMPLE]
    if b"\x00" in sample:
        even, odd = sample[0::2].count(0), sample[1::2].count(0)
        half = max(1, len(sample) // 2)
        if odd > 0.3 * half and even < 0.05 * half:
            return "utf-16-le"
        if even > 0.3 * half and odd < 0.05 * half:
            return "utf-16-be"
        raise InputError(f"{path}: binary data (NUL bytes), not a {kind} file")
    try:
        sample.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as e:
        if e.start >= len(sample) - 4 and len(raw) > len(sample):
            return "utf-8"  # a character cut by the sample's end
    control = sum(1 for b in sample if (b < 32 and b not in _ALLOWED_C0) or 0x7F <= b <= 0x9F)
    if sample and control / len(sample) > MAX_CONTROL:
        raise InputError(f"{path}: binary data ({control / len(sample):.0%} control bytes, not UTF-8), "
                         f"not a {kind} file")
    return "latin-1"


def decode_text(raw: bytes, path: Path, kind: str = "text") -> str:
    """The whole file as text, decoded with `guess_encoding`; a bad byte later on is named."""
    codec = guess_encoding(raw, path, kind)
    try:
        return raw.decode(codec)
    except UnicodeDecodeError as e:
        if codec == "utf-8":
            return raw.decode("latin-1")  # invalid UTF-8 past the sample: keep the old fallback
        raise InputError(f"{path}: looks like {codec.upper()} text, but byte {e.start} is invalid "
                         f"({e.reason}); convert it to UTF-8") from None
