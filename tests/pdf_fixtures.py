"""Fixture PDFs built at test time with reportlab (invariant=1: byte-stable output).

`build_handbook` writes a 4-page handbook: three numbered heading levels, a ruled table with
a caption above it, a raster image with a caption below it, a code listing, a running header
and page numbers on every page, and a two-column page. With outline=True it carries
bookmarks. EXPECTED_TREE is the section tree every parse of it must give. The other builders
make the bad inputs the parser must reject or flag.
"""

from __future__ import annotations

import io
from pathlib import Path

from reportlab.lib.pagesizes import A4, letter
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

W, H = A4
LEFT = 72
BODY_FONT, BODY_SIZE = "Times-Roman", 10
HEADER = "Fixture Handbook - Version 1.0"

LOREM = ("The parser reads spans and lines and joins them into blocks in reading order so that every "
         "paragraph ends up under the heading that introduces it in the document.")

# (heading text, level, bookmark key) in document order
HEADINGS = [
    ("1 Introduction", 1), ("1.1 Background", 2), ("1.1.1 Earlier work", 3), ("1.2 Scope", 2),
    ("2 Methods", 1), ("2.1 Data tables", 2), ("2.2 Figures", 2), ("2.2.1 Plot details", 3),
    ("3 Results", 1), ("3.1 Left findings", 2), ("3.2 Right findings", 2),
]
_SIZES = {1: 18, 2: 14, 3: 11.5}

# Expected tree: (section title, [children]) with leaves as (type, text prefix).
EXPECTED_TREE = [
    ("1 Introduction", [("text", "Welcome to the fixture"),
        ("1.1 Background", [("text", "Background paragraph"),
            ("1.1.1 Earlier work", [("text", "Earlier work paragraph"), ("code", "def parse(path):")])]),
        ("1.2 Scope", [("text", "Scope paragraph")])]),
    ("2 Methods", [("text", "Methods paragraph"),
        ("2.1 Data tables", [("text", "Data tables paragraph"), ("table", "| Run | Pages | Seconds |"),
                             ("text", "After the table")]),
        ("2.2 Figures", [("text", "Figures paragraph"), ("image", "Figure 1: A grey test pattern"),
            ("2.2.1 Plot details", [("text", "Plot details paragraph")])])]),
    ("3 Results", [("text", "Results intro spanning"),
        ("3.1 Left findings", [("text", "Left column first"), ("text", "Left column second")]),
        ("3.2 Right findings", [("text", "Right column first"), ("text", "Right column second")])]),
]


def _canvas(path: Path, **kw) -> canvas.Canvas:
    c = canvas.Canvas(str(path), pagesize=A4, invariant=1, **kw)
    c.setTitle("Fixture Handbook")
    return c


def _furniture(c: canvas.Canvas, page_no: int) -> None:
    c.setFont("Helvetica", 8)
    c.drawString(LEFT, H - 36, HEADER)
    c.drawRightString(W - LEFT, H - 36, "Chapter guide")
    c.drawCentredString(W / 2, 30, str(page_no))


def _heading(c: canvas.Canvas, y: float, text: str, level: int, outline: bool, x: float = LEFT) -> float:
    c.setFont("Helvetica-Bold", _SIZES[level])
    c.drawString(x, y, text)
    if outline:
        key = "h_" + text.split()[0]
        c.bookmarkHorizontal(key, x, y + _SIZES[level] + 2)
        c.addOutlineEntry(text, key, level=level - 1)
    return y - _SIZES[level] - 10


def _para(c: canvas.Canvas, y: float, text: str, width: float = W - 2 * LEFT, x: float = LEFT) -> float:
    c.setFont(BODY_FONT, BODY_SIZE)
    words, line = text.split(), ""
    for w in words:
        cand = (line + " " + w).strip()
        if c.stringWidth(cand, BODY_FONT, BODY_SIZE) > width and line:
            c.drawString(x, y, line)
            y -= 12.5
            line = w
        else:
            line = cand
    if line:
        c.drawString(x, y, line)
        y -= 12.5
    return y - 10


def _pattern_png() -> ImageReader:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (160, 100), (200, 200, 200))
    d = ImageDraw.Draw(img)
    for k in range(0, 160, 20):
        d.line([(k, 0), (k, 100)], fill=(90, 90, 90), width=3)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    buf.seek(0)
    return ImageReader(buf)


def build_handbook(path: Path, outline: bool = True) -> Path:
    c = _canvas(path)
    if outline:
        c.showOutline()
    # page 1: three heading levels + code
    _furniture(c, 1)
    y = H - 90
    y = _heading(c, y, "1 Introduction", 1, outline)
    y = _para(c, y, "Welcome to the fixture handbook. " + LOREM)
    y = _heading(c, y, "1.1 Background", 2, outline)
    y = _para(c, y, "Background paragraph with a word in " + LOREM)
    y = _heading(c, y, "1.1.1 Earlier work", 3, outline)
    y = _para(c, y, "Earlier work paragraph. " + LOREM)
    c.setFont("Courier", 9)
    for k, ln in enumerate(["def parse(path):", "    doc = open(path)", "    return doc.blocks"]):
        c.drawString(LEFT + 18, y - 11 * k, ln)
    y -= 11 * 3 + 14
    y = _heading(c, y, "1.2 Scope", 2, outline)
    _para(c, y, "Scope paragraph. " + LOREM)
    c.showPage()
    # page 2: ruled table with caption above, image with caption below
    _furniture(c, 2)
    y = H - 90
    y = _heading(c, y, "2 Methods", 1, outline)
    y = _para(c, y, "Methods paragraph. " + LOREM)
    y = _heading(c, y, "2.1 Data tables", 2, outline)
    y = _para(c, y, "Data tables paragraph introduces the measured runs below.")
    c.setFont(BODY_FONT, BODY_SIZE)
    c.drawString(LEFT, y, "Table 1: Parsing speed of three runs")
    y -= 8
    rows = [["Run", "Pages", "Seconds"], ["alpha", "311", "2.5"], ["beta", "36", "0.3"], ["gamma", "50", "0.4"]]
    col_x = [LEFT, LEFT + 120, LEFT + 220, LEFT + 320]
    row_h = 16
    top = y
    c.setLineWidth(0.8)
    for r in range(len(rows) + 1):
        c.line(col_x[0], top - r * row_h, col_x[-1], top - r * row_h)
    for x in col_x:
        c.line(x, top, x, top - len(rows) * row_h)
    for r, row in enumerate(rows):
        c.setFont("Times-Bold" if r == 0 else BODY_FONT, BODY_SIZE)
        for k, cell in enumerate(row):
            c.drawString(col_x[k] + 4, top - r * row_h - 11.5, cell)
    y = top - len(rows) * row_h - 22
    y = _para(c, y, "After the table the text goes on with its discussion of the runs.")
    y = _heading(c, y, "2.2 Figures", 2, outline)
    y = _para(c, y, "Figures paragraph shows the pattern.")
    c.drawImage(_pattern_png(), LEFT, y - 100, width=160, height=100)
    y -= 100 + 14
    c.setFont(BODY_FONT, 9)
    c.drawString(LEFT, y, "Figure 1: A grey test pattern")
    y -= 28
    y = _heading(c, y, "2.2.1 Plot details", 3, outline)
    _para(c, y, "Plot details paragraph. " + LOREM)
    c.showPage()
    # page 3: full-width heading and intro, then two columns
    _furniture(c, 3)
    y = H - 90
    y = _heading(c, y, "3 Results", 1, outline)
    y = _para(c, y, "Results intro spanning the full width of the page before the two columns begin. " + LOREM)
    colw = (W - 2 * LEFT - 24) / 2
    xr = LEFT + colw + 24
    yl = _heading(c, y, "3.1 Left findings", 2, outline, x=LEFT)
    yl = _para(c, yl, "Left column first paragraph. " + LOREM, width=colw)
    _para(c, yl, "Left column second paragraph. " + LOREM, width=colw)
    yr = _heading(c, y, "3.2 Right findings", 2, outline, x=xr)
    yr = _para(c, yr, "Right column first paragraph. " + LOREM, width=colw, x=xr)
    _para(c, yr, "Right column second paragraph. " + LOREM, width=colw, x=xr)
    c.showPage()
    c.save()
    return path


def build_scanned(path: Path) -> Path:
    """One page whose only content is a picture of text (no text layer)."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", (1240, 1754), 255)
    d = ImageDraw.Draw(img)
    try:
        font = ImageFont.truetype("DejaVuSans.ttf", 48)
    except OSError:
        font = ImageFont.load_default(size=48)
    for k, line in enumerate(["Scanned handbook page", "Installation guide", "Press the power button"]):
        d.text((120, 200 + 110 * k), line, fill=0, font=font)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    buf.seek(0)
    c = _canvas(path)
    c.drawImage(ImageReader(buf), 0, 0, width=W, height=H)
    c.showPage()
    c.save()
    return path


def build_encrypted(path: Path) -> Path:
    from reportlab.lib import pdfencrypt

    enc = pdfencrypt.StandardEncryption("secret", ownerPassword="owner", canPrint=0)
    c = _canvas(path, encrypt=enc)
    c.drawString(LEFT, H - 90, "Secret text")
    c.showPage()
    c.save()
    return path


def build_truncated(path: Path, source: Path) -> Path:
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def raw_pdf(objs: list[bytes]) -> bytes:
    """A PDF file written by hand from its objects (object 1 is the root): for PDFs that no
    library would write, e.g. an empty page tree or a damaged page."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for k, o in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % k + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def build_zero_pages(path: Path) -> Path:
    """A syntactically valid PDF whose page tree is empty."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    path.write_bytes(raw_pdf(objs))
    return path


def tree_shape(tree, node=None) -> list:
    """A DocumentTree as nested (title, children) / (type, text prefix) like EXPECTED_TREE."""
    node = tree.root if node is None else node
    out = []
    for cid in node.children:
        ch = tree.nodes[cid]
        if ch.type == "section":
            out.append((ch.title, tree_shape(tree, ch)))
        else:
            out.append((ch.type, ch.text))
    return out


def matches_expected(shape: list, expected: list) -> bool:
    if len(shape) != len(expected):
        return False
    for got, want in zip(shape, expected):
        if isinstance(want[1], list):
            if got[0] != want[0] or not isinstance(got[1], list) or not matches_expected(got[1], want[1]):
                return False
        elif got[0] != want[0] or not str(got[1]).startswith(want[1]):
            return False
    return True


def build_borderless_table(path: Path) -> Path:
    """A paragraph, then a 3-column table without any rules (aligned columns only)."""
    c = _canvas(path)
    y = _para(c, H - 90, "Options of the command are listed below. " + LOREM)
    rows = [["Option", "Default", "Meaning"], ["--fast", "off", "skip tables"], ["--depth", "3", "tree depth"],
            ["--out", "stdout", "where to write"], ["--quiet", "off", "no progress"]]
    for r, row in enumerate(rows):
        c.setFont("Times-Bold" if r == 0 else BODY_FONT, BODY_SIZE)
        for k, cell in enumerate(row):
            c.drawString(LEFT + 20 + 130 * k, y - 16 * r, cell)
    _para(c, y - 16 * len(rows) - 14, "After the options the text continues.")
    c.showPage()
    c.save()
    return path


def build_run_in(path: Path) -> Path:
    """Run-in headings: a bold word opening a paragraph on the same baseline, then body text."""
    c = _canvas(path)
    y = H - 90
    c.setFont("Helvetica-Bold", 14)
    c.drawString(LEFT, y, "Functions")
    y -= 30
    for head, body in [("Column", "The column function returns the value of a column in the data file."),
                       ("Valid", "The valid function tells whether a column holds a number.")]:
        c.setFont("Times-Bold", BODY_SIZE)
        c.drawString(LEFT, y, head)
        c.setFont(BODY_FONT, BODY_SIZE)
        c.drawString(LEFT + 50, y, body)
        c.drawString(LEFT, y - 12.5, "It is used inside using specifiers of plot commands only.")
        y -= 40
    c.setFont(BODY_FONT, BODY_SIZE)
    c.drawString(LEFT, y, "Bold words such as")
    c.setFont("Times-Bold", BODY_SIZE)
    c.drawString(LEFT + 80, y, "notice")
    c.setFont(BODY_FONT, BODY_SIZE)
    c.drawString(LEFT + 110, y, "inside a sentence are not headings.")
    c.showPage()
    c.save()
    return path


STATEMENT_ROWS = [["Net income", "5,363", "4,869"], ["Depreciation and amortization", "1,488", "1,544"],
                  ["Purchases of property, plant and equipment", "(1,577)", "(1,373)"],
                  ["Net cash provided by operating activities", "6,439", "6,240"]]


def build_statement(path: Path) -> Path:
    """A report page, then a statement page laid out as filings print them: the statement's
    bold title in the page's header band with its bold subtitle on the next line (the two reach
    the parser as separate blocks), a bold column header ("Fiscal Year 2018 2017") over the right-hand
    columns just above a ruled table, and a title whose last letter is set apart by a space
    ("Cash Flow s"). A bold section heading opens the report page, whose text prints "flows"."""
    c = _canvas(path)
    y = _heading_plain(c, H - 90, "Liquidity and Capital Resources")
    for _ in range(3):
        y = _para(c, y, "Operating cash flows and investing cash flows are discussed here; the cash flows of the "
                        "year rose. " + LOREM)
    c.showPage()
    c.setFont("Helvetica-Bold", 12)
    c.drawString(LEFT, H - 62, "Consolidated Statement of Cash Flow s")
    c.drawString(LEFT, H - 78, "Years ended December 31")
    c.setFont("Helvetica-Bold", 12)
    c.drawRightString(LEFT + 330, H - 110, "Fiscal Year 2018")
    c.drawRightString(LEFT + 410, H - 110, "2017")
    col_x = [LEFT, LEFT + 250, LEFT + 340, LEFT + 420]
    top, row_h = H - 116, 16
    c.setLineWidth(0.8)
    for r in range(len(STATEMENT_ROWS) + 1):
        c.line(col_x[0], top - r * row_h, col_x[-1], top - r * row_h)
    for x in col_x:
        c.line(x, top, x, top - len(STATEMENT_ROWS) * row_h)
    c.setFont(BODY_FONT, BODY_SIZE)
    for r, row in enumerate(STATEMENT_ROWS):
        for k, cell in enumerate(row):
            c.drawString(col_x[k] + 4, top - r * row_h - 11.5, cell)
    _para(c, top - len(STATEMENT_ROWS) * row_h - 22, "The accompanying notes are an integral part of this statement.")
    c.showPage()
    c.save()
    return path


def _heading_plain(c: canvas.Canvas, y: float, text: str) -> float:
    c.setFont("Helvetica-Bold", 12)
    c.drawString(LEFT, y, text)
    return y - 24


# -- reference entries (parsing.entries) ------------------------------------------------------

def _line(c: canvas.Canvas, x: float, y: float, text: str, font: str = BODY_FONT, size: float = BODY_SIZE) -> None:
    c.setFont(font, size)
    c.drawString(x, y, text)


def build_texinfo_entries(path: Path) -> Path:
    """A Texinfo (gdoc) function reference: a section, then per function a bold title line with
    the name spelled with spaces, a monospace signature whose first line ends with a roman
    "[Function]" tag and whose rest is a second, indented line (a block of its own), and an
    indented body (parameters, description); then a paragraph back at the margin."""
    c = _canvas(path)
    y = H - 90
    y = _heading(c, y, "4 Function reference", 1, False)
    y = _heading(c, y, "4.3 DER functions", 2, False)
    funcs = [
        ("asn1 der decoding", "int asn1_der_decoding (asn1_node * element, const void * ider,",
         "int ider_len, char * errorDescription)",
         ["element: pointer to an ASN1 structure.", "ider: vector that contains the DER encoding.",
          "ider len: number of bytes of ider."],
         "Fill the structure element with values of a DER encoding string. The structure must just be created."),
        ("asn1 der coding", "int asn1_der_coding (asn1_node element, const char * name,",
         "void * ider, int * len, char * ErrorDescription)",
         ["element: pointer to an ASN1 element.", "name: the name of the structure you want to encode."],
         "Creates the DER encoding for the NAME structure (inside the POINTER structure)."),
    ]
    for title, sig1, sig2, params, desc in funcs:
        _line(c, LEFT, y, title, "Times-Bold", 13)
        y -= 22
        _line(c, LEFT, y, sig1, "Courier", 9.5)
        _line(c, W - LEFT - 44, y, "[Function]", BODY_FONT, 10)
        y -= 13
        _line(c, LEFT + 50, y, sig2, "Courier-Oblique", 9.5)
        y -= 18
        for p in params:
            _line(c, LEFT + 29, y, p)
            y -= 16
        y = _para(c, y, desc, width=W - 2 * LEFT - 29, x=LEFT + 29)
        y -= 8
    _para(c, y, "All DER functions return ASN1_SUCCESS on success and an error code otherwise.")
    c.showPage()
    c.save()
    return path


def build_sphinx_entries(path: Path) -> Path:
    """Sphinx/Doxygen-style API reference: monospace (bold) signature lines at the margin, each
    followed by its description indented below it; the section ends with a plain paragraph."""
    c = _canvas(path)
    y = H - 90
    y = _heading(c, y, "API reference", 1, False)
    y = _para(c, y, "The functions below are the public interface of the library.")
    api = [
        ("Courier-Bold", "parse_file(path, settings, llm=None)",
         "Parse one document with the configured parser and return its blocks in reading order."),
        ("Courier-Bold", "build_tree(doc_id, name, blocks)",
         "Assemble the section tree from blocks whose heading levels are known."),
        ("Courier", "int bi_open(const char * path, int flags)",
         "Open an index folder for reading and return a handle, or a negative error code."),
    ]
    for font, sig, desc in api:
        _line(c, LEFT, y, sig, font, 10)
        y -= 15
        y = _para(c, y, desc, width=W - 2 * LEFT - 30, x=LEFT + 30)
    _para(c, y - 6, "Every function raises InputError for a file it cannot read.")
    c.showPage()
    c.save()
    return path


def build_option_list(path: Path) -> Path:
    """A program's options: each `-o, --output FILE` line set apart (bold) with its description
    indented below; a closing paragraph at the margin."""
    c = _canvas(path)
    y = H - 90
    y = _heading(c, y, "2 Running bookindex", 1, False)
    y = _heading(c, y, "2.1 Options", 2, False)
    y = _para(c, y, "The command accepts the following options, in any order.")
    opts = [("-o, --output FILE", "Write the answer to FILE instead of the standard output."),
            ("-v, --verbose", "Print every retrieval step and its timing while answering."),
            ("-q", "Quiet mode: print nothing but the answer itself.")]
    for spec, desc in opts:
        _line(c, LEFT + 10, y, spec, "Courier-Bold", 10)
        y -= 14
        y = _para(c, y, desc, width=W - 2 * LEFT - 50, x=LEFT + 50)
    _para(c, y, "Options may also be set in the configuration file.")
    c.showPage()
    c.save()
    return path


def build_man_page(path: Path) -> Path:
    """A man page as groff sets it: bold NAME / SYNOPSIS / DESCRIPTION / OPTIONS headings at the
    margin, indented text, and in OPTIONS a bold option tag with its description indented more."""
    c = _canvas(path)
    y = H - 60
    _line(c, LEFT, y, "BOOKINDEX(1)", BODY_FONT, 10)
    c.drawRightString(W - LEFT, y, "BOOKINDEX(1)")
    y -= 34
    body = LEFT + 36

    def head(text: str) -> None:
        nonlocal y
        _line(c, LEFT, y, text, "Times-Bold", 10)
        y -= 14

    head("NAME")
    y = _para(c, y, "bookindex - answer questions over long documents", x=body)
    head("SYNOPSIS")
    _line(c, body, y, "bookindex", "Times-Bold", 10)
    _line(c, body + 50, y, "[OPTION]... QUESTION FILE...", BODY_FONT, 10)
    y -= 24
    head("DESCRIPTION")
    y = _para(c, y, "Index the FILEs and answer the QUESTION with the pages that support the answer. " + LOREM,
              width=W - body - LEFT, x=body)
    head("OPTIONS")
    for spec, desc in [("-a, --all", "search every indexed document, not only the FILEs given."),
                       ("-k, --top-k=N", "return at most N evidence passages (default 10)."),
                       ("--json", "print the answer and its evidence as one JSON object.")]:
        _line(c, body, y, spec, "Times-Bold", 10)
        y -= 13
        y = _para(c, y, desc, width=W - body - 36 - LEFT, x=body + 36)
    head("SEE ALSO")
    _para(c, y, "The full manual is maintained as a PDF handbook.", x=body)
    c.showPage()
    c.save()
    return path


def build_r_manual(path: Path) -> Path:
    """Two topics of an R reference manual (Rd2pdf layout): a header line with the topic name and
    its title, then the Rd labels Description, Usage (code), Arguments (name + description
    rows), Details and Examples, in bold at the margin with their content indented."""
    c = _canvas(path)
    y = H - 80
    topics = [
        ("zoo", "Z's Ordered Observations", "zoo is the creator for an S3 class of indexed totally ordered observations.",
         ["zoo(x = NULL, order.by = index(x), frequency = NULL)", "## S3 method for class 'zoo'",
          "print(x, style = c(\"horizontal\", \"vertical\"), ...)"],
         [("x", "a numeric vector, matrix or a factor."), ("order.by", "an index vector with unique entries."),
          ("frequency", "a numeric indicating the frequency of order.by.")],
         "The zoo class stores observations in x ordered by the index order.by."),
        ("index", "Extracting/Replacing the Index of Objects", "Generic functions for extracting the index of an object.",
         ["index(x, ...)", "time(x, ...)"],
         [("x", "an object.")],
         "The index of a zoo object is the vector its observations are ordered by."),
    ]
    for name, title, desc, usage, args, details in topics:
        _line(c, LEFT, y, name, "Helvetica-Bold", 12)
        c.setFont("Helvetica-Bold", 12)
        c.drawRightString(W - LEFT, y, title)
        y -= 26
        for label, draw in [("Description", "desc"), ("Usage", "usage"), ("Arguments", "args"), ("Details", "details")]:
            _line(c, LEFT, y, label, "Helvetica-Bold", 10)
            y -= 16
            if draw == "desc":
                y = _para(c, y, desc, width=W - 2 * LEFT - 20, x=LEFT + 20)
            elif draw == "usage":
                for ln in usage:
                    _line(c, LEFT + 20, y, ln, "Courier", 9)
                    y -= 11
                y -= 10
            elif draw == "args":
                for a, d in args:
                    _line(c, LEFT + 20, y, a, "Courier", 9)
                    _line(c, LEFT + 90, y, d)
                    y -= 13
                y -= 10
            else:
                y = _para(c, y, details, width=W - 2 * LEFT - 20, x=LEFT + 20)
        y -= 16
    c.showPage()
    c.save()
    return path


def build_cover_report(path: Path) -> Path:
    """A one-page report whose cover states its title, publication date and period (identity tests)."""
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica-Bold", 18)
    c.drawString(72, 700, "Annual Report of the Harbour Board")
    c.setFont("Helvetica", 10)
    for i, line in enumerate(["Published March 2, 2021", "For the year ended December 31, 2020"] +
                             ["The Harbour Board maintains the harbour and its lights."] * 6):
        c.drawString(72, 660 - 14 * i, line)
    c.showPage()
    c.save()
    return path


# (heading, paragraph) of each numbered page of `build_printed_numbers`: one topic a page
PRINTED_CHAPTERS = [
    ("1 Berths", "Ships moor at the six berths of the inner basin, each with its own bollards and fenders."),
    ("2 Crane loads", "The gantry crane on the east quay lifts at most forty tonnes in calm weather."),
    ("3 Pilotage", "A pilot boards every vessel longer than eighty metres before it enters the channel."),
    ("4 Tides", "Spring tides raise the water at the lock gates by five metres twice a day."),
    ("5 Fuel", "Bunker fuel is delivered by barge to the outer berths only, never inside the basin."),
    ("6 Waste", "Oily waste goes to the reception tank near the harbour office, free of charge."),
]
PRINTED_OFFSET = 4  # physical page = printed number + 4: a cover and three front-matter pages


def build_printed_numbers(path: Path) -> Path:
    """A manual whose pages print numbers four behind the physical ones: a cover and three
    unnumbered front-matter pages, then six pages printing 1-6 in their footers, one topic each
    (`PRINTED_CHAPTERS`). The PDF has no page-label tree: the numbering is read from the text."""
    c = _canvas(path)
    c.setFont("Helvetica-Bold", 24)
    c.drawString(LEFT, H / 2, "Harbour Operations Manual")
    c.showPage()
    for title in ("Contents", "Foreword", "Safety notice"):
        y = _heading(c, H - 100, title, 1, outline=False)
        _para(c, y, f"The {title.lower()} of the manual. " + LOREM)
        c.showPage()
    for number, (title, text) in enumerate(PRINTED_CHAPTERS, 1):
        y = _heading(c, H - 100, title, 1, outline=False)
        _para(c, y, text)
        c.setFont("Helvetica", 8)
        c.drawCentredString(W / 2, 30, str(number))
        c.showPage()
    c.save()
    return path


# -- front and back matter (parsing.matter, parsing.heading_numbers) --------------------------

MATTER_CONTENTS = [("1 Priming", "3"), ("1.1 Filling the housing", "3"), ("2 Valves", "4"), ("2.9 Seats", "4"),
                   ("2.10 Relief and check valves", "4"), ("3 Care", "5"), ("Index", "6")]
MATTER_FIGURES = [("Figure 1 The pump housing", "3"), ("Figure 2 A valve seat", "4")]
MATTER_INDEX = [("housing, 3", "priming, 3, 4", "pump, 3"), ("relief valve, 4", "seat, 4", "valve, 4, 5")]


def _leader_line(c: canvas.Canvas, y: float, text: str, page: str, x: float = LEFT) -> None:
    """A contents line: its text, dot leaders, its page number set flush right."""
    c.setFont(BODY_FONT, BODY_SIZE)
    right = W - LEFT
    c.drawString(x, y, text)
    c.drawRightString(right, y, page)
    start = x + c.stringWidth(text, BODY_FONT, BODY_SIZE) + 6
    end = right - c.stringWidth(page, BODY_FONT, BODY_SIZE) - 6
    dots = " ".join(["."] * max(3, int((end - start) / c.stringWidth(". ", BODY_FONT, BODY_SIZE))))
    c.drawString(start, y, dots)


def build_matter_book(path: Path) -> Path:
    """A 6-page booklet: a cover; a "Contents" page (numbered entries with dot leaders) that also
    holds a "List of Figures"; three pages of numbered chapters, one heading ("2.10 Relief and
    check valves") set as DocBook sets it, the bold number a quad left of the words in another
    font; and an "Index" on the last page (a letter over each of two columns of "term, page"
    entries)."""
    c = _canvas(path)
    c.setFont("Helvetica-Bold", 24)
    c.drawString(LEFT, H - 200, "Pump Handbook")
    c.setFont(BODY_FONT, 12)
    c.drawString(LEFT, H - 230, "Version 3")
    c.showPage()
    c.setFont("Helvetica-Bold", 18)
    c.drawString(LEFT, H - 90, "Contents")
    y = H - 130
    for text, page in MATTER_CONTENTS:
        _leader_line(c, y, text, page, x=LEFT + (18 if "." in text.split()[0] else 0))
        y -= 18
    c.setFont("Helvetica-Bold", 18)
    c.drawString(LEFT, y - 30, "List of Figures")
    y -= 70
    for text, page in MATTER_FIGURES:
        _leader_line(c, y, text, page)
        y -= 18
    c.showPage()
    chapters = [[("1 Priming", 1, "Priming fills the pump housing with water before the first start."),
                 ("1.1 Filling the housing", 2, "Open the vent screw and pour water into the housing.")],
                [("2 Valves", 1, "Every pump has an inlet valve and an outlet valve of brass."),
                 ("2.9 Seats", 2, "A valve seat wears with every cycle and is replaced every year.")],
                [("3 Care", 1, "Drain the pump before frost and oil the shaft every spring.")]]
    for k, chapter in enumerate(chapters):
        y = H - 90
        for text, level, body in chapter:
            y = _heading(c, y, text, level, False)
            y = _para(c, y, body + " " + LOREM)
        if k == 1:  # the number in Helvetica-Bold, the words in Courier-Bold, a quad apart
            c.setFont("Helvetica-Bold", 14)
            c.drawString(LEFT, y, "2.10")
            c.setFont("Courier-Bold", 14)
            c.drawString(LEFT + c.stringWidth("2.10", "Helvetica-Bold", 14) + 14, y, "Relief and check valves")
            _para(c, y - 24, "A relief valve opens when the pressure passes six bar. " + LOREM)
        c.showPage()
    c.setFont("Helvetica-Bold", 18)
    c.drawString(LEFT, H - 90, "Index")
    for col, entries in enumerate(MATTER_INDEX):
        x = LEFT + col * 240
        c.setFont("Helvetica-Bold", 12)
        c.drawString(x, H - 130, entries[0][0].upper())
        c.setFont(BODY_FONT, BODY_SIZE)
        for r, entry in enumerate(entries):
            c.drawString(x, H - 150 - 14 * r, entry)
    c.showPage()
    c.save()
    return path
