"""Import PyMuPDF without its ONNX layout mode, and open PDFs with clear errors.

PyMuPDF 2.x imports `pymupdf.layout` on `import pymupdf` when the `pymupdf_layout` package is
installed; that loads an ONNX model (~0.5 s, extra memory) and makes `find_tables()` run the
model on every page (about 10x slower). Our parser does its own layout analysis, so we block
that import when we are the first to import PyMuPDF (set BOOKINDEX_PYMUPDF_LAYOUT=1 to keep it)
and always call `find_tables(use_layout=False)` so tables never depend on the model.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from bookindex.core.errors import InputError

if TYPE_CHECKING:  # PyMuPDF is imported on first use (import_pymupdf below)
    from pymupdf import Document


def import_pymupdf() -> ModuleType:
    """Return the `pymupdf` module, imported with the ONNX layout analyzer disabled."""
    if "pymupdf" not in sys.modules and os.environ.get("BOOKINDEX_PYMUPDF_LAYOUT") != "1":
        sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]  # ImportError on import
    import pymupdf

    if hasattr(pymupdf, "no_recommend_layout"):
        pymupdf.no_recommend_layout()  # no "consider pymupdf_layout" banner on stdout
    return pymupdf


def open_pdf(path: str | Path) -> Document:
    """Open `path` as a PDF or raise InputError naming the file and what is wrong with it."""
    pymupdf = import_pymupdf()
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if not p.is_file():
        raise InputError(f"{p}: not a file")
    size = p.stat().st_size
    if size == 0:
        raise InputError(f"{p}: empty file, not a PDF")
    with p.open("rb") as fh:
        head = fh.read(1024)
        fh.seek(max(0, size - 4096))
        tail = fh.read()
    if b"%PDF-" not in head:
        raise InputError(f"{p}: not a PDF (no %PDF header)")
    try:
        doc = pymupdf.open(str(p), filetype="pdf")
    except Exception as exc:  # mupdf raises FileDataError / RuntimeError with terse messages
        raise InputError(f"{p}: corrupt or truncated PDF ({exc})") from exc
    try:
        if doc.needs_pass or doc.is_encrypted:
            raise InputError(f"{p}: encrypted PDF (password required); decrypt it first")
        truncated = b"%%EOF" not in tail
        if doc.page_count == 0:
            if truncated:  # mupdf's repair found no page tree: the file stops before it
                raise InputError(f"{p}: truncated PDF (no %%EOF marker, no readable pages; the file is incomplete)")
            raise InputError(f"{p}: PDF has no pages")
        if truncated and getattr(doc, "is_repaired", False):
            # mupdf rebuilt the xref of a file that stops mid-way: pages may silently vanish.
            raise InputError(f"{p}: truncated PDF (no %%EOF marker; the file is incomplete)")
        if getattr(doc, "is_repaired", False):
            try:  # a repaired file must at least give us its first and last page
                doc.load_page(0).get_text("text")
                doc.load_page(doc.page_count - 1).get_text("text")
            except Exception as exc:
                raise InputError(f"{p}: corrupt PDF, pages cannot be read ({exc})") from exc
    except InputError:
        doc.close()
        raise
    return doc
