"""A small in-memory BookIndex (tree + graph + vectors) for operator, planner and ask tests.

Twelve pages of a fictional plotting-tool handbook: three chapters with subsections, text,
tables and figures on known pages, and a graph whose GT-links point at known nodes. The
embedder is a deterministic hashed bag of words, so dense scoring is exercised without a model.
"""

from __future__ import annotations

from fakes import FakeEmbedder

from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import Block, Entity, Relation, build_tree
from bookindex.operators.context import IndexContext, MemoryIndex

DOC_ID = "fixture00000000a"


def _blocks() -> list[Block]:
    B = Block
    return [
        B("title", "1 Introduction", 0, (50, 50, 300, 70), level=1),
        B("text", "Plotter is a command-line program that draws two- and three-dimensional plots of functions and data.",
          0, (50, 80, 500, 120)),
        B("text", "This handbook explains installation, plotting commands and output terminals.", 1, (50, 50, 500, 90)),
        B("title", "1.1 Installation", 1, (50, 100, 300, 120), level=2),
        B("text", "Install Plotter with the package manager. The build needs a C compiler and the cairo library.", 1, (50, 130, 500, 170)),
        B("table", "| Platform | Package |\n| Debian | plotter |\n| macOS | brew plotter |", 2, (50, 50, 500, 150),
          extra={"caption": "Table 1: Installation packages per platform"}),
        B("title", "2 Plotting", 3, (50, 50, 300, 70), level=1),
        B("title", "2.1 The plot command", 3, (50, 80, 300, 100), level=2),
        B("text", "The plot command draws functions and data files. Use plot sin(x) to draw a sine curve.", 3, (50, 110, 500, 150)),
        B("image", "", 4, (50, 50, 400, 300), extra={"caption": "Figure 1: A sine curve drawn by the plot command"}),
        B("text", "The splot command draws surfaces in three dimensions.", 4, (50, 320, 500, 350)),
        B("title", "2.2 Line styles", 5, (50, 50, 300, 70), level=2),
        B("text", "The linewidth option sets the width of lines; the default linewidth is 1.5 points.", 5, (50, 80, 500, 120)),
        B("table", "| Style | Width |\n| thin | 0.5 |\n| normal | 1.5 |\n| thick | 3.0 |", 6, (50, 50, 500, 150),
          extra={"caption": "Table 2: Line widths of the predefined line styles"}),
        B("image", "", 6, (50, 200, 400, 400), extra={"caption": "Figure 2: Dashed and dotted line styles"}),
        B("title", "2.3 Colors", 7, (50, 50, 300, 70), level=2),
        B("text", "Colors are given by name or as an RGB hexadecimal triplet such as #ff0000 for red.", 7, (50, 80, 500, 120)),
        B("title", "3 Output terminals", 8, (50, 50, 300, 70), level=1),
        B("text", "A terminal decides the output format of a plot.", 8, (50, 80, 500, 120)),
        B("title", "3.1 The png terminal", 9, (50, 50, 300, 70), level=2),
        B("text", "The png terminal writes bitmap images through the cairo library; its default size is 640 by 480 pixels.",
          9, (50, 80, 500, 120)),
        B("image", "", 10, (50, 50, 400, 300), extra={"caption": "Figure 3: Output of the png terminal"}),
        B("title", "3.2 The pdf terminal", 10, (50, 320, 300, 340), level=2),
        B("text", "The pdf terminal writes vector output that scales without loss.", 11, (50, 50, 500, 90)),
        B("table", "| Terminal | Format |\n| png | bitmap |\n| pdf | vector |", 11, (50, 100, 500, 200),
          extra={"caption": "Table 3: Terminals and their output formats"}),
    ]


def node(tree, needle: str) -> str:
    """Id of the first node whose content contains `needle`."""
    for n in tree.walk():
        if needle in n.content:
            return n.id
    raise KeyError(needle)


def make_tree():
    return build_tree(DOC_ID, "plotter-handbook.pdf", _blocks(), {"pages": 12})


def make_graph(tree) -> KnowledgeGraph:
    nid = lambda s: node(tree, s)  # noqa: E731
    ents = {
        "e_plot": Entity("e_plot", "plot command", "command", "draws functions", ["plot"],
                         [nid("The plot command draws"), nid("Figure 1")]),
        "e_sine": Entity("e_sine", "sine curve", "concept", "sin(x)", [], [nid("Figure 1"), nid("The plot command draws")]),
        "e_linewidth": Entity("e_linewidth", "linewidth", "option", "width of lines", ["line width"],
                              [nid("The linewidth option"), nid("Table 2")]),
        "e_png": Entity("e_png", "png terminal", "terminal", "bitmap output", ["png"],
                        [nid("The png terminal writes"), nid("Figure 3"), nid("Table 3")]),
        "e_pdf": Entity("e_pdf", "pdf terminal", "terminal", "vector output", ["pdf"],
                        [nid("The pdf terminal writes"), nid("Table 3")]),
        "e_cairo": Entity("e_cairo", "cairo", "library", "2D graphics library", ["cairo library"],
                          [nid("Install Plotter"), nid("The png terminal writes")]),
        "e_splot": Entity("e_splot", "splot command", "command", "surfaces", ["splot"], [nid("The splot command")]),
        "e_colors": Entity("e_colors", "RGB color", "concept", "hex triplet", [], [nid("Colors are given")]),
    }
    rels = [Relation("e_plot", "e_sine", "draws"), Relation("e_plot", "e_splot", "related command"),
            Relation("e_png", "e_cairo", "uses"), Relation("e_png", "e_pdf", "alternative terminal"),
            Relation("e_plot", "e_linewidth", "option of")]
    return KnowledgeGraph(ents, rels)


def make_context(llm=None, settings=None, embedder=True) -> IndexContext:
    tree = make_tree()
    return IndexContext(index=MemoryIndex(tree=tree, graph=make_graph(tree)), settings=settings, llm=llm,
                        embedder=FakeEmbedder.stems() if embedder else None)
