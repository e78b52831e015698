"""User-supplied strings checked before they reach a lookup or a file name.

The Engine looks documents and nodes up in the catalog, never by joining paths, but a server
also names files after them (page images, uploads), so every id is checked here first:
a bad one is a 400, never a path outside the library.
"""

from __future__ import annotations

import re
import unicodedata

from bookindex.server.problem import Problem

DOC_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._ ()+-]{0,199}")  # a doc id, file name or stem
NODE_ID = re.compile(r"[0-9a-f]{4,64}-[A-Za-z0-9_]{1,40}")  # "<doc id>-<00042|root>"
ENTITY_ID = re.compile(r"[0-9a-f]{4,64}-e[0-9A-Za-z_]{1,40}")  # "<doc id>-e000060"
JOB_ID = re.compile(r"[0-9a-f]{32}")
LIBRARY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # a library: a folder under the server's root
UPLOAD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._ ()+-]{0,199}")


def doc_ref(value: str) -> str:
    """A document reference (id, id prefix, file name or stem) with no path syntax in it."""
    if not DOC_REF.fullmatch(value) or ".." in value:
        raise Problem(400, f"invalid document reference {value[:80]!r}: use a document id or file name")
    return value


def node_id(value: str) -> str:
    if not NODE_ID.fullmatch(value):
        raise Problem(400, f"invalid node id {value[:80]!r}: node ids look like '3917eb460d87e275-00042'")
    return value


def entity_id(value: str) -> str:
    if not ENTITY_ID.fullmatch(value):
        raise Problem(400, f"invalid entity id {value[:80]!r}: entity ids look like '3917eb460d87e275-e000060'")
    return value


def library_name(value: str) -> str:
    if not LIBRARY_NAME.fullmatch(value) or ".." in value:
        raise Problem(400, f"invalid library name {value[:80]!r}: letters, digits and '._-', at most 64")
    return value


def job_id(value: str) -> str:
    if not JOB_ID.fullmatch(value):
        raise Problem(400, f"invalid job id {value[:80]!r}")
    return value


def upload_name(filename: str | None) -> str:
    """The uploaded file's base name, normalised; a name with path syntax or control characters
    is refused rather than cleaned, so what is stored is what the client named."""
    name = unicodedata.normalize("NFC", filename or "").strip()
    if not name or "/" in name or "\\" in name or not UPLOAD_NAME.fullmatch(name) or ".." in name:
        raise Problem(400, f"invalid file name {str(filename)[:80]!r}: letters, digits, '._ ()+-' only")
    return name
