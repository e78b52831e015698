"""Reference entries (a function, a variable, a command-line option, an R topic) as sub-sections.

Why: a reference manual documents each function in four to six loose blocks — a title line, a
signature that layout parsing splits over two or three blocks, a parameter list and a
description — all siblings under a section such as "4.3 DER functions" that holds a hundred
of them. No node then holds a function's name together with what it does: a question that
describes the behaviour ("which function decodes a DER buffer?") finds a description whose
node never names the function, and a question that names the function finds a signature
without its description. This pass groups each entry into one sub-section titled by the
entry's NAME, whose children are the joined signature, the parameters and the description; its
children are then searched with the name in front of them (`node_text(..., "lexical")`
prefixes the two nearest section titles) and the entry section itself is searched by its title
path plus a one-sentence summary (`extra["entry"]["summary"]`, read by `node_text`).

It runs on the blocks after section filtering has fixed the heading levels (outline, rules or
the LLM pass, so entries found here survive all three) and before `build_tree`:
`parsing.dispatch.to_tree` calls `mark_entries`. An entry's title block gets the level of its
enclosing section + 1, so the next entry or heading closes it; the first block after an entry
that does not belong to it carries `extra["after_entry"]`, on which `build_tree` closes the
entry, so text that follows the last entry stays in the enclosing section.

Layout conventions recognized (rules only, no model):

- **Texinfo** `@deffn`/`@deftypefn`/`@defvar`...: the first signature line ends with a category
  tag, "[Function]", "[Variable]", "[Macro]", "[Command]", "[Data type]"...; the rest of the
  signature comes as further blocks, indented, until its parentheses balance; the body is
  indented (TeX's \\defbodyindent) relative to the signature. Manuals made with gdoc (libtasn1,
  GnuTLS, libidn) put a bold title line before the signature: the name with spaces for
  underscores ("asn1 der decoding"); it becomes the entry's heading.
- **Sphinx / Doxygen / man-page signatures**: a monospace or bold line `[type] name(args)`
  followed by a more indented description; or such a line right below a heading that names
  the same thing (Doxygen's "foo()" member heading).
- **Option lists**: `-x, --long=ARG` set apart with its description indented below it (man
  pages, .TP paragraphs), a run of lines each starting with an option and going on with its
  description, or a `--help` listing in a code block (split into one entry per option).
- **R (Rd) manuals**: a topic whose "Usage" label is followed by `name(args)` code: the topic
  body from its "Description" label to the next topic or heading becomes the entry, named by
  the first function in Usage; the Rd labels (Usage, Arguments, ...) inside it are not
  headings.

Headings that the pass itself creates are marked `extra["entry"]["promoted"] = True`: they are
not outline headings and `parsing.heading_eval.score_headings` leaves them out.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from bookindex.core.model import BBox, Block
from bookindex.parsing.pdf_lines import join_lines

ENTRY_KEY = "entry"  # Block.extra / Node.meta key describing an entry's title block
AFTER_KEY = "after_entry"  # Block.extra key: build_tree closes open entries before this block
INDENT = 4.0  # points: a body block starts at least this far right of its entry's anchor
SUMMARY_CHARS = 240

_TAG = re.compile(
    r"\[((?:[A-Z][a-z]+ )?(?:Function|Variable|Macro|Command|Data [Tt]ype|Form|Option|Constant|Type|Method|"
    r"Class|Procedure|Constructor|Structure|Hook|Operator|Property|Signal|Slot))\](?=\s|$)")
_IDENT = re.compile(r"[A-Za-z_~][\w$.:~]*")
_C_TYPE_WORDS = {"int", "char", "const", "unsigned", "signed", "void", "long", "short", "float", "double",
                 "extern", "static", "struct", "union", "enum", "bool", "size_t", "ssize_t", "volatile", "inline",
                 "typedef", "auto", "register"}
# options: "--long", "-s", "-name" (X11/Java style); a lone "-1" is a number, not an option
_OPTION = r"(?:--[A-Za-z0-9][\w.+-]*|-[A-Za-z?][\w.+-]*)"
_ARG = r"(?:[ =]?(?:[A-Z][A-Z0-9_-]*\b|<[^>\s]+>|\[[^\]\s]+\]|\{[^}\s]+\})|=[\w.-]+)"
_OPT_SPEC = re.compile(rf"^\s*(?P<spec>{_OPTION}{_ARG}?(?:(?:\s*(?:,|\||/|\bor\b)\s*|\s+(?=-)){_OPTION}{_ARG}?)*)(?P<rest>.*)$",
                       re.S)
_OPT_TOKEN = re.compile(_OPTION)
_R_LABELS = {"description", "usage", "arguments", "details", "value", "note", "author(s)", "authors", "references",
             "see also", "examples", "format", "source", "slots", "methods", "warning", "extends",
             "objects from the class", "background", "examples:", "usage:", "arguments:"}
_R_CALL = re.compile(r"(?m)^\s*([A-Za-z.][\w.]*)\s*\(")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*\"'])")


@dataclass
class Entry:
    """One detected entry: where its blocks are and what to call it.

    `title` is an existing block that becomes the entry's heading (a gdoc title line, a
    Doxygen member heading, an R topic header), None when a heading is made from the name.
    `sig` are the blocks joined into the one signature block; `start`..`end` (end exclusive)
    is everything the entry holds, title included."""

    kind: str  # texinfo | signature | option | r
    name: str
    sig: list[int]
    title: int | None = None
    category: str = ""
    aliases: list[str] = field(default_factory=list)
    start: int = 0
    end: int = 0
    indent_ref: int | None = None  # the block whose indentation the body must exceed (None: no rule)
    sig_starts: list[int] = field(default_factory=list)  # further signatures in `sig` (Texinfo @deffnx)


# -- entry point ----------------------------------------------------------------------------

def mark_entries(blocks: list[Block]) -> list[Block]:
    """Return the blocks with each reference entry turned into a sub-section (see module doc).

    Blocks that are not part of an entry are returned unchanged, in the same order; an entry's
    signature blocks are replaced by one joined block, and its heading is either an existing
    block (retitled to the name) or a new title block inserted before the entry."""
    blocks = _split_option_listings(blocks)
    margins = _left_margins(blocks)
    entries = _find_entries(blocks, margins)
    if not entries:
        return blocks
    _set_extents(blocks, entries, margins)
    return _rebuild(blocks, entries)


def is_promoted(b: Block) -> bool:
    """True for an entry heading this pass made, or took over from the layout rules (a gdoc
    title line, a bold option line): a name, never an outline heading, so heading evaluation
    skips it. Entry headings that were outline headings already are not promoted."""
    e = b.extra.get(ENTRY_KEY)
    return isinstance(e, dict) and bool(e.get("promoted"))


# -- geometry --------------------------------------------------------------------------------

def _left_margins(blocks: list[Block]) -> dict[int, float]:
    """The text's left edge for odd and even pages (books alternate their margins): the most
    common leftmost block edge over the pages of that parity."""
    per_page: dict[int, float] = {}
    for b in blocks:
        if b.bbox is None or b.type not in ("text", "title", "list", "code") or b.extra.get("margin"):
            continue
        per_page[b.page_idx] = min(per_page.get(b.page_idx, 1e9), b.bbox[0])
    out: dict[int, float] = {}
    for parity in (0, 1):
        c = Counter(round(x) for p, x in per_page.items() if p % 2 == parity)
        if c:
            out[parity] = float(c.most_common(1)[0][0])
    if len(out) == 1:
        out[1 - next(iter(out))] = next(iter(out.values()))
    return out


def _rel_x(b: Block, margins: dict[int, float]) -> float | None:
    """A block's indentation from its page's left margin (None without a box)."""
    if b.bbox is None:
        return None
    return b.bbox[0] - margins.get(b.page_idx % 2, 0.0)


def _indented(b: Block, ref: Block, margins: dict[int, float], by: float = INDENT) -> bool | None:
    """Whether `b` starts at least `by` points right of `ref` (None when either has no box)."""
    xb, xr = _rel_x(b, margins), _rel_x(ref, margins)
    if xb is None or xr is None:
        return None
    return xb >= xr + by


def _union(boxes: list[BBox | None]) -> BBox | None:
    bs = [b for b in boxes if b is not None]
    if not bs:
        return None
    return (min(b[0] for b in bs), min(b[1] for b in bs), max(b[2] for b in bs), max(b[3] for b in bs))


def _same_row(a: Block, b: Block | None) -> bool:
    """Two blocks side by side on one line of a page."""
    if b is None or a.page_idx != b.page_idx or a.bbox is None or b.bbox is None:
        return False
    overlap = min(a.bbox[3], b.bbox[3]) - max(a.bbox[1], b.bbox[1])
    return overlap > 0.5 * min(a.bbox[3] - a.bbox[1], b.bbox[3] - b.bbox[1])


def _is_heading(b: Block) -> bool:
    return b.type == "title" and b.level is not None


def _norm(s: str) -> str:
    """Lower-case alphanumeric words: "asn1_der_decoding", "asn1 der decoding" and "foo()" match."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", s.lower()).split())


# -- option listings in code blocks ----------------------------------------------------------

def _split_option_listings(blocks: list[Block]) -> list[Block]:
    """Split a code block that lists options one a line ("-c, --check   checks the syntax only",
    a program's --help output) into a block before the options, one block per option (with its
    indented continuation lines) and a block after them, so each option can become an entry."""
    out: list[Block] = []
    for b in blocks:
        if b.type != "code" or "\n" not in b.content:
            out.append(b)
            continue
        lines = b.content.split("\n")
        starts = [k for k, ln in enumerate(lines) if _option_line(ln)]
        if len(starts) < 2 or len(starts) < 0.5 * sum(1 for ln in lines if _OPT_SPEC.match(ln)):
            # a synopsis of bare options ("-V, --version", "-c scriptfile ARG1 ..."), not a listing
            out.append(b)
            continue
        pieces: list[tuple[int, int, bool]] = []  # (first line, end line, is option)
        if starts[0] > 0:
            pieces.append((0, starts[0], False))
        k = starts[0]
        while k < len(lines):
            if not _option_line(lines[k]):
                pieces.append((k, len(lines), False))  # the listing ended ("Report bugs to ...")
                break
            e = k + 1
            while e < len(lines) and not _option_line(lines[e]) and (lines[e][:1] in (" ", "\t") or not lines[e].strip()):
                e += 1
            pieces.append((k, e, True))
            k = e
        for lo, hi, is_opt in pieces:
            text = "\n".join(lines[lo:hi]).rstrip()
            if not text.strip():
                continue
            box = None
            if b.bbox is not None:
                h = (b.bbox[3] - b.bbox[1]) / max(1, len(lines))
                box = (b.bbox[0], round(b.bbox[1] + lo * h, 2), b.bbox[2], round(b.bbox[1] + hi * h, 2))
            extra = dict(b.extra)
            if is_opt:
                extra["option_line"] = True
            out.append(Block(type="code", content=text, page_idx=b.page_idx, bbox=box,
                             features={**b.features, "lines": hi - lo}, extra=extra))
    return out


def _option_line(line: str) -> bool:
    """A line that starts with an option spec and goes on with a description: at least two
    words, the first a word of prose (not an ARGUMENT, a "quoted" value or another option).
    A long-only option may be indented to the long-option column ("    --debug  Print ..."); a
    description's continuation sits further right."""
    if len(line) - len(line.lstrip(" ")) >= 8 or line[:1] == "\t":
        return False
    m = _OPT_SPEC.match(line)
    if m is None:
        return False
    words = m.group("rest").split()
    return len(words) >= 2 and bool(re.fullmatch(r"[A-Za-z][a-z]*[.,:;]?", words[0])) and words[0].upper() != words[0]


# -- detection ---------------------------------------------------------------------------------

def _find_entries(blocks: list[Block], margins: dict[int, float]) -> list[Entry]:
    entries: list[Entry] = []
    used = -1  # last block index taken by an entry's signature
    i = 0
    n = len(blocks)
    while i < n:
        e = None
        if i > used:
            e = (_texinfo(blocks, i, used) or _r_topic(blocks, i, used) or _option(blocks, i, used, margins)
                 or _signature(blocks, i, used, margins))
        if e is None:
            i += 1
            continue
        entries.append(e)
        used = e.sig[-1]
        i = used + 1
    return entries


def _title_line(blocks: list[Block], sig: int, used: int, names: list[str]) -> tuple[int, str] | None:
    """The block right before a signature when it names one of `names` (gdoc's title line,
    a Doxygen member heading): (its index, the name it matches)."""
    k = sig - 1
    if k <= used or k < 0:
        return None
    b = blocks[k]
    if b.type not in ("title", "text") or "\n" in b.content.strip() or len(b.content) > 120:
        return None
    if b.page_idx not in (blocks[sig].page_idx, blocks[sig].page_idx - 1):
        return None
    want = _norm(b.content)
    for nm in names:
        if want and _norm(nm) == want:
            return k, nm
    return None


def _texinfo(blocks: list[Block], i: int, used: int, alias: bool = False) -> Entry | None:
    b = blocks[i]
    if b.type not in ("text", "code", "list", "title") or len(b.content) > 600:
        return None
    m = _TAG.search(b.content[:400])
    if m is None or not b.content[:m.start()].strip():
        return None
    if alias and _is_heading(b):
        return None
    sig = [i]
    text = b.content[:m.start()] + b.content[m.end():]
    # the signature goes on in further (indented) blocks until its parentheses balance
    j = i + 1
    while text.count("(") > text.count(")") and j < len(blocks) and len(sig) < 5:
        nb = blocks[j]
        if _is_heading(nb) or nb.type in ("table", "image") or _TAG.search(nb.content[:400]):
            break
        if nb.page_idx not in (b.page_idx, b.page_idx + 1):
            break
        sig.append(j)
        text = text + " " + nb.content
        j += 1
    pre = " ".join(text.split())
    cands = _IDENT.findall(pre)
    if not cands:
        return None
    name = _texinfo_name(pre)
    if alias:
        return Entry(kind="texinfo", name=name, sig=sig, category=m.group(1), indent_ref=i)
    title = _title_line(blocks, i, used, [name] + [c for c in cands if c != name])
    if title is not None:
        name = title[1]
    e = Entry(kind="texinfo", name=name, sig=sig, title=title[0] if title else None,
              category=m.group(1), indent_ref=i)
    # @deftypefnx: further signatures right below, sharing the one description
    while e.sig[-1] + 1 < len(blocks) and len(e.aliases) < 8:
        more = _texinfo(blocks, e.sig[-1] + 1, e.sig[-1], alias=True)
        if more is None:
            break
        e.sig_starts.append(more.sig[0])
        e.sig.extend(more.sig)
        e.aliases.append(more.name)
    return e


def _texinfo_name(sig: str) -> str:
    """The defined name in a Texinfo signature: the identifier before the argument list for
    functions ("int asn1_der_decoding (...)"), else the last word after a C type ("extern int
    foo") or the first word ("fill-column", Lisp-style @defvar/@deffn)."""
    head = sig.split("(", 1)[0].strip() if "(" in sig else sig.strip()
    toks = [t.strip("*&;") for t in head.split()]
    toks = [t for t in toks if t]
    if not toks:
        return sig.split()[0] if sig.split() else sig
    if "(" in sig:
        return toks[-1]
    if len(toks) == 1:
        return toks[0]
    if toks[0].lower() in _C_TYPE_WORDS or toks[0].endswith("_t"):
        return toks[-1]
    return toks[0]


def _option(blocks: list[Block], i: int, used: int, margins: dict[int, float]) -> Entry | None:
    b = blocks[i]
    if b.type not in ("text", "title", "code", "list") or b.bbox is None:
        return None
    spec_rest = _option_spec(b)
    if spec_rest is None:
        return None
    spec, rest = spec_rest
    name = _option_name(spec)
    if not rest:
        # the option set apart: its description must follow, indented
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if nxt is None or _is_heading(nxt) or not _indented(nxt, b, margins):
            return None
        return Entry(kind="option", name=name, sig=[i], indent_ref=i)
    if b.extra.get("option_line"):
        return Entry(kind="option", name=name, sig=[i], indent_ref=i)
    # option and description on one line: only in a run of such lines at the same indent
    for k in (_sibling(blocks, i, -1, margins), _sibling(blocks, i, 1, margins)):
        if k is not None and _option_spec(blocks[k]) is not None:
            return Entry(kind="option", name=name, sig=[i], indent_ref=i)
    return None


def _option_spec(b: Block) -> tuple[str, str] | None:
    """(option spec, description on the same line) of a block that starts with options."""
    t = b.content.strip()
    if not t or len(t) > 1500:
        return None
    m = _OPT_SPEC.match(t)
    if m is None:
        return None
    spec, rest = m.group("spec").strip(), m.group("rest").strip()
    if rest and not re.match(r"[A-Za-z(\"'`]", rest):
        return None  # "-1 < length" or "--x=3;": an expression, not an option and its description
    if not rest and ("\n" in t or len(spec) > 80):
        return None
    return spec, rest


def _option_name(spec: str) -> str:
    opts = _OPT_TOKEN.findall(spec)
    longs = [o for o in opts if o.startswith("--")]
    return (longs or opts or [spec])[0].rstrip(".,")


def _sibling(blocks: list[Block], i: int, step: int, margins: dict[int, float]) -> int | None:
    """The nearest block before/after `i` at the same indentation, skipping more indented ones
    (an option's wrapped description); None when a heading or a less indented block comes first."""
    k = i + step
    while 0 <= k < len(blocks) and abs(k - i) <= 6:
        nb = blocks[k]
        if _is_heading(nb) and _option_spec(nb) is None:  # a bold option line may be a rule heading
            return None
        ind = _indented(nb, blocks[i], margins, by=3.0)
        if ind is None:
            return None
        if not ind:
            xb, xi = _rel_x(nb, margins), _rel_x(blocks[i], margins)
            return k if xb is not None and xi is not None and abs(xb - xi) < 3.0 else None
        k += step
    return None


def signature_name(text: str) -> str | None:
    """The name a one-line declaration defines: `[keywords/type] name(args) [-> type | const]`.

    None for anything else: prose that mentions a call, an expression, a sentence, and the
    bold captions of reports ("Operating Income (Loss)", "EXTERIOR DIMENSIONS (in.)", "as
    follows (amounts in millions):"). A declaration is told from them by its code-like parts:
    a name with "_", ".", "::", digits or camelCase, a typed prefix ("const char *", "int",
    "FILE *") or an argument list with commas, defaults or pointers."""
    t = " ".join(text.split())
    t = re.sub(r"\s*(\[source\]|¶)\s*$", "", t)
    if len(t) > 300 or "(" not in t:
        return None
    i = t.index("(")
    head = t[:i].rstrip()
    m = re.search(r"([A-Za-z_~][\w.:~]*)$", head)
    if m is None:
        return None
    name = m.group(1)
    prefix = head[:m.start()].split()
    # a return type and keywords ("const char *", "static std::vector<int>", "class"), never a
    # prompt ("R>", ">>>", "$") or a label starting with a digit ("1D sampling (x or t axis)")
    if len(prefix) > 6 or any(not re.fullmatch(r"[A-Za-z_][\w:<>\*&\[\],.]*|[\*&]+", p) or (p.endswith(">") and "<" not in p)
                              for p in prefix):
        return None
    depth, close = 0, -1
    for k in range(i, len(t)):
        if t[k] == "(":
            depth += 1
        elif t[k] == ")":
            depth -= 1
            if depth == 0:
                close = k
                break
    if close < 0:
        return None
    args, tail = t[i + 1:close].strip(), t[close + 1:].strip()
    if len(tail) > 40 or re.search(r"[.!?]\s+\S", tail):
        return None
    if tail and not re.match(r"(->|const\b|;|=|noexcept|override|throws?\b|\{)", tail):
        return None
    if not _code_args(args):
        return None
    code_name = bool(re.search(r"[_.:\d]|[a-z][A-Z]", name))
    typed = bool(prefix) and all(p.lower() in _PREFIX_WORDS or re.search(r"[_*&:<>\[\]\d]", p) or (p.isupper() and len(p) > 1)
                                 for p in prefix)
    listed = args == "" or bool(re.search(r"[,=*&]|\.\.\.", args)) or bool(re.fullmatch(r"[a-z_][\w.]*", args))
    return name if (code_name or typed or listed) else None


_PREFIX_WORDS = _C_TYPE_WORDS | {"class", "def", "async", "function", "method", "virtual", "public", "private",
                                 "protected", "final", "abstract", "synchronized", "native", "exception", "struct",
                                 "interface", "fn", "func", "sub", "proc", "procedure", "constexpr", "template", "string",
                                 "integer", "boolean", "object", "var", "let", "pure", "elemental", "subroutine"}


def _code_args(args: str) -> bool:
    """Whether the text between a declaration's parentheses reads as parameters: comma-separated
    items of a few tokens (types, names, defaults, "..."), no sentence, no quotes of prose."""
    if not args:
        return True
    if re.search(r"[“”‘’]|[.!?]\s+[A-Z]", args) or args.rstrip().endswith(".") and not args.rstrip().endswith("..."):
        return False
    for item in args.split(","):
        words = item.split("=")[0].split()
        if len(words) > 6:
            return False
        if len(words) >= 3 and not re.search(r"[*&:\[\]_<>]", item) and not any(w.lower() in _PREFIX_WORDS for w in words):
            return False  # "amounts in millions": words, not a typed parameter
    return True


def _signature(blocks: list[Block], i: int, used: int, margins: dict[int, float]) -> Entry | None:
    b = blocks[i]
    # a real heading is already a node of its own; "foo(x)" set as one is not re-made here
    if b.type not in ("text", "code", "title") or _is_heading(b) or b.content.count("\n") > 2 or len(b.content) > 300:
        return None
    name = signature_name(b.content)
    if name is None:
        return None
    f = b.features
    nxt = blocks[i + 1] if i + 1 < len(blocks) else None
    styled = b.type == "code" or f.get("mono") or f.get("bold") or (
        nxt is not None and f.get("font_name") and nxt.features.get("font_name") not in (None, f.get("font_name")))
    if not styled:
        return None
    title = _title_line(blocks, i, used, [name, name.split(".")[-1], name.split("::")[-1]])
    if title is not None and (_is_heading(blocks[title[0]]) or blocks[title[0]].type == "title"):
        return Entry(kind="signature", name=name, sig=[i], title=title[0])  # Doxygen: "foo()" heading, then its signature
    # otherwise the description must follow, indented, as prose, close below on the same page
    if nxt is None or nxt.type not in ("text", "list") or nxt.features.get("mono"):
        return None
    if not _indented(nxt, b, margins, by=6.0) or nxt.page_idx != b.page_idx or b.bbox is None or nxt.bbox is None:
        return None
    line_h = max(1.0, float(f.get("font_size") or (b.bbox[3] - b.bbox[1])))
    if nxt.bbox[1] - b.bbox[3] > 3 * line_h or len(nxt.content.split()) < 3:
        return None
    return Entry(kind="signature", name=name, sig=[i], indent_ref=i)


def _r_label(b: Block) -> str | None:
    t = b.content.strip().lower()
    return t.rstrip(":") if t in _R_LABELS else None


def _r_topic(blocks: list[Block], i: int, used: int) -> Entry | None:
    """An Rd topic, found at its "Usage" label followed by `name(args)` code."""
    if _r_label(blocks[i]) != "usage" or i + 1 >= len(blocks):
        return None
    sig: list[int] = []
    j = i + 1
    while j < len(blocks) and _r_label(blocks[j]) is None and not _is_heading(blocks[j]) and len(sig) < 6:
        if blocks[j].type in ("table", "image"):
            break
        sig.append(j)
        j += 1
    calls = [c for k in sig for c in _R_CALL.findall(blocks[k].content)]
    if not sig or not calls:
        return None
    name = calls[0]
    # the topic starts at its "Description" label, or at the topic header just above it
    start = i
    k = i - 1
    while k > used and i - k <= 40 and not (_is_heading(blocks[k]) and _r_label(blocks[k]) is None):
        if _r_label(blocks[k]) == "description":
            start = k
            break
        k -= 1
    # the header names the topic ("zoo   Z's Ordered Observations"); its two halves may be two
    # blocks on one row, the name first
    title = None
    for h in (start - 1, start - 2):
        if h <= used or h < 0:
            break
        hb = blocks[h]
        words = hb.content.split()
        if words and hb.type in ("title", "text") and len(hb.content) <= 200 and _norm(words[0]) == _norm(name):
            title = h
            break
        if not _same_row(hb, blocks[h - 1] if h >= 1 else None):
            break
    e = Entry(kind="r", name=name, sig=sig, title=title, aliases=list(dict.fromkeys(calls[1:])))
    e.start = title if title is not None else start
    return e


# -- extents and output ------------------------------------------------------------------------

def _set_extents(blocks: list[Block], entries: list[Entry], margins: dict[int, float]) -> None:
    for e in entries:
        if e.kind != "r":
            e.start = e.title if e.title is not None else e.sig[0]
    for k, e in enumerate(entries):
        stop = entries[k + 1].start if k + 1 < len(entries) else len(blocks)
        j = e.sig[-1] + 1
        ref = blocks[e.indent_ref] if e.indent_ref is not None else None
        while j < stop:
            b = blocks[j]
            if _is_heading(b) and not (e.kind == "r" and _r_label(b) is not None):
                break
            if b.extra.get("margin"):
                # a running head left in the margin zone across a page break: inside the entry
                # only when the entry goes on after it
                nxt = next((k for k in range(j + 1, stop) if not blocks[k].extra.get("margin")), None)
                if nxt is None or _is_heading(blocks[nxt]) or (ref is not None and _indented(blocks[nxt], ref, margins) is False):
                    break
            elif ref is not None and _indented(b, ref, margins) is False:
                break
            j += 1
        e.end = j


def _rebuild(blocks: list[Block], entries: list[Entry]) -> list[Block]:
    by_start = {e.start: e for e in entries}
    out: list[Block] = []
    section_level = 0  # level of the enclosing (non-entry) section
    i = 0
    while i < len(blocks):
        e = by_start.get(i)
        if e is None:
            b = blocks[i]
            if _is_heading(b):
                section_level = b.level or 0
            out.append(b)
            i += 1
            continue
        out.extend(_entry_blocks(blocks, e, section_level))
        i = e.end
        if i < len(blocks) and i not in by_start:
            nb = blocks[i]
            blocks[i] = Block(type=nb.type, content=nb.content, page_idx=nb.page_idx, bbox=nb.bbox,
                              features=nb.features, level=nb.level, extra={**nb.extra, AFTER_KEY: True})
    return out


def _entry_blocks(blocks: list[Block], e: Entry, section_level: int) -> list[Block]:
    """The entry's blocks: its heading, then its blocks in order with the signature joined."""
    sig_blocks = [blocks[k] for k in e.sig]
    sig_text = _joined_signature(e, sig_blocks)
    meta: dict[str, Any] = {"kind": e.kind, "name": e.name}
    if e.category:
        meta["category"] = e.category
    if e.aliases:
        meta["aliases"] = e.aliases
    out: list[Block] = []
    if e.title is not None:
        tb = blocks[e.title]
        real = _is_heading(tb) and (e.kind in ("r", "signature") or "outline_title" in tb.extra)
        level = tb.level if real and tb.level is not None else section_level + 1
        extra = {k: v for k, v in tb.extra.items() if k not in ("not_heading", AFTER_KEY)}
        meta.update(heading_text=tb.content.strip(), promoted=not real)
        head = Block(type="title", content=e.name, page_idx=tb.page_idx, bbox=tb.bbox, features=dict(tb.features),
                     level=level, extra={**extra, ENTRY_KEY: meta})
    else:
        meta["promoted"] = True
        first = blocks[e.start]
        head = Block(type="title", content=e.name, page_idx=first.page_idx, bbox=first.bbox,
                     features={}, level=section_level + 1, extra={ENTRY_KEY: meta})
    out.append(head)
    lo = e.title + 1 if e.title is not None else e.start
    for k in range(lo, e.end):
        if k in e.sig[1:]:
            continue
        b = blocks[k]
        if k == e.sig[0]:
            out.append(_signature_block(sig_blocks, sig_text, e))
            continue
        if _is_heading(b):  # an Rd label that rules made a heading: part of the topic, not a section
            b = Block(type=b.type, content=b.content, page_idx=b.page_idx, bbox=b.bbox, features=b.features,
                      level=None, extra={**b.extra, "entry_label": True})
        out.append(b)
    if e.kind == "texinfo":
        out = out[:1] + _split_parameters(out[1:], sig_text)
    meta["summary"] = _summary(e, sig_text, out[1:])
    return out


def _joined_signature(e: Entry, sig_blocks: list[Block]) -> str:
    """The signature as one line ("int f (a, b) [Function]": Texinfo's tag moved to the end);
    an Rd Usage keeps its lines, and Texinfo's @deffnx signatures get one line each."""
    if e.kind == "r":
        return "\n".join(b.content.strip() for b in sig_blocks)
    cuts = [0] + [e.sig.index(k) for k in e.sig_starts] + [len(sig_blocks)]
    lines = []
    for lo, hi in zip(cuts, cuts[1:]):
        first = sig_blocks[lo].content
        tag = ""
        if e.kind == "texinfo":
            m = _TAG.search(first[:400])
            if m is not None:
                tag = f" [{m.group(1)}]"
                first = first[:m.start()] + first[m.end():]
        text = join_lines([first] + [b.content for b in sig_blocks[lo + 1:hi]])
        lines.append(re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", " ".join(text.split()))) + tag)
    return "\n".join(lines)


def _signature_block(sig_blocks: list[Block], text: str, e: Entry) -> Block:
    first = sig_blocks[0]
    same_page = [b.bbox for b in sig_blocks if b.page_idx == first.page_idx]
    extra: dict[str, Any] = {k: v for k, v in first.extra.items() if k != AFTER_KEY}
    extra["signature"] = True
    last_page = max(b.page_idx for b in sig_blocks)
    if last_page != first.page_idx:
        extra["page_end_idx"] = last_page
    btype = "code" if e.kind in ("texinfo", "signature", "r") else ("code" if first.type == "code" else "text")
    return Block(type=btype, content=text, page_idx=first.page_idx, bbox=_union(same_page),
                 features={**first.features, "lines": sum(int(b.features.get("lines", 1) or 1) for b in sig_blocks)},
                 extra=extra)


def _parameters(sig_text: str) -> list[str]:
    """Parameter names of a C-like signature: the last identifier of each comma-separated argument."""
    names = []
    for line in sig_text.split("\n"):  # one line per signature
        if "(" not in line:
            continue
        inner = line[line.index("(") + 1:]
        inner = inner[:inner.rfind(")")] if ")" in inner else inner
        for arg in inner.split(","):
            ids = re.findall(r"[A-Za-z_]\w*", arg)
            if ids and ids[-1] not in _C_TYPE_WORDS and ids[-1] not in names:
                names.append(ids[-1])
    return names


def _parameter_labels(sig_text: str) -> re.Pattern[str] | None:
    """A pattern for "name:" labels of the signature's parameters ("ider_len" also as "ider len:",
    as gdoc prints it), or None when the signature has none."""
    params = [p for p in _parameters(sig_text) if p]
    if not params:
        return None
    alts = "|".join(r"[ _]?".join(map(re.escape, re.split(r"_+", p))) for p in params)
    return re.compile(r"(?:^|(?<=\s))(?:" + alts + r")\s*:")


def _split_parameters(body: list[Block], sig_text: str) -> list[Block]:
    """gdoc sets a function's parameter list and its description in one paragraph
    ("element: pointer to ... errorDescription: ... . Fill the structure ..."): split the first
    body block after the signature into a parameter block and a description block."""
    pat = _parameter_labels(sig_text)
    if pat is None:
        return body
    out = list(body)
    for k, b in enumerate(out):
        if b.extra.get("signature"):
            continue
        if b.type not in ("text", "list"):
            break
        hits = list(pat.finditer(b.content))
        if not hits or hits[0].start() != 0:
            break
        end_last = hits[-1].end()
        dot = re.search(r"[.]\s+(?=[A-Z])", b.content[end_last:])
        if dot is None:
            break  # parameters only (each in its own block, as on other pages): nothing to split
        cut = end_last + dot.end()
        params_text, desc = b.content[:cut].strip(), b.content[cut:].strip()
        if not desc:
            break
        box_p = box_d = b.bbox
        if b.bbox is not None:
            frac = len(params_text) / max(1, len(b.content))
            ymid = round(b.bbox[1] + frac * (b.bbox[3] - b.bbox[1]), 2)
            box_p, box_d = (b.bbox[0], b.bbox[1], b.bbox[2], ymid), (b.bbox[0], ymid, b.bbox[2], b.bbox[3])
        out[k:k + 1] = [
            Block(type="list", content=params_text, page_idx=b.page_idx, bbox=box_p, features=dict(b.features),
                  extra={**b.extra, "parameters": True}),
            Block(type="text", content=desc, page_idx=b.page_idx, bbox=box_d, features=dict(b.features),
                  extra={k2: v for k2, v in b.extra.items() if k2 != AFTER_KEY}),
        ]
        break
    return out


def _summary(e: Entry, sig_text: str, body: list[Block]) -> str:
    """What the entry does, in a sentence or two: the first description text after the
    signature and parameters (for an Rd topic, its Description), at most SUMMARY_CHARS."""
    texts: list[str] = []
    if e.kind == "option":
        spec_rest = _option_spec(body[0]) if body and body[0].extra.get("signature") else None
        if spec_rest is not None and spec_rest[1]:
            texts.append(" ".join(spec_rest[1].split()))  # "-c, --check   checks the syntax only"
    if e.kind == "r":  # the topic's title (the header's right half) and its Description
        label: str | None = None
        for b in body:
            lab = _r_label(b)
            if lab is not None:
                label = lab
            elif label in (None, "description") and b.type in ("text", "list", "title") and not b.extra.get("signature"):
                texts.append(" ".join(b.content.split()).rstrip(".") + ".")
        body = []
    labels = _parameter_labels(sig_text) if e.kind == "texinfo" else None
    prose: list[str] = []  # blocks that describe (neither a parameter nor "Returns:")
    rest: list[str] = []  # what follows the parameters in a block that starts with them, and "Returns:"
    for b in body:
        if b.extra.get("signature") or b.extra.get("parameters") or b.type not in ("text", "list"):
            continue
        if _r_label(b) is not None:
            continue
        t = " ".join(b.content.split())
        if labels is not None and labels.match(t) is not None:
            # parameters ("len: ... der len: ... ."): what follows the last one's sentence, if anything
            last = list(labels.finditer(t))[-1]
            dot = re.search(r"[.]\s+(?=[A-Z])", t[last.end():])
            if dot is not None:
                rest.append(t[last.end() + dot.end():].strip())
            continue
        if re.match(r"(Returns?|Return value|See also):", t):
            rest.append(t)
            continue
        prose.append(t)
    for t in prose or rest:
        texts.append(t)
        if sum(len(x) for x in texts) >= SUMMARY_CHARS:
            break
    text = " ".join(texts)
    if not text:
        return ""
    sents = _SENTENCE.split(text)
    out = ""
    for s in sents:
        if out and len(out) + len(s) + 1 > SUMMARY_CHARS:
            break
        out = f"{out} {s}".strip()
    return out[:SUMMARY_CHARS]


def entry_counts(blocks: list[Block]) -> dict[str, int]:
    """How many entries of each kind `mark_entries` made (for benchmarks and reports)."""
    c: dict[str, int] = defaultdict(int)
    for b in blocks:
        e = b.extra.get(ENTRY_KEY)
        if isinstance(e, dict):
            c[str(e.get("kind"))] += 1
    return dict(c)


__all__ = ["ENTRY_KEY", "AFTER_KEY", "Entry", "mark_entries", "is_promoted", "signature_name", "entry_counts"]
