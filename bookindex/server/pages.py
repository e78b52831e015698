"""Page images: a stored PDF page rendered with PyMuPDF at a chosen DPI, cached on disk.

The cache is `LIB/.server/pages/<doc_id>/<page>@<dpi>.png`; the doc id comes from the catalog
and the page and DPI are integers checked against the document, so no user string is part of
the path. Images are written atomically, so concurrent requests for one page are safe.
"""

from __future__ import annotations

from pathlib import Path

from bookindex.core.atomic import write_bytes_atomic
from bookindex.engine import DocumentInfo
from bookindex.parsing.pdf_open import open_pdf  # imports PyMuPDF on first call, without its layout model
from bookindex.server.problem import Problem

MIN_DPI = 36


def page_png(info: DocumentInfo, page: int, dpi: int, cache: Path, max_dpi: int) -> Path:
    """The PNG of 1-based `page` of a stored PDF document at `dpi`; rendered once, then cached."""
    if not MIN_DPI <= dpi <= max_dpi:
        raise Problem(422, f"dpi must be between {MIN_DPI} and {max_dpi}, not {dpi}")
    pages = int(info.pages or 0)
    if not 1 <= page <= pages:
        raise Problem(404, f"{info.name}: no page {page} (pages 1-{pages})")
    out = cache / info.doc_id / f"{page}@{dpi}.png"
    if out.is_file():
        return out
    source = Path(info.source or "")
    if source.suffix.lower() != ".pdf":
        raise Problem(404, f"{info.name}: page images exist for PDF documents only")
    if not source.is_file():
        raise Problem(404, f"{info.name}: the source PDF {source.name} is no longer stored; re-upload it to render pages")
    with open_pdf(source) as pdf:
        if page > pdf.page_count:
            raise Problem(404, f"{info.name}: no page {page} in {source.name} ({pdf.page_count} pages)")
        png = pdf[page - 1].get_pixmap(dpi=dpi).tobytes("png")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(out, png)
    return out
