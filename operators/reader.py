"""The extractive reader: the shortest span of the evidence that answers the question, cited.

Without an LLM the answer is read out of the passages the LLM would have been shown
(`passages.pack_passages`). What the question asks for is read from spaCy's parse of it
(`asked`): a quantity ("how many / how much / how long": *how* governing an adjective or adverb;
"what percentage": the noun the wh-word determines, matched against the descriptions spaCy gives
its numeric entity labels), a date (*when*), a person or organisation (*who*), a place (*where*),
a yes/no decision (an auxiliary opening the question), or a description ("what does X do",
"how do I ...", "what is X"). Candidates are the passages' sentences and table cells:

- sentences that are not an answer by their shape are dropped: index and contents lines
  (a name followed by dot leaders or a bare page number), bibliography entries (a numbered or
  author-year reference), running headers and footers (a block whose text recurs on many pages),
  a section's title, and fragments without a verb when a description is asked for;
- a sentence scores by the question's words it holds (lemmas, rarer words counting more), the
  names the question mentions (more when the name is the sentence's subject), whether it holds
  an answer of the asked type (an entity of a fitting label, a number not in the question), and
  the rank of its passage;
- every part of a sentence that may answer (each entity of a fitting label, each number, or a
  noun chunk, that the question does not already say) is a candidate of its own, scored by half
  its sentence's score and by how closely the question's words surround it (each word's weight
  divided by its distance in tokens); a value listed for several years ("$4.9 billion, $6.4
  billion and $8.8 billion ... for 2015, 2016 and 2017") is read at the position of the year
  asked;
- a quantity is answered by a number, with its currency and unit, before any sentence without
  one; a count the document spells ("nine datasets") in digits; on a table by the cell whose row
  label and column header hold the question's words (a header spans the empty cells to its
  right; a fiscal year the question names must match its column);
- "what is the N (of X)" is answered by the value the evidence gives N where it gives one: a
  number within a few tokens of N, or of the list it heads ("The goodwill balance was $1,383
  million"), or the cell of a row that names N; else by the sentence that says it;
- a date, a person, a place or another factoid by the entity or noun chunk that scores best,
  followed by the sentence itself; a description or a yes/no question by the sentence.

What the document's layout says is read as such:
- a number that numbers a list item ("1. From the home screen", "4) Collect", a bullet typeset
  as a digit before each item) is not a quantity, and an index's entries run together on one
  line ("Maintenance 84 Manual cleaning 72 ...") are not an answer;
- a table row that holds two records side by side gives each number its own label; a name the
  passage's titles carry (the company of a filing's running title) picks no row; "how many N"
  counts the rows of a table whose label column is headed by N; a row whose label the question
  says ("press and hold" under the title "Down button", two of its words at least) answers
  with its next text cell;
- "which N" / "what N" (a function, a file, a status) is answered by the name the sentence gives
  N: in apposition ("Function read.fwf provides ...", "from the file /etc/profile"), as its "of"
  or after a copula ("returns a status of 127", "the return status is 126"), a name told by its
  spelling (a path, a dotted or underscored name, a capital inside it, a digit); a section's
  title answers only a question over a reference entry (its name) or where no sentence names one,
  and then only a title that names the noun asked ("SUPERIOR COURT" for "what type of court");
- a "Key: value" line whose key is the noun asked gives the value; an acronym's long form scores
  as a sentence with the acronym as its subject; the document's own title (every passage's)
  does not answer "which section".

Numbers read as the document writes them and the question asks them: a number after a word the
evidence numbers its parts with ("Figure 6", "Unit 16", "Quiz #2"), a section's dotted number
("6.4.1") or a citation marker ("[96]") counts nothing; a line of labels and values without a verb
(a table flattened to text) gives each value the words since the value before it; a table cell
reported with its deviation ("73.2% (1.9%)") is its first number, a cell holding several numbers
none; a table is read with its passage's titles, and a name most of the evidence says (the
filing's company) picks no row, and "what N does X have" / "what score did X achieve in Y" is
answered by the cell of the row and column the question names; values listed per year are read
as written. The unit the question
asks in decides between values ("Answer in USD millions": not a percentage), and a value is
restated in the scale asked when the statement declares another ("(in thousands)": "$381,603" →
"$381.603 million"); "which year" is answered by the year a date holds.

And what the question's parse says: its own wh-word (not that of a clause qualifying something
in it: "For the dataset that uses Prover9, how many ..."); the noun the copula introduces when the
parser attached it to a later verb ("what is the percentages of ..."); "what kind of N" answered
by an N the evidence qualifies ("a quiet and relaxed environment"); "what does X define?" by the
object the evidence gives that verb, "which N was included in ..." by its subject (a passive's
agent for an active subject), in a sentence that says the rest of the question; a percentage
asked by a number written as one; a number before "'s" ("(000's)") a unit, not an amount; a
relative date ("the latter half") placing nothing in time; "which N" before its noun determining
it however the parser attached it ("which judges' opinions"); "how do I merge ..." answered by a
sentence that says the action asked (the question's root verb, by lemma, in the sentence or its
titles: `Asked.action`), not by a shorter one that only repeats its other words; a name headed by another noun
of the question ("UNPUBLISHED OPINION") not answering it, unless it is a name the question gives
("where ..., and what belongs in /var/games?").

What the sentence attaches to the question's own verb answers where, how and by what means: the
object of a preposition on a verb whose lemma the question says (`_placed`), for "where",
"what channel is X sold by" (a noun no entity label describes) and "how does X record Y" (a
manner asked of a third party, `Asked.manner`; "how do I" stays a procedure), not a preposition
the question gives that verb itself ("performs best on Cladder", `Asked.slots`). A "Key: value"
line whose key is the question's own words gives its value ("Fax : 514-312-0292"); a line of
entries, each a name and its gloss (a reference card), gives the name asked its own gloss
(`entry_glosses`); a question word a table always capitalises and the tagger reads as a proper
noun in a row label is a name, which picks no row ("costco": "Total Costco stockholders'
equity"); a word in lower case is no proper noun whatever the tagger says ("(optional)"); a
sentence ending in a footnote's mark is prose, not an index line; and a value is restated in
the scale declared where another passage prints the same digits when its own passage declares
none.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from bookindex.core.model import DocumentTree
from bookindex.core.pages import cite_page, printed_label
from bookindex.core.pipe_tables import pipe_rows, pipe_tables
from bookindex.core.quantities import CURRENCY, DIGITS, SCALE_WORD, SCALES, YEAR_MAYBE_FISCAL, spelled_number
from bookindex.operators.lookup import printed_page
from bookindex.operators.passages import Passage
from bookindex.providers.lexical import LIGATURES, joined_parts, joined_words, stem_words, tokenize
from bookindex.providers.nlp import english_if_installed, import_spacy, parsed_question

NUMERIC_LABELS = ("PERCENT", "MONEY", "QUANTITY", "CARDINAL")
_AUXILIARIES = ("do", "be", "have")  # verbs that build a question and say nothing of its action
SPANS_PER_SENTENCE = 3  # the answer spans of one sentence that become candidates, closest first
ALIGNED = 2.0  # what a value read at the position of the year asked adds to its closeness (`_respectively`)
# "which page / which section ..." ask where in the document the answer is: the tree's own units
STRUCTURE_TARGETS = {"page": "page", "section": "section", "chapter": "section", "subsection": "section",
                     "appendix": "section"}
_LABELS_BY_WH = {"when": ("DATE", "TIME"), "who": ("PERSON", "ORG", "NORP"), "whom": ("PERSON", "ORG", "NORP"),
                 "where": ("GPE", "LOC", "FAC", "ORG")}
_CITE_REF = re.compile(r"^\s*(?:\[\d+\]|\d+\.\s+[A-Z][\w'-]+,\s+[A-Z]\.|[A-Z][\w'-]+,\s+(?:[A-Z]\.\s*)+(?:,|and|&))")
_YEAR_PAREN = re.compile(r"\((?:1[89]|20)\d\d[a-z]?\)|[,.]\s(?:1[89]|20)\d\d[a-z]?\.")
_LEADER = re.compile(r"(?:\.\s?){4,}|…{2,}|\s{3,}\d+\s*$|\s\d{1,4}(?:,\s*\d{1,4})*\s*$")
# a sentence ending in a footnote's mark ("... must take the form <username>. 7")
_FOOTNOTED = re.compile(r"[^\s.…][.!?;:]\s\d{1,3}\s*$")
_NUMBER = re.compile(rf"(?<![\w.])(?<!\w[-−])[-−(]?\$?\s?{DIGITS}\)?(?:\s?%|\s?(?:percent|{SCALE_WORD})\b)?", re.I)
# an index entry's page number between its words and the next entry's capital: "options 54 Main"
_INDEX_RUN = re.compile(r"(?<=[a-z)])\s\d{1,4}(?:\s?[,–-]\s?\d{1,4})*\s+(?=[A-Z])")
_KEY_VALUE = re.compile(r"^\s*([A-Za-z][\w ./&-]{0,40}?)\s?:\s+(\S.{0,80}?)[\s.;]*$")  # "Key: value", a short label
_DOTS = re.compile(r"(?:\.\s?){4,}|…{2,}")
_LABELLED = re.compile(r"^\s*(?:\[\w+\]\s*)?[\w*.-]+\s?:\s")  # "name: the name of ..." (a parameter list item)
# "Figure 1", "Table 6-", "RQ", "E.", "Quiz #2": a number that labels a figure, table or section, not a quantity
_LABEL_BEFORE = re.compile(r"(?:\b[A-Z][A-Za-z]*\.?\s?|[A-Za-z]\.|#\s?)$")
_TITLE_GLOSS = re.compile(r"^(?:[\dA-Z]+(?:\.\d+)*\.?\s+)?(\S+(?:\s\S+)?)\s+(?::|[-–—])\s+(\w.*)$")
# "1. From the home screen", "4) Collect", "• 6 Insert ground coffee", "20 Menu pad": a number that
# opens a sentence or follows a bullet, before an item's first capital word, numbers a list item
_ENUMERATOR = re.compile(rf"^(?:.*[^\w\s,.;:()%{CURRENCY}\-−–])?\s*$")
_ITEM_AFTER = re.compile(r"^(?:[.)]\s+|\s+)[A-Z“\"]")
_PLACEHOLDER = re.compile(r"<[^<>\s]*(?:\s[^<>\s]+)?\s?$")  # "<samples 1>": a number inside a placeholder's name
_YEAR = re.compile(r"(?<!\d)(?:1[89]|20)\d\d(?:\s?[-–/]\s?(?:(?:1[89]|20)\d\d|\d\d))?(?!\d)")
# a call, an identifier with an underscore, quoted code, or a file path ("/usr/local", "/etc/fstab")
_CODEISH = re.compile(r"\w+\(\)?|\b\w+_\w+\b|`[^`]+`|(?<![\w/])/\w[\w.+-]*(?:/[\w.+-]+)*")


@lru_cache(maxsize=1)
def _label_words() -> dict[str, tuple[str, ...]]:
    """Each entity label's nouns in spaCy's own description of it ("PERCENT": "Percentage,
    including "%""; "QUANTITY": "Measurements, as of weight or distance"): the noun a "what N"
    question asks for names the label it wants. Read from the description's parse: its head
    nouns and their conjuncts, not the nouns of a clause that qualifies them ("Numerals that do
    not fall under another type" names numerals, not types)."""
    spacy = import_spacy()
    nlp = english_if_installed()
    out: dict[str, tuple[str, ...]] = {}
    for label in (*NUMERIC_LABELS, "DATE", "TIME", "PERSON", "GPE", "ORG", "LOC"):
        desc = spacy.explain(label) or ""
        if nlp is None:
            out[label] = tuple(w.lower().rstrip("s") for w in re.findall(r"[A-Za-z]{4,}", desc)[:1])
            continue
        out[label] = tuple(dict.fromkeys(
            t.lemma_.lower() for t in nlp(desc)
            if t.pos_ in ("NOUN", "PROPN") and not any(x.dep_ == "relcl" or (x.dep_ == "prep" and x.lower_ not in ("of", "as"))
                                                       for x in t.ancestors)
            and (t.dep_ in ("ROOT", "conj", "appos", "compound", "nsubj") or t.head.lower_ == "of")))
    return out


@lru_cache(maxsize=512)
def _temporal(noun: str) -> tuple[str, ...]:
    """("DATE", "TIME") when spaCy's recogniser reads "last <noun>" as a date or a time: the
    noun is a unit of time ("what year", "which month", "what hour"), and the answer a date."""
    nlp = english_if_installed()
    if nlp is None or "ner" not in nlp.pipe_names:
        return ()
    return ("DATE", "TIME") if any(e.label_ in ("DATE", "TIME") for e in nlp(f"last {noun}").ents) else ()


@dataclass
class Asked:
    """What a question asks for (module docstring)."""

    kind: str  # quantity | date | entity | yesno | describe | page | section
    labels: tuple[str, ...] = ()  # entity labels an answer span may have
    terms: dict[str, float] = field(default_factory=dict)  # lemma -> weight
    names: list[str] = field(default_factory=list)  # things the question names (lower case)
    years: list[str] = field(default_factory=list)  # years the question names (fiscal years)
    target: str = ""  # the noun a "what N" question asks for
    # the target's own qualifiers ("default" of "the default width"): a sentence may name the
    # value by one of them alone ("The default is 4in.", `copula_value`)
    qualifiers: frozenset[str] = frozenset()
    procedure: bool = False  # "how do I ...": the command or call that does it is part of the answer
    # the verb a "how do I ..." question is built on ("merge" of "how do I merge two series"): a
    # sentence that says nothing of that action does not tell how to do it
    action: str = ""
    # "how does Best Buy record inventories?", "how is X measured?": a manner asked of a third
    # party, answered by the phrase the evidence attaches to the question's verb (`_placed`)
    manner: bool = False
    # (verb lemma, preposition) of each prepositional phrase the question attaches to a verb
    # ("performs best on Cladder": ("perform", "on")): a slot the question fills itself
    slots: frozenset[tuple[str, str]] = frozenset()
    # ("declares an option": ("declare", "option")): each verb of the question with its object
    objects: frozenset[tuple[str, str]] = frozenset()
    # "what is the N (of X)": the answer is what the document says N is, a number where the
    # evidence gives N one (`_bound`), else the sentence that says it
    value: bool = False
    # "what kind of environment", "which type of errors": the noun after "N of", the answer
    # being one of them, named by what qualifies it ("a quiet and relaxed environment")
    member: str = ""
    # "what does a point mutation of TTT define?": the verb whose object is asked, answered by
    # that verb's object in the evidence ("... TTT that defines phenylalanine"); "which
    # transcript is included ...": the verb whose subject is asked (`role`, `_fillers`)
    verb: str = ""
    role: str = ""  # object | subject | passive subject
    said: frozenset[str] = frozenset()  # every word of the question, lower case (stop words too)
    said_tools: frozenset[str] = frozenset()  # the commands and functions the question names itself (`tools`)
    # "what does the shift builtin do?": the words of the thing described, one of which the
    # document may list as a term ("shift" on a line of its own) over its description
    described: tuple[str, ...] = ()
    # the unit the question asks its answer in (`_answer_unit`): MONEY for an amount, PERCENT
    # for a percentage; a value in the other unit does not answer
    unit: str = ""
    scale: str = ""  # "Answer in USD millions": the scale word (thousand, million, billion) asked for
    # "what is CRAN?": a definition, answered by a sentence that says what the thing named is
    # (its name the subject of "is": "The Comprehensive R Archive Network (CRAN) is a ...")
    definition: bool = False
    reason: bool = False  # "why ...": answered by the sentence that gives the reason
    # "how long must data be preserved?", "how often ...": a measure of the verb's action (how
    # and an adverbial adjective), not a count of something ("how many quizzes") or an amount
    # ("how much did X spend"): a number that counts another noun ("one required directory") does
    # not say it
    measure: bool = False


def asked(question: str) -> Asked:
    """What the question asks for, from spaCy's parse (module docstring)."""
    years = [m.group(1) for m in YEAR_MAYBE_FISCAL.finditer(question)]
    doc = parsed_question(question)
    if doc is None:  # no spaCy: the question's words, a description asked
        words = {w.lower(): 1.0 for w in re.findall(r"[A-Za-z][\w-]{2,}", question)}
        return Asked(kind="describe", terms=words, years=years)
    terms: dict[str, float] = {}
    for t in doc:
        # a verb counts though spaCy lists it as a stop word ("how long does tuning take?", "what
        # does X show?"): the auxiliaries do, be and have say nothing
        verb = t.pos_ == "VERB" and t.lemma_.lower() not in _AUXILIARIES
        if (t.is_stop and not verb) or t.is_punct or t.tag_ in ("WDT", "WP", "WP$", "WRB") or len(t.text) < 2:
            continue
        # names, and the verb a question is built on ("how do I merge two series": the action asked)
        w = 1.5 if t.pos_ in ("PROPN", "NOUN", "NUM", "X") or _CODEISH.fullmatch(t.text) or t.dep_ == "ROOT" else 1.0
        terms[t.lemma_.lower()] = max(terms.get(t.lemma_.lower(), 0.0), w)
        terms.setdefault(t.text.lower(), w)
    names = [e.text.lower() for e in doc.ents if e.label_ not in NUMERIC_LABELS]
    names += [m.lower() for m in _CODEISH.findall(question)]
    names += [t.text.lower() for t in doc if t.pos_ == "PROPN" or (t.is_upper and len(t.text) > 1)]
    # "what does [the function] lapply do?": the subject between the auxiliary and the verb, whose
    # last word names the thing described (spaCy often parses a bare name there as a modifier)
    aux = next((t for t in doc if t.dep_ == "aux" and t.lemma_ == "do" and t.head.i > t.i + 1), None)
    if aux is not None:
        subject = [t for t in doc[aux.i + 1:aux.head.i] if not (t.is_stop or t.is_punct)]
        if subject:
            names.append(subject[-1].text.lower())
    # the words that name it, not the class noun the verb takes as subject ("builtin", "function"
    # in "the shift builtin", "the scan function"), unless that is all there is ("na.locf")
    naming = [t for t in subject if t.head.i != aux.head.i] if aux is not None and subject else []
    described = tuple(t.text.lower().strip("`()") for t in (naming or subject)) if aux is not None and subject else ()
    names = list(dict.fromkeys(n.strip("`()") for n in names if n.strip("`()")))
    # the question's own wh-word, not one of a clause that qualifies something in it ("For the
    # dataset that uses Prover9, how many ...", "When using GPT-4 ..., how many ...")
    whs = [t for t in doc if t.tag_ in ("WDT", "WP", "WP$", "WRB")]
    wh = next((t for t in whs if not any(x.dep_ in ("advcl", "relcl", "acl") for x in (t, *t.ancestors))),
              # a question opened by its auxiliary asks yes or no, whatever its clauses ask ("Should I use
              # -G when running dvips?"); otherwise the parser may have misattached the wh-word
              None if doc[0].pos_ == "AUX" else whs[0] if whs else None)
    # "which judges' opinions": a WDT before its noun determines it, however the parser attached it
    # ("Which Kvoptions command specifies ...": a noun with its modifiers after "which", however
    # the parser attached "which")
    headed = next((t for t in doc[wh.i + 1:wh.i + 4] if t.pos_ == "NOUN" and all(
        x.dep_ in ("compound", "amod") and x.head.i == t.i for x in doc[wh.i + 1:t.i])), None) \
        if wh is not None and wh.tag_ == "WDT" else None
    det = wh is not None and (wh.dep_ == "det" or (wh.tag_ == "WDT" and wh.head.pos_ == "NOUN"
                                                   and wh.head.i == wh.i + 1) or headed is not None)
    if wh is not None and wh.lower_ == "which" and headed is None and _named_in_lower_case(doc, wh.i + 1):
        # "Which varioref command checks ...": the tagger reads a product named in lower case as a
        # verb or a noun and loses the noun asked; read as the name it is, capitalised
        name = doc[wh.i + 1]
        return asked(question[:name.idx] + name.text[:1].upper() + question[name.idx + 1:])
    base = Asked(kind="describe", terms=terms, names=names, years=years, described=described,
                 said=frozenset(t.lower_ for t in doc if t.is_alpha), said_tools=tools(question),
                 objects=frozenset((t.head.lemma_.lower(), t.lemma_.lower()) for t in doc if t.dep_ == "dobj"
                                   and t.head.pos_ == "VERB" and t.pos_ in ("NOUN", "PROPN")),
                 slots=frozenset((t.head.lemma_.lower(), t.lower_) for t in doc if t.dep_ == "prep"
                                 and t.head.pos_ in ("VERB", "AUX") and any(c.dep_ == "pobj" for c in t.children)),
                 unit=_answer_unit(doc),
                 scale=next((t.lower_.rstrip("s") for t in doc if t.lower_.rstrip("s") in SCALES
                             and any(x.lower_ == "in" for x in doc[max(0, t.i - 2):t.i])), ""))
    last = next((t for t in reversed(doc) if not t.is_punct), None)
    if (wh is not None and wh.lower_ == "what" and not det and wh.i + 1 < len(doc)
            and doc[wh.i + 1].lemma_ == "do" and last is not None and last.i > wh.i + 2 and last.lemma_ != "do"):
        base.verb, base.role = last.lemma_.lower(), "object"
    elif (wh is not None and det and wh.head.dep_ in ("nsubj", "nsubjpass")
          and wh.head.head.pos_ == "VERB" and wh.head.head.lemma_ not in ("be", "have", "do")):
        # "which transcript has been included in ...": the verb's subject is what is asked
        base.verb = wh.head.head.lemma_.lower()
        base.role = "subject" if wh.head.dep_ == "nsubj" else "passive subject"
    if wh is None:
        if doc[0].pos_ == "AUX":
            base.kind = "yesno"
        return base
    lw = wh.lower_
    nxt = doc[wh.i + 1] if wh.i + 1 < len(doc) else None
    if lw == "how":
        if nxt is not None and nxt.pos_ in ("ADJ", "ADV") and nxt.dep_ != "ROOT":
            base.kind, base.labels = "quantity", NUMERIC_LABELS
            if nxt.head.pos_ == "NOUN" and nxt.head.i > nxt.i:  # "how many quizzes": the thing counted
                base.target = nxt.head.lemma_.lower()
            base.measure = not base.target and nxt.dep_ in ("advmod", "acomp")
            if base.measure:  # a duration or a frequency is a date or time entity ("about 30 minutes")
                base.labels = (*NUMERIC_LABELS, "DATE", "TIME")
        else:
            base.procedure = True
            # the root of the question's own sentence, not of the context a user writes before it
            # ("Chapter pages use the plain style. How do I redefine the plain page style?")
            root = wh.sent.root
            if root.pos_ == "VERB" and root.lemma_.lower() not in _AUXILIARIES:
                base.action = root.lemma_.lower()
            # "how do I / how can we ...": the reader's own action (a first or second person
            # subject); any other subject's is a manner the evidence states
            base.manner = not any(t.dep_ in ("nsubj", "nsubjpass") and set(t.morph.get("Person", [])) & {"1", "2"}
                                  for t in doc)
        return base
    if lw in _LABELS_BY_WH:
        base.kind, base.labels = ("date" if lw == "when" else "entity"), _LABELS_BY_WH[lw]
        return base
    if lw == "why":  # a reason, said by a sentence: never a value of the noun the copula introduces
        base.reason = True
        return base
    # what / which: the noun it determines ("what percentage"), or the subject it asks about
    target = wh.head if det and wh.head.pos_ == "NOUN" else headed
    if target is None and wh.head.lemma_ == "be":
        target = next((c for c in wh.head.children if c.dep_ == "nsubj" and c.pos_ == "NOUN"), None)
        if target is None and wh.i < wh.head.i:
            # "what is the percentages of foreign born Latinos [who] use ...": the noun the copula
            # introduces, which the parser attached to a later verb
            target = next((t for t in doc[wh.head.i + 1:-1] if t.pos_ == "NOUN" and t.dep_ != "compound"
                           and all(x.pos_ in ("DET", "ADJ", "NOUN") for x in doc[wh.head.i + 1:t.i])), None)
            if target is not None and doc[target.i + 1].pos_ != "ADP":  # "the N of / for ...": N named alone
                target = None
    while target is not None and target.dep_ == "compound" and target.head.pos_ in ("NOUN", "PROPN"):
        target = target.head  # "which environment variable": the parser sets "which" on the compound's first noun
    if target is not None:
        base.target = target.lemma_.lower()
        base.qualifiers = frozenset(c.lemma_.lower() for c in target.children
                                    if c.dep_ in ("amod", "compound") and c.pos_ in ("ADJ", "NOUN"))
        base.member = next((o.lemma_.lower() for c in target.children if c.dep_ == "prep" and c.lower_ == "of"
                            for o in c.children if o.dep_ == "pobj" and o.pos_ == "NOUN"), "")
        if base.target in STRUCTURE_TARGETS:  # "which page / section ...": where the answer is
            base.kind = STRUCTURE_TARGETS[base.target]
            return base
        fits = tuple(lb for lb, words in _label_words().items() if base.target in words) or _temporal(base.target)
        if fits == ("MONEY",) and base.said_tools:
            fits = ()  # "the default value of \MetaPrefix": a setting's value, whatever it holds, not money
        if fits:
            base.labels = fits
            base.kind = "quantity" if set(fits) & set(NUMERIC_LABELS) else "entity"
            return base
    # "answer in USD millions"; not an entity holding the noun asked ("which builtin marks ...",
    # read as an amount of German marks)
    if any(e.label_ in ("MONEY", "PERCENT", "QUANTITY") and (target is None or not e.start <= target.i < e.end)
           for e in doc.ents):
        base.kind, base.labels = "quantity", NUMERIC_LABELS
        return base
    # "which N" / "what N": one of the things the evidence names; "what is the N of X" (purpose, role,
    # colour ...) with an N no entity label describes: the sentence that says it
    base.kind = "entity" if base.target and (lw == "which" or det) else "describe"
    base.value = base.kind == "describe" and bool(base.target)
    # "what is CRAN / what are lock files?": the copula as root and a subject that is no "N of X"
    # nor "the N" (a value: "the purpose of /var/tmp", "the default installation prefix")
    base.definition = base.kind == "describe" and lw == "what" and wh.head.lemma_ == "be" \
        and wh.head.dep_ == "ROOT" and target is not None \
        and not any(c.dep_ == "prep" for c in target.children) \
        and not any(t.dep_ == "det" and t.lower_ == "the" for t in target.subtree)
    return base


def _named_in_lower_case(doc: Any, i: int) -> bool:
    """Whether token i is a lower-case word set before a noun the way a product's name is
    ("which varioref command", "which kvoptions command"): an alphabetic lower-case word, no
    stop word nor adjective, followed by another."""
    if i + 1 >= len(doc):
        return False
    w, nxt = doc[i], doc[i + 1]
    return w.is_alpha and w.is_lower and not w.is_stop and nxt.is_alpha and nxt.is_lower \
        and not nxt.is_stop and w.pos_ != "ADJ"


def _answer_unit(doc: Any) -> str:
    """The unit a question asks its answer in, named without a number: a currency or percentage
    entity ("Answer in USD millions": MONEY), or a number word a preposition governs ("Answer in
    billion", "in millions": an amount of that scale, MONEY)."""
    for e in doc.ents:
        if e.label_ in ("MONEY", "PERCENT") and not any(t.like_num and any(c.isdigit() for c in t.text) for t in e):
            return str(e.label_)
    for t in doc:
        if t.like_num and t.is_alpha and t.dep_ == "pobj" and t.head.lower_ == "in":
            return "MONEY"
    return ""


@lru_cache(maxsize=1024)
def _asked_once(question: str) -> Asked:
    """`asked`, once per question text: a server is asked the same questions again (read only)."""
    return asked(question)


# -- what is never an answer ---------------------------------------------------------------

def is_reference_line(line: str) -> bool:
    """An index or contents line (dot leaders, a trailing page number), an index's entries run
    together on one line ("Machine options 54 Main menu functions 29 Maintenance 84 ..."), or a
    bibliography entry."""
    s = line.strip()
    if not s:
        return True
    if len(_DOTS.findall(s)) >= 2 or (_LEADER.search(s) and len(s) < 160):
        return True
    entries = len(_INDEX_RUN.findall(s))
    if entries >= 3 and entries * 8 >= len(s.split()):
        return True
    return bool(_CITE_REF.match(s) and _YEAR_PAREN.search(s))


_LINE_NUMBER = re.compile(r"^\s*(\d{1,5})\s+\S")
LISTING_RUN = 3  # numbered lines in a row, each numbered after the one before, that make a listing


def numbered_listing(lines: list[str]) -> set[int]:
    r"""The indexes of the lines of a numbered code listing: lines opening on a line number, in a
    run of `LISTING_RUN` or more whose numbers go up by one to a few ("318 %\col@number = 1",
    "319 \multicoltolerance = 9999", ...; a documented package's implementation prints its code
    so). Code, not prose: never a sentence of an answer, its line numbers never an amount."""
    numbered = [(i, int(m.group(1))) for i, ln in enumerate(lines) if (m := _LINE_NUMBER.match(ln))]
    out: set[int] = set()
    run: list[int] = []
    last = None
    for i, n in numbered:
        if last is not None and 0 < n - last <= 5:
            run.append(i)
        else:
            if len(run) >= LISTING_RUN:
                out.update(run)
            run = [i]
        last = n
    if len(run) >= LISTING_RUN:
        out.update(run)
    return out


def listing_share(text: str) -> float:
    """The share of a block's lines that are index, contents or bibliography lines; a sentence
    ending in a footnote's mark is not one, however much it looks like an entry's page number
    (a passage of two such sentences is prose)."""
    lines = [x for x in text.splitlines() if x.strip()]
    return sum(is_reference_line(x) and not _FOOTNOTED.search(x) for x in lines) / len(lines) if lines else 0.0


def recurring_blocks(tree: DocumentTree, min_pages: int = 3) -> frozenset[str]:
    """Running headers and footers: leaves whose text, digits aside, recurs on `min_pages` or
    more pages."""
    def key(text: str) -> str:
        return re.sub(r"\d+", "#", " ".join(text.split()).lower())[:120]

    pages: dict[str, set[int]] = {}
    leaves = tree.leaves()
    for n in leaves:
        if len(n.text) < 120:
            pages.setdefault(key(n.text), set()).add(n.page_idx)
    common = {k for k, ps in pages.items() if len(ps) >= min_pages}
    return frozenset(n.id for n in leaves if len(n.text) < 120 and key(n.text) in common)


# -- candidates ------------------------------------------------------------------------------

# picks the answering candidate of a question's candidates (`read`'s `choose`)
Chooser = Callable[["Asked", list["Candidate"]], "Candidate"]

@dataclass
class Candidate:
    score: float
    number: int  # citation number of the passage
    passage: Passage
    sentence: str
    span: str = ""
    order: int = 0  # the sentence's position in its passage
    verb: bool = True  # the sentence has a finite verb
    # it holds an answer of the type asked (a quantity's number, the value a "what is the N"
    # sentence gives N): any such candidate answers before one that does not
    fits: bool = False
    via: str = ""  # the generator that proposed it (`candidate_features.GENERATORS`)
    # the parts of its sentence's score (`candidate_features.SENTENCE_PARTS`); empty for a
    # candidate read from a passage's titles, lines or tables rather than from a sentence
    parts: dict[str, float] = field(default_factory=dict)


def _idf(terms: dict[str, float], texts: list[str]) -> dict[str, float]:
    """Rarer question words count more: log(1 + n / df) over the evidence sentences."""
    n = max(1, len(texts))
    low = [t.lower() for t in texts]
    return {w: wt * math.log(1 + n / (1 + sum(w in t for t in low))) for w, wt in terms.items()}


@dataclass(frozen=True)
class _Sentence:
    """A parsed evidence sentence with what scoring reads from every one of them, computed once
    (a cached line serves many questions; walking its tokens again for each was a third of a
    repeated answer's time)."""
    span: Any  # spaCy's Span
    text: str  # the span's text (a Span rebuilds it from its tokens on every access)
    words: frozenset[str]  # lemmas and lower-case forms
    subjects: frozenset[str]  # its grammatical subjects and first word, lower case, "()" stripped
    tokens: int
    alpha: bool  # holds a word
    has_verb: bool  # a finite verb
    opens_with_verb: bool  # "Creates the ...": a present-tense verb as root and first word
    copula: bool  # "X is a ...": its root is "be" with an attribute, as a definition's is
    imperative: bool  # "Change the precision to ...": an instruction, its verb first and no subject
    symbols: int  # punctuation and code-like tokens before the last
    # "However, block comments do not nest.", "This means that ...": it opens on a connective or
    # with a demonstrative as subject, so it leans on the sentence before and answers nothing alone
    anaphoric: bool = False


# the words an identifier is made of: "update.packages", "showConnections", "R_LIBS_USER"
_ID_PARTS = re.compile(r"[._=-]+|(?<=[a-z])(?=[A-Z])")


def identifier_words(token: str) -> frozenset[str]:
    """The words a code name is built from, lower case, with their lemmas: a manual names the
    function that updates packages `update.packages()` and the one that shows connections
    `showConnections()`, so a question's plain words meet the name's parts. A plain word has none."""
    name = token.strip("()`'\"").lstrip("-\\")  # an option's dashes, a TeX command's backslash
    parts = [w for w in _ID_PARTS.split(name) if w.isalpha() and len(w) > 1]
    if len(parts) < 2:
        return frozenset()
    lower = " ".join(w.lower() for w in parts)
    return frozenset(lower.split()) | _lemmas(lower)


def _sentence(s: Any) -> _Sentence:
    return _Sentence(
        span=s,
        text=s.text,
        words=frozenset({t.lemma_.lower() for t in s} | {t.lower_ for t in s}).union(
            *(identifier_words(t.text) for t in s if not t.is_alpha and len(t.text) > 3)),
        # a subject's apposition is a subject too: "The ... Network (CRAN) is ..."
        subjects=frozenset({t.lower_.strip("()") for t in s if t.dep_ in ("nsubj", "nsubjpass")
                            or (t.dep_ == "appos" and t.head.dep_ in ("nsubj", "nsubjpass"))}
                           | {s[0].lower_.strip("()")}),
        tokens=len(s),
        alpha=any(t.is_alpha for t in s),
        has_verb=any(t.pos_ in ("VERB", "AUX") and t.tag_ not in ("VBN", "VBG") for t in s),
        opens_with_verb=s.root.tag_ == "VBZ" and s.root.i == s.start,
        copula=s.root.lemma_ == "be" and any(c.dep_ == "attr" for c in s.root.children),
        imperative=s.root.tag_ == "VB" and s.root.i == s.start
        and not any(c.dep_ in ("nsubj", "nsubjpass") for c in s.root.children),
        # (quotation marks are prose's: "enclosing the code between matching ‘%{’ and ‘%}’ markers")
        symbols=sum(1 for t in s[:-1] if (t.is_punct and not t.is_quote) or "_" in t.text or "*" in t.text),
        anaphoric=len(s) > 2 and ((s[0].pos_ in ("ADV", "CCONJ") and s[1].text == ",")
                                  or (s[0].pos_ == "PRON" and s[0].tag_ == "DT" and s[0].dep_ in ("nsubj", "nsubjpass"))))




def _sentences(nlp: Any, passage: Passage, needed: tuple[str, ...] | None = None) -> list[_Sentence | None]:
    """The passage's prose sentences (spaCy, block by block), without title, listing, table and
    reference lines. With `needed`, a line holding none of those words (as a substring of its
    lower-case text) is not parsed, and stands as one None: no sentence of it could score, and
    parsing is most of a first answer's time. The Nones keep which sentences are neighbours."""
    # typographic ligatures ("deﬁnes") as their letters: the tagger and the lemmatizer know the word
    lines = passage.text.splitlines()
    code = numbered_listing(lines)
    keep = _rejoined([ln[:2000].translate(LIGATURES) for i, ln in enumerate(lines)
                      if ln.strip() and not ln.lstrip().startswith("|") and not is_reference_line(ln)
                      and ln.strip() not in passage.title_path and i not in code])
    wanted = [needed is None or any(w in ln.lower() for w in needed) for ln in keep]
    parsed = iter(_parsed(nlp, [ln for ln, ok in zip(keep, wanted) if ok]))
    out: list[_Sentence | None] = []
    for ok in wanted:
        out.extend(next(parsed) if ok else [None])
    return out


_OPEN_END = re.compile(r"[A-Za-z,]\s*$")  # a line that stops inside its sentence
_GOES_ON = re.compile(r"^\s*[a-z]")  # a line that does not open a sentence


def _rejoined(lines: list[str]) -> list[str]:
    """The lines with a sentence the layout broke across two of them made one again: a line
    ending on a word or a comma, followed by one opening in lower case ("... which are then" /
    "executed from a master batch file."). Read apart, neither half says what the sentence does.
    A line opening a definition list's item ("modules Loadable kernel modules", a term line)
    starts its own."""
    out: list[str] = []
    for ln in lines:
        if out and _OPEN_END.search(out[-1]) and _GOES_ON.match(ln) and len(out[-1]) + len(ln) < 2000 \
                and not term_line(ln) and not _TERM_AHEAD.match(ln.strip()):
            out[-1] = f"{out[-1].rstrip()} {ln.lstrip()}"
        else:
            out.append(ln)
    return out


PARSE_CACHE_LINES = 2_000  # about 13 KB a parsed line (its tensor dropped): 26 MB at most
_parse_cache: OrderedDict[str, tuple[_Sentence, ...]] = OrderedDict()
_parse_lock = threading.Lock()


def _parsed(nlp: Any, lines: list[str]) -> list[tuple[_Sentence, ...]]:
    """The prose sentences of each line from spaCy's parse, the lines parsed before taken from a
    bounded LRU cache: the same sections answer many questions (a server asked about one manual),
    and parsing is most of a no-LLM answer's time (about 10x the retrieval on gnuplot.pdf)."""
    with _parse_lock:
        known = {ln: _parse_cache[ln] for ln in lines if ln in _parse_cache}
        for ln in known:
            _parse_cache.move_to_end(ln)
    todo = list(dict.fromkeys(ln for ln in lines if ln not in known))
    fresh: dict[str, tuple[_Sentence, ...]] = {}
    # entities only when a question asks for one (`_with_entities`): half of a parse's time
    later = ["ner"] if "ner" in nlp.pipe_names else []
    for ln, doc in zip(todo, nlp.pipe(todo, disable=later)) if todo else ():
        doc.tensor = doc.tensor[:0]  # the pipeline's token vectors: most of a parse's memory, unused after
        fresh[ln] = tuple(_sentence(s) for s in _whole_sentences(doc)
                          if not _DOTS.search(s.text) and not is_reference_line(s.text))
    with _parse_lock:
        for ln, sents in fresh.items():
            _parse_cache[ln] = sents
        while len(_parse_cache) > PARSE_CACHE_LINES:
            _parse_cache.popitem(last=False)
    return [known[ln] if ln in known else fresh[ln] for ln in lines]


def _whole_sentences(doc: Any) -> list[Any]:
    """spaCy's sentences of a line, one that ends on a comma joined to the next: the splitter
    breaks before quoted symbols ("When the globstar shell option is enabled, and ‘*’ is used in
    a filename expansion context, | two adjacent ‘*’s ... will match all files ..."), and no
    sentence ends on a comma."""
    out: list[Any] = []
    for s in doc.sents:
        if out and out[-1].text.rstrip().endswith(","):
            out[-1] = doc[out[-1].start:s.end]
        else:
            out.append(s)
    return out


_DOC_TEXT = "bookindex_text"  # Doc.user_data: the document's text, read once


def doc_text(doc: Any) -> str:
    """A parsed line's text, kept on the Doc: spaCy's `Doc.text` joins every token again on each
    access, and the spans of a sentence read their document's text around each number they hold
    (a quarter of a repeated answer's time on a 10-K, most of it in that join)."""
    text = doc.user_data.get(_DOC_TEXT)
    if text is None:
        text = doc.user_data[_DOC_TEXT] = doc.text
    return text


_NER_DONE = "bookindex_entities"  # Doc.user_data flag: the recogniser has run on it
_ner_lock = threading.Lock()


def _with_entities(nlp: Any, sents: list[_Sentence]) -> None:
    """Run spaCy's entity recogniser, in one batch, on the cached parses of `sents` that have no
    entities yet (the recogniser has its own embedding layer: the same entities as a full parse)."""
    if "ner" not in nlp.pipe_names:
        return
    with _ner_lock:
        docs = list({id(d): d for d in (s.span.doc for s in sents) if not d.user_data.get(_NER_DONE)}.values())
        for doc in nlp.get_pipe("ner").pipe(docs):
            doc.user_data[_NER_DONE] = True


def _merge_units(cells: list[str]) -> list[str]:
    """'$' | '245.98' → '' | '$245.98': currency and percent signs typeset in their own column
    join their number, which keeps its column (the sign's cell is left empty), so that the
    columns stay aligned with the header rows."""
    out = list(cells)
    for j, c in enumerate(out):
        if c in ("$", "€", "£") and j + 1 < len(out) and out[j + 1]:
            out[j + 1], out[j] = c + out[j + 1], ""
        elif c == "%" and j > 0 and out[j - 1]:
            out[j - 1], out[j] = out[j - 1] + "%", ""
    return out


def _column_headers(headers: list[list[str]], width: int) -> list[str]:
    """Each column's header text: a header cell spans the empty cells to its right (a year
    typeset over its value and sign columns), the row-label column excepted."""
    cols = [""] * width
    for h in headers:
        last = ""
        for j in range(width):
            cell = h[j] if j < len(h) else ""
            last = cell or (last if j > 1 else "")
            cols[j] = f"{cols[j]} {last}".strip()
    return [c.lower() for c in cols]


def table_cell(passage: Passage, a: Asked, weights: dict[str, float],
               subject: frozenset[str] = frozenset()) -> tuple[float, str, str] | None:
    """The number at the row whose label and the column whose header hold the question's words
    (and the fiscal year it names): (score, cell, row label). A row label scores as a span in a
    sentence does (`span_score`), its column header adds half its words' weight. `subject`: the
    names the question gives that most of the evidence says (`document_subject`), which pick no
    row either."""
    rows = [_merge_units(r) for r in pipe_rows(passage.text)]
    if len(rows) < 2:
        return None
    width = max(len(r) for r in rows)
    headers = [r for r in rows[:3] if sum(bool(cell_value(c)) for c in r[1:]) <= len(r) // 2
               or all(re.fullmatch(r"(?:19|20)\d\d", c) for c in r if c and c[0].isdigit())]
    col_text = _column_headers(headers, width)
    context = " ".join(passage.title_path).lower()
    # a name the passage's titles carry (the company of a filing's running title) is every row's:
    # it does not tell its rows apart, nor does the name most of the evidence is about (`subject`).
    # A question word the table always writes capitalised, and that the tagger reads as a proper
    # noun inside a row's label, is a name, however the question wrote it ("for costco": "COSTCO
    # WHOLESALE ...", "Total Costco stockholders' equity"; not "Total Domestic store count")
    names = [*a.names, *(t for t in weights if t.isalpha() and t in context and t not in a.names
                         and _always_capitalised(t, [" ".join(passage.title_path), passage.text])
                         and any(_proper_inside(t, r[0]) for r in rows if r))]
    shared = {t for t in weights if any(t in n for n in names if n in context or n in subject)}
    best: tuple[float, str, str] | None = None
    for r in rows:
        for j, c, label in _row_records(r):
            hit = sum(w for t, w in weights.items() if t in label and t not in shared)
            if hit <= 0:
                continue
            # as a span's score (`span_score`): half the label's as a sentence, and the question's
            # words right beside the cell
            row_score = 0.5 * hit / math.sqrt(len(label.split()) + 4) * 3 + 0.75 * hit
            head = col_text[j] if j < len(col_text) else ""
            sc = row_score + 0.5 * sum(w for t, w in weights.items() if t in head) - _other_unit(a, c)
            if a.years:
                if any(y in head for y in a.years):
                    sc += 2.0
                elif any(re.search(r"(?:19|20)\d\d", h) for h in col_text):
                    sc -= 2.0
                elif any(y in context for y in a.years):
                    sc += 0.5
            if best is None or sc > best[0]:
                best = (sc, c, label)
    return best


def document_subject(a: Asked, passages: list[Passage]) -> frozenset[str]:
    """The names the question gives that half or more of the passages say, in their text or
    titles (the company of a filing: "COSTCO" in "How much did COSTCO spend ..."): what the
    whole evidence is about tells none of its table rows apart ("net income attributable to
    Costco" is not what Costco spent); a name few passages say ("Missouri") still picks its row."""
    if len(passages) < 2:
        return frozenset()
    texts = [f"{' '.join(p.title_path)} {p.text}".lower() for p in passages]
    return frozenset(n for n in a.names if sum(n in t for t in texts) * 2 >= len(texts))


@lru_cache(maxsize=4096)
def _proper_inside(word: str, label: str) -> bool:
    """Whether the tagger reads `word` as a proper noun inside `label` (not as its first word,
    which a label capitalises whatever it is)."""
    nlp = english_if_installed()
    if nlp is None or word not in label.lower():
        return False
    return any(t.pos_ == "PROPN" and t.lower_ == word and t.i > 0 for t in nlp(label[:300], disable=["parser", "ner"]))


def _always_capitalised(word: str, texts: list[str]) -> bool:
    """Whether `word` occurs in `texts` as a whole word only with a capital first letter, and
    so within a sentence at least once (after a lower-case word): a row label's or a
    sentence's first word ("Total current assets") is capitalised whatever it is."""
    rx = re.compile(rf"\b{re.escape(word)}\b", re.I)
    seen = [(m.group(0), t[max(0, m.start() - 3):m.start()]) for t in texts for m in rx.finditer(t)]
    return (bool(seen) and all(w[0].isupper() for w, _ in seen)
            and any(re.fullmatch(r".*[a-z,] ", before) for _, before in seen))


def _row_records(row: list[str]) -> list[tuple[int, str, str]]:
    """The numbers of a table row with the label each belongs to: (column, cell, label lower
    case). A label is the text cells before the run of numbers it heads, so that a row holding
    two records side by side ("Missouri | 17 | Total Domestic store count | 978", a long table
    typeset in two halves) gives each number its own label."""
    out: list[tuple[int, str, str]] = []
    label: list[str] = []
    after_number = False
    for j, c in enumerate(row):
        if not c:
            continue
        value = cell_value(c)
        if not value:
            if after_number:
                label, after_number = [], False
            label.append(c)
            continue
        after_number = True
        if label and not re.fullmatch(r"(?:19|20)\d\d", value):
            out.append((j, value, " ".join(label).lower()))
    return out


_SPREAD = re.compile(r"\s*[(\[]\s*[±+-]?\s*\d[\d.,]*\s?%?\s*[)\]]\s*$")  # "(1.9%)", "[±0.4]"


def cell_value(cell: str) -> str:
    """The number a table cell holds, "" when it holds text: the cell itself, or its first
    number when a spread or deviation follows it in brackets ("73.2% (1.9%)", "63.2(1.2)": a
    result reported with its standard deviation)."""
    if _one_number(cell):
        return cell
    m = _SPREAD.search(cell)
    head = cell[:m.start()].strip() if m else ""
    return head if head and _one_number(head) else ""


def _one_number(text: str) -> bool:
    """Whether a cell's text is one number: spaces only beside its signs ("$ 1,234", "(460.8 )",
    "12 %"); "12 12 13 13", a column of values the parser ran into one cell, is not."""
    return bool(_NUMBER.fullmatch(re.sub(rf"(?<=[{CURRENCY}(−-])\s+|\s+(?=[%)])", "", text.strip())))


def _respectively(sent: Any, a: Asked) -> list[tuple[Any, Any]]:
    """"As of 2016 and 2017 ... was $2.4 billion and $3.0 billion": the value in the position of
    the year the question names, in each run of listed values ("X, Y, and Z") as long as the
    sentence's list of years: (value, run) pairs, the run being the span of the whole list."""
    if len(a.years) != 1:
        return []
    years = [m.group(1) for m in YEAR_MAYBE_FISCAL.finditer(sent.text)]
    if len(years) < 2 or years.count(a.years[0]) != 1:
        return []
    # the values as written ("$364.39 and $308.45", "approximately $495 and $198": the entity
    # recogniser may take a currency sign apart from its number, or two values as one entity)
    dates = [(e.start_char, e.end_char) for e in sent.ents if e.label_ in ("DATE", "TIME")]
    values = []
    for m in _NUMBER.finditer(sent.text):
        at = sent.start_char + m.start()
        text = m.group(0).rstrip(", ")
        if (text.strip() in years or any(lo <= at < hi for lo, hi in dates)
                or re.search(r"\d[.\-/]$", sent.text[:m.start()])  # "31.3.2003", "1-2": part of a date or a range
                or re.match(r"[.\-–/]\d|[A-Za-z]", sent.text[m.start() + len(text):m.start() + len(text) + 2])):
            continue
        span = sent.doc.char_span(at, at + len(text), alignment_mode="expand")
        if span is not None:
            values.append(span)
    runs: list[list[Any]] = []
    for e in values:
        gap = doc_text(sent.doc)[runs[-1][-1].end_char:e.start_char] if runs else "x"
        if runs and re.fullmatch(r"[\s,;]*(?:and|or)?\s*", gap):
            runs[-1].append(e)
        else:
            runs.append([e])
    at = years.index(a.years[0])
    return [(r[at], sent.doc[r[0].start:r[-1].end]) for r in runs if len(r) == len(years)]


def expansion(acronym: str, text: str) -> str:
    """The long form a text gives an acronym: "National Atmospheric Research Laboratory (NARL)"
    for NARL (the initials of the words before it, small words allowed between)."""
    for m in re.finditer(rf"\(\s*{re.escape(acronym)}\s*\)", text, re.I):
        words = re.findall(r"[\w&'-]+", text[max(0, m.start() - 160):m.start()])
        caps = [i for i, w in enumerate(words) if w[0].isupper()]
        for start in range(len(words) - 1, -1, -1):
            initials = "".join(w[0] for w in words[start:] if w[0].isupper())
            if initials.upper() == acronym.upper() and words[start][0].isupper():
                return " ".join(words[start:])
            if len(initials) > len(acronym) or (caps and start < caps[0]):
                break
    return ""


def entry_glosses(text: str, names: list[str]) -> list[tuple[str, str]]:
    """A line of entries, each a name and what it does ("na.omit omit NAs na.contiguous compute
    longest sequence of non-NA observations na.locf impute NAs by carrying forward the last
    observation"; a reference card's two columns flattened): for each name the question gives
    that is not a plain word, the words after it up to the next name of the same shape (letters,
    digits and symbols in the same order), when the line holds three different such names or
    more, each followed by words of its own: (name, gloss)."""
    out = []
    for name in names:
        if name.isalpha() or not re.search(r"[A-Za-z]", name):
            continue
        shape = "".join(r"[A-Za-z]+" if c.isalpha() else r"\d+" if c.isdigit() else re.escape(c)
                        for c in re.sub(r"([A-Za-z])[A-Za-z]+|(\d)\d+", r"\1\2", name))
        rx = re.compile(rf"(?<!\S){shape}(?!\S)")
        for ln in text.splitlines():
            if name not in ln.lower():
                continue
            entries = list(rx.finditer(ln))
            gaps = [ln[m.end():n.start()].split() for m, n in zip(entries, entries[1:])]
            if len({m.group(0) for m in entries}) < 3 or any(len(g) < 1 or not g[0][0].isalpha() for g in gaps):
                continue
            for i, m in enumerate(entries):
                if m.group(0).lower() == name:
                    end = entries[i + 1].start() if i + 1 < len(entries) else len(ln)
                    gloss = ln[m.end():end].strip()
                    if len(gloss.split()) >= 2:
                        out.append((m.group(0), gloss))
    return out


_GLOSSED = re.compile(r"(?:^|[;•]\s*)([^\s:;•]+):\s+([^;•]+)")  # "• parsum: parallel version of sum;"


def glossed_list(text: str) -> list[tuple[str, str]]:
    """The items of each line that lists three or more terms, each with its gloss after a colon
    ("• parvector: parallel version of vector; • parapply: parallel version of apply; • parsum:
    ..."): (term, gloss). A manual names a family of functions or options this way, and says what
    each is only in its gloss."""
    out: list[tuple[str, str]] = []
    for ln in text.splitlines():
        items = [(m.group(1), m.group(2).strip()) for m in _GLOSSED.finditer(ln.strip())]
        if len(items) >= 3 and all(_term_like(t) for t, _ in items):
            out.extend(items)
    return out


def enumerates(text: str, start: int, end: int) -> bool:
    """Whether the number at text[start:end] numbers a list item rather than counting anything:
    it opens the text, follows a bullet symbol or stands before several items, and the item's
    first capital word follows it ("1. From the home screen ...", "4) Collect ...", "• 6 Insert
    ground coffee")."""
    if not _ITEM_AFTER.match(text[end:end + 4]):
        return False
    if _ENUMERATOR.match(text[:start]):
        return True
    # a bullet typeset as a digit ("6 Start the Care menu 6 Touch Cleaning programs"): the same
    # number before each item's capital word
    number = re.escape(text[start:end].strip())
    return len(re.findall(rf"(?<![\w.,]){number}(?=\s+[A-Z“\"])", text)) >= 2


_PART_LABEL = re.compile(r"^\s*([A-Z][A-Za-z]{2,})\.?\s+(\d+(?:\.\d+)*)\b")
_LABEL_NUMBER = re.compile(r"\b([A-Z][A-Za-z]{2,})\.?\s+(\d+(?:\.\d+)*)\b")


def part_labels(passages: list[Passage]) -> frozenset[str]:
    """The words the evidence numbers its parts with (lower case): a capitalised word that opens
    a line or a title followed by a number ("Figure 1: An example ...", "Unit 16 Key Assignments")
    and that stands before two or more different numbers in the evidence. A number after such a
    word names a part ("shown in Figure 6", "Table 2: ..."): it counts nothing."""
    texts = [ln for p in passages for ln in [*p.title_path, *p.text.splitlines()] if not ln.lstrip().startswith("|")]
    opening = {m.group(1).lower() for ln in texts if (m := _PART_LABEL.match(ln))}
    numbers: dict[str, set[str]] = {}
    for ln in texts:
        for m in _LABEL_NUMBER.finditer(ln):
            if m.group(1).lower() in opening:
                numbers.setdefault(m.group(1).lower(), set()).add(m.group(2))
    return frozenset(w for w, ns in numbers.items() if len(ns) >= 2)


def _names_a_part(sent: Any, start_char: int, parts: frozenset[str]) -> bool:
    """Whether the number at `start_char` of the sentence's document follows a word the evidence
    numbers its parts with (`part_labels`), or the word of a part every document has: a page, a
    section, a chapter, an appendix ("see Section 6.9 [Controlling the Prompt], page 104")."""
    m = re.search(r"([A-Za-z]+)\.?\s*$", doc_text(sent.doc)[max(0, start_char - 30):start_char])
    if m is None:
        return False
    word = m.group(1).lower()
    return word in parts or word.rstrip("s") in STRUCTURE_TARGETS


PLACED = 1.0  # what the place a sentence gives the question's verb adds to its closeness
# what every candidate of a passage gains from the passage's rank: PASSAGE_PRIOR / (1 + rank),
# beside the 0.6 / (1 + rank) a sentence's own score holds (half of it in its spans' scores).
# Retrieval's order is evidence of which passage answers: without it, 60 of the 102 wrong answers
# on the tuned manual sets had an accepted answer in the best-ranked passage. The same for every
# candidate of a passage, it orders passages and leaves the order within one as it was; at 0.6 it
# also outweighed what a "how do I" question's action and tool say of a passage one rank lower
# (docs/benchmarks.md, "The best-ranked passage, and a title that names the noun").
PASSAGE_PRIOR = 0.2
ACTIONLESS = 1.0  # what a sentence without the action a "how do I ..." question asks loses (`Asked.action`)
MANNER = 0.05  # what a sentence's phrase on the question's verb adds to its score (`Asked.manner`)
NAMED_AS = 1.0  # what a name the sentence gives the noun asked about adds to its closeness (`named_as`)
# the word right after a noun, past an "of" or a copula ("a status of 127", "the status is 126"),
# and the word right before it
# the word after the noun, past a copula ("is", "should always be"), "of", "named" or "called", or
# after the comma of an apposition ("a catch-all list, bug-gnu-utils@gnu.org, which ...", "a
# profile file named .Rprofile")
_NEXT_WORD = re.compile(r",?\s+(?:(?:of|is|was|are|were|named|called"
                        r"|(?:should|must|will|can|may|would)(?:\s+(?!not\b)\w+)?\s+be)\s+)?([^\s,;:()]+)")
_PREV_WORD = re.compile(r"([^\s,;:()]+)\s+$")


_QUOTES = "`'\"‘’“”"


# a command or option as manuals write one: a TeX control sequence ("\\columnbreak", "\\caption*"),
# a long option ("--mt"), a key set to a value ("margin=2cm")
# ("\\nThis" in a quoted string is a line break before a word, not a control sequence)
_TOOL = re.compile(r"\\(?![a-z][A-Z])[A-Za-z@]{2,}\*?|(?<![\w-])--[A-Za-z][\w-]+|\b[A-Za-z][\w-]*=[\w.]+")


def tools(text: str) -> frozenset[str]:
    """The commands, options and functions a text names by their spelling (`_TOOL`, `_is_code`,
    a lower-case name with a capital inside: "odbcConnect"; a product's name, "LilyPond", is none),
    numbers not counted."""
    out = {m.group(0).rstrip("*") for m in _TOOL.finditer(text)}
    for word in text.split():
        w = _unquoted(word.strip("[]{},;:"))
        w = w if w.endswith("()") else w.strip("()")
        if (re.search(r"[A-Za-z]{2}", w) and not w.startswith("\\")
                and (_is_code(w) or re.match(r"[a-z]+[A-Z]", w))):  # not "e.g.", nor "LilyPond"
            out.add(w.removesuffix("()"))
    return frozenset(out)


def tools_named(text: str, said: frozenset[str]) -> bool:
    """Whether the text names a command, option or function (`tools`) other than those `said`."""
    return bool(tools(text) - said)


def _shows_tool(passage: Passage, sentence: str, said: frozenset[str]) -> bool:
    """Whether the answer a sentence gives (`_answer`) names a command, option or function other
    than those `said`: in the sentence, in its item's synopsis or term line (a term with its
    arguments, "roots (c)", names what to call however it is spelled), in the code it leads
    into ("For example, to set the size to 12 without changing the baseline skip:" over
    "\\fontsize{12}{\\f@baselineskip}"), or in the sentence after it ("... allows multiplication by
    real numbers. However, ... you must use \\real{...}")."""
    term, line = item_head(passage, sentence)
    if tools_named(sentence, said) or tools_named(item_synopsis(passage, sentence), said) or tools_named(line, said):
        return True
    if term and line.strip() != term and term.lower() not in {t.lower() for t in said}:
        return True  # "roots (c)" over "Compute the roots of ...": the item's synopsis names it, however spelled
    shown = introduced(passage, sentence) if sentence.rstrip().endswith(":") else \
        _display_after(passage, sentence) or next_sentence(passage, sentence)
    return bool(shown) and tools_named(shown, said)


def _unquoted(word: str) -> str:
    return word.strip(_QUOTES).rstrip(".")


def is_identifier(word: str) -> bool:
    """Whether a word is a name by its spelling, the way manuals write functions, files, options,
    packages and codes: a digit, a capital after its first letter, a path, a dotted or underscored
    name or a call ("read.fwf", "/etc/profile", "odbcConnect", "RODBC", "--login", "127"); not a
    plain word ("that", "Package") or a word ending a sentence."""
    w = _unquoted(word)
    if len(w) < 2 or not re.search(r"[A-Za-z0-9]", w):
        return False
    return bool(re.search(r"\d", w) or re.search(r"[A-Z]", w[1:]) or _is_code(w) or _EMAIL.fullmatch(w)
                or re.fullmatch(r"-{1,2}[A-Za-z][\w-]*", w))


ITEM_CHARS = 600  # how far a definition list's item runs after its term at most (`term_items`)
# a sentence that sends the reader elsewhere, never a description: one opening with "See", or a
# cross-reference's bracketed title and page ("[What is CRAN?], page 9")
_POINTER = re.compile(r"^\W*see\b|\],?\s+(?:page|p\.)\s*\d+", re.I)
# what a sentence naming a command, option or function the question does not name adds as the
# answer to "how do I ..." (`tools_named`): a manual answers with the thing to use
NAMES_TOOL = 1.5
INSTRUCTS = 1.0  # what an instruction adds as the answer to "how do I ..." (`_Sentence.imperative`)
DEFINES = 1.0  # what a sentence saying what the thing named is adds for "what is X?" (`Asked.definition`)
IN_ITEM = 1.0  # what the first sentence of the item of the term asked about adds (`term_items`)
LEANS = 1.0  # what a description opening on a connective or "This ..." loses (`_Sentence.anaphoric`)


# a name written as a call ("showConnections()", "read.fwf(file)"); not a one-letter placeholder
# ("f(x)") nor a plural's mark ("argument(s)")
_CALL = re.compile(r"(?<![\w.$])([A-Za-z][\w.]+)\((?!e?s\))(?=[\w\s=\"'.,]*\))")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")  # "bug-package@gnu.org": a name by its spelling
_ARGUMENTS = "[(<-{"  # what a synopsis's first argument opens with ("shift [n]", "set -o")


def names_term(line: str, words: Collection[str]) -> bool:
    """Whether a line is one of `words` alone or with its arguments: a definition list's term
    line or its synopsis ("caller", "caller [expr]")."""
    head = line.strip().split(" ", 1)
    return head[0].lower() in words and (len(head) == 1 or head[1][:1] in _ARGUMENTS)


def term_items(text: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where a passage lists one of `words` as a definition list's term: the line that is the
    word alone, or the word with its synopsis ("shift [n]", "mapfile [-d delim] ..."), and the
    text after it up to the next line that is one word of its own (the next term) or
    `ITEM_CHARS`: (start, end) offsets in `text`. A manual describes a command, an option or a
    variable there, in sentences that never repeat its name. The term's own line and its synopsis
    lines are not part of the item."""
    out: list[tuple[int, int]] = []
    wanted = {w for w in words if w}
    pos = 0
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        if (not out or pos >= out[-1][1]) and names_term(ln, wanted):
            term = ln.strip().split(" ", 1)[0]
            start = end = pos + len(ln) + 1
            for nxt in lines[i + 1:]:
                one = nxt.strip()
                names_it = len(one) <= 120 and not one.endswith(".") and re.search(
                    rf"(?<![\w.]){re.escape(term)}(?![\w.])", one)
                if end == start and (names_it or one[:1] in "[-"):
                    # its synopsis or prototype: "shift" over "shift [n]", "int asn1_delete_structure (...)"
                    start = end = end + len(nxt) + 1
                    continue
                if end - start > ITEM_CHARS or (one and " " not in one and one.lower() not in wanted
                                                and not one.endswith((".", ",", ";", ":"))):
                    break
                end += len(nxt) + 1
            if end > start:
                out.append((start, min(end, start + ITEM_CHARS)))
        pos += len(ln) + 1
    return out


def _is_code(word: str) -> bool:
    w = _unquoted(word)
    return bool(_CODEISH.fullmatch(w) or re.fullmatch(r"\w+(?:[./]\w+)+", w))


def named_as(sent: Any, target: str) -> list[tuple[int, int, str]]:
    """The names the sentence gives the noun a "which N" question asks about, in apposition
    ("Function read.fwf provides ...", "from the file /etc/profile", "the read.spss function"),
    as its "of" ("returns a status of 127") or after a copula ("the return status is 126"):
    (first token, end token, name). A manual states
    which function, file or code does a thing this way, and its section title (the place the
    sentence is in) or a plain word next to the noun is not that name."""
    out: list[tuple[int, int, str]] = []
    text, base = doc_text(sent.doc), sent.start_char
    end_char = sent.end_char
    for t in sent:
        if t.lemma_.lower() != target and t.lower_ != target:
            continue
        after = _NEXT_WORD.match(text, t.idx + len(t.text), end_char)
        before = _PREV_WORD.search(text, base, t.idx)
        for m in (after, before):
            # before the noun a capitalised word qualifies it ("the mRNA transcript"); only code names it
            if m is None or not is_identifier(m.group(1)) or (m is before and not _is_code(m.group(1))):
                continue
            word = m.group(1).strip(_QUOTES)
            word = word[:-1] if word.endswith(".") and not _CODEISH.fullmatch(word) else word
            span = sent.doc.char_span(m.start(1), m.end(1), alignment_mode="expand")
            if span is not None:
                out.append((span.start, span.end, word))
    return out


def acts_on_another(sent: Any, objects: Collection[tuple[str, str]], words: Collection[str]) -> bool:
    """Whether the sentence does one of the question's verbs to another of the question's `words`
    than the question does: the roles swapped ("time2str converts the calendar time to a string"
    for "which function converts a string to calendar time?"; "it declares a robust command" for
    "which command declares an option?"). The thing it names does something else. An object the
    question does not say is no evidence: a manual says the thing in its own words ("Mark each
    name as readonly." for "which builtin marks a variable as read-only?", "reads the CNF-SAT
    problem data" for "... reads a CNF-SAT problem"), and a sentence without the verb is not judged."""
    asked_objects: dict[str, set[str]] = {}
    for verb, obj in objects:
        asked_objects.setdefault(verb, set()).add(obj)
    for t in sent:
        if t.dep_ == "dobj" and t.head.lemma_.lower() in asked_objects and t.pos_ in ("NOUN", "PROPN"):
            lemma = t.lemma_.lower()
            if lemma not in asked_objects[t.head.lemma_.lower()] and lemma in words:
                return True
    return False


def _anchors(sent: Any, weights: dict[str, float]) -> list[tuple[int, float]]:
    """(token index, weight) of each of the question's words in the sentence."""
    return [(t.i, weights.get(t.lemma_.lower(), weights.get(t.lower_, 0.0))) for t in sent
            if t.lemma_.lower() in weights or t.lower_ in weights]


def _near(anchors: list[tuple[int, float]], start: int, end: int) -> float:
    """How closely the question's words surround tokens [start, end): each word's weight divided
    by its distance in tokens."""
    return sum(w / (1 + max(start - j, j - end + 1) / 3) for j, w in anchors if not start <= j < end)


_OPTION_SPELLED = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*(?:=[\w.,/-]+)?")


def _named_spans(sent: Any, a: Asked, weights: dict[str, float]) -> list[tuple[float, str]]:
    """(closeness, name) for each name the sentence gives the noun asked about (`named_as`) that
    the question does not already say, closeness as `_spans` measures it plus `NAMED_AS`."""
    anchors = _anchors(sent, weights)
    named = named_as(sent, a.target)
    if a.target == "option":
        # an option by its spelling ("-with-default-lisp=clisp", "--mt=engine"), where no word of
        # the line calls it one: a configure line, a synopsis
        for m in _OPTION_SPELLED.finditer(sent.text):
            span = sent.doc.char_span(sent.start_char + m.start(), sent.start_char + m.end(), alignment_mode="expand")
            if span is not None:
                named.append((span.start, span.end, m.group(0)))
    if a.target == "function":
        # a name written as a call is a function by its notation ("... can be found by
        # showConnections()"), where no word of the sentence calls it one
        for m in _CALL.finditer(sent.text):
            if m.group(1)[:1].isupper() and m.group(1)[1:].islower():
                continue  # "More(depending on ...)": a word before a parenthesis, its space lost
            span = sent.doc.char_span(sent.start_char + m.start(1), sent.start_char + m.end(1), alignment_mode="expand")
            if span is not None:
                named.append((span.start, span.end, m.group(1)))
    # a code name's own words are the question's words at no distance ("glp_simplex" for "... with
    # the simplex method"): they count as in `_near`, whole
    return [(_near(anchors, lo, hi) + NAMED_AS + sum(weights.get(w, 0.0) for w in identifier_words(word)), word)
            for lo, hi, word in named if word.lower() not in weights and word.lower() not in a.names]


def _spans(sent: Any, a: Asked, weights: dict[str, float],
           parts: frozenset[str] = frozenset(), named: Sequence[tuple[float, str]] = ()) -> list[tuple[float, str]]:
    """The parts of a sentence that may answer, closest to the question's words first:
    (closeness, text) for each entity (or number, or noun chunk) of a fitting type that the
    question does not already say. A sentence often holds several numbers of the asked kind
    ("$4.9 billion, $6.4 billion and $8.8 billion"); each is a candidate of its own, and the
    one the question's words surround is the answer: closeness sums each question word's
    weight divided by its distance in tokens (a sentence that repeats the question but states
    its number far from those words is not close)."""
    anchors = _anchors(sent, weights)
    q_words = set(weights)
    # a line of labels and values without a verb ("Net cash provided by operating activities
    # 3,676.2 Purchases of ... (460.8) Free cash flow $3,215.4", a table flattened to text) gives
    # each value the words since the value before it: its label, not the next value's
    values = [t.i for t in sent if t.like_num] if not any(
        t.pos_ in ("VERB", "AUX") and t.tag_ not in ("VBN", "VBG") for t in sent) else []

    def close(start: int, end: int) -> float:
        if values:
            after = max((v for v in values if v < start), default=sent.start - 1)
            return sum(w / (1 + (start - j) / 3) for j, w in anchors if after < j < start)
        return _near(anchors, start, end)

    if a.kind == "quantity" or not a.labels:
        aligned = _respectively(sent, a)
        if aligned:  # each listed value at the year's position, closest list first
            return sorted(((close(run.start, run.end) + ALIGNED, e.text) for e, run in aligned), key=lambda x: -x[0])
    cands: list[tuple[float, str]] = []
    for e in sent.ents:
        if (a.labels and e.label_ not in a.labels) or (not a.labels and e.label_ in NUMERIC_LABELS):
            continue
        if all(t.is_punct or t.lemma_.lower() in q_words or t.lower_ in q_words for t in e) or e.text.lower() in a.names:
            continue
        if a.kind == "quantity" and any(y == e.text.strip() for y in a.years):
            continue
        if e.label_ in NUMERIC_LABELS and re.match(r"['’]s\b", doc_text(sent.doc)[e.end_char:e.end_char + 3]):
            continue  # "(000's)", "the 1990's": a unit or a decade, not an amount
        if e.label_ in NUMERIC_LABELS and _names_a_part(sent, e.start_char, parts):
            continue  # "Figure 6", "Unit 16": the number of a part
        if e.label_ in NUMERIC_LABELS and re.fullmatch(r"\d+(?:\.\d+){2,}", e.text.strip()):
            continue  # "6.4.1": a section's (or a version's) number
        if e.label_ in NUMERIC_LABELS and _cites(doc_text(sent.doc), e.start_char, e.end_char):
            continue
        if a.measure and e.label_ == "CARDINAL" and _counts_another(e.root, weights):
            continue
        if e.label_ in NUMERIC_LABELS and enumerates(sent.text, e.start_char - sent.start_char,
                                                      e[0].idx + len(e[0]) - sent.start_char):
            continue
        # a date with no number and no name in it is relative ("the latter half", "the year
        # ahead"): it places nothing in time by itself
        relative = e.label_ in ("DATE", "TIME") and not any(t.like_num or t.pos_ == "PROPN" for t in e)
        text = e.text + (_glued_unit(doc_text(sent.doc), e.end_char) if e.label_ in NUMERIC_LABELS else "")
        if e.label_ in ("DATE", "TIME") and a.target == "year":
            # "which year ...": the year the date holds ("the financial year ended 31st March,
            # 2007" → "2007", "2015-16" as written); a date without one ("the 12th") does not say it
            year = _YEAR.search(text)
            if year is None:
                continue
            text = year.group(0)
        cands.append((close(e.start, e.end) - (1.0 if relative else 0.0) - _other_unit(a, text), text))
    if a.kind == "quantity":
        dates = [(e.start_char, e.end_char) for e in sent.ents if e.label_ in ("DATE", "TIME")]
        for m in _NUMBER.finditer(sent.text):
            txt = _balanced(m.group(0).strip())
            before = sent.text[:m.start()]
            if txt in a.years or not re.search(r"\d", txt) or _LABEL_BEFORE.search(before) or _PLACEHOLDER.search(before):
                continue
            at = sent.start_char + m.start()
            if _names_a_part(sent, at, parts) or _cites(doc_text(sent.doc), at, sent.start_char + m.end()):
                continue
            unit = _glued_unit(sent.text, m.end())
            if any(lo <= at < hi for lo, hi in dates) or (
                    not unit and re.match(r"[.\-–]\d|[A-Za-z]|['’]s", sent.text[m.end():m.end() + 2])):
                continue
            txt += unit
            if enumerates(sent.text, m.start(), m.end()):
                continue
            tok = sent.doc.char_span(sent.start_char + m.start(), sent.start_char + m.end(), alignment_mode="expand")
            if tok is not None and a.measure and _counts_another(tok.root, weights):
                continue
            if tok is not None:
                # a percentage asked for is written as one ("65%", "65 percent") in a sentence
                unlike = 2.0 if a.labels == ("PERCENT",) and not re.search(r"%|percent", txt, re.I) else 0.0
                cands.append((close(tok.start, tok.end) - 0.1 - max(unlike, _other_unit(a, txt)), txt))
    if a.kind == "entity" and (a.labels == _LABELS_BY_WH["where"] or (a.target and not a.labels)):
        # "where are X stored?", "what channel is X sold by?": the place or the means the
        # sentence gives the question's own verb (`_placed`)
        for lo, hi, text in _placed(sent, q_words, a.slots):
            cands.append((close(lo, hi) + PLACED, text))
    # "which function reads fixed-width files?": the names the sentence gives that noun (`_named_spans`)
    cands.extend(named)
    if a.kind == "entity" and "DATE" not in a.labels and not cands:  # a date is a date; a name the recogniser missed
        # a chunk inside an entity of a type not asked is that type ("by January each year" is a
        # date, not who did it)
        other = [(e.start, e.end) for e in sent.ents if a.labels and e.label_ not in a.labels]
        for ch in sent.noun_chunks:
            if all(t.lemma_.lower() in q_words or t.lower_ in q_words or t.is_stop for t in ch):
                continue
            if any(lo <= ch.root.i < hi for lo, hi in other):
                continue
            if not (names_something(ch) or (ch.root.lemma_.lower() == a.member and any(
                    t.dep_ in ("amod", "compound", "conj") and not t.is_stop and t.lemma_.lower() not in q_words
                    for t in ch))):
                continue
            # "what type of court" → "the SUPERIOR COURT": a chunk headed by the noun asked names a
            # kind of it, its own head counting as a question word beside it; one headed by another
            # common noun of the question ("which judges' opinions" → "UNPUBLISHED OPINION") names
            # what the question already says (a name the question gives, "/var/games", may answer)
            root = ch.root.lemma_.lower()
            if root in q_words and root not in (a.target, a.member) and ch.text.lower().strip() not in a.names:
                continue
            kind_of = weights.get(root, 0.0)
            cands.append((close(ch.start, ch.end) + kind_of - 0.2, ch.text))
    out: dict[str, float] = {}
    for c, text in sorted(cands, key=lambda x: -x[0]):
        out.setdefault(text.strip(" ,;"), c)
    return [(c, t) for t, c in out.items() if t]


def _counts(sent: Any, span: str, noun: str) -> bool:
    """Whether `span` of the sentence is a number counting `noun` ("R has three statements that
    provide explicit looping"): how many of them, which answers no "which N" question."""
    part = _span_of(sent, span)
    return part is not None and part.root.dep_ == "nummod" and part.root.head.lemma_.lower() == noun


def _counts_another(number: Any, weights: dict[str, float]) -> bool:
    """Whether a number token counts a noun the question does not say, in a sentence that says
    less than half of what the question says, by weight ("There is one required subdirectory,
    /var/lib/misc ..." for "how long must data in /var/tmp be preserved?"): it answers how many
    of those, not the measure asked (`Asked.measure`). A unit counted where the question's words
    are ("keep the length of source lines to 79 characters") is the measure."""
    if number.dep_ != "nummod" or number.head.pos_ != "NOUN" or number.head.lemma_.lower() in weights \
            or number.head.lower_ in weights:
        return False
    said = {t.lemma_.lower() for t in number.sent} | {t.lower_ for t in number.sent}
    return sum(w for t, w in weights.items() if t in said) < 0.5 * sum(weights.values())


def _placed(sent: Any, q_words: set[str], slots: frozenset[tuple[str, str]] = frozenset()) -> list[tuple[int, int, str]]:
    """The objects of the prepositions the sentence attaches to the question's own verb (a verb
    whose lemma the question says): where, how or by what it is done ("are stored in
    <mandir>/<locale>/man<section>", "are recorded at the lower of cost or net realizable
    value", "sell the majority of our products through a software subscription model where
    ..."), as (start, end, text): the phrase the object heads, without a clause that qualifies
    it, however the parser cut a path into tokens; not one the question already says, nor one
    of a preposition the question gives the same verb itself (`Asked.slots`: "which model
    performs best on Cladder?" is not answered by "performs best on commonsensical data")."""
    out = []
    for t in sent:
        if t.dep_ != "prep" or t.head.pos_ not in ("VERB", "AUX") or t.head.lemma_.lower() not in q_words:
            continue
        if (t.head.lemma_.lower(), t.lower_) in slots:
            continue
        objs = [c for c in t.children if c.dep_ == "pobj"]
        if not objs:
            continue
        lo, hi = min(c.left_edge.i for c in objs), max(c.right_edge.i for c in objs) + 1
        clauses = [c.left_edge.i for o in objs for c in o.children if c.dep_ in ("relcl", "acl") and c.left_edge.i > o.i]
        if clauses:
            hi = min(clauses)  # "a software subscription model [where our customers ...]"
        while hi < sent.end and not sent.doc[hi - 1].whitespace_ and sent.doc[hi].text not in ".,;:":
            hi += 1  # the rest of a word the parser split off ("<arch" + ">")
        span = sent.doc[lo:hi]
        if all(x.is_punct or x.is_stop or x.lemma_.lower() in q_words for x in span):
            continue
        out.append((lo, hi, span.text.strip(" .,;")))
    return out


# a statement's declared scale: "(in thousands)", "$ in millions", "(Amounts in millions, ...)",
# "(000's)"; not the scale of another quantity ("shares in thousands")
_DECLARED = re.compile(rf"(?:\(\s*|\$\s*|\b(?:amounts|dollars)\s+)in\s+({SCALE_WORD})s\b|\((000)['’]?s\)", re.I)
_TITLE_SCALE = re.compile(rf"\bin\s+({SCALE_WORD})s\b", re.I)  # "In Millions Fiscal 2020"
_OWN_SCALE = re.compile(rf"\b({SCALE_WORD})s?\b", re.I)


def declared_scale(passage: Passage, at: int) -> str:
    """The scale the passage declares for the values after it, the nearest declaration before
    text offset `at` ("(in thousands)" over a statement), else one in its titles ("In Millions
    Fiscal 2020"): "thousand", "million", "billion", "trillion", or ""."""
    found = [m for m in _DECLARED.finditer(passage.text) if m.start() < at]
    m = found[-1] if found else None
    if m is None:
        m = next((x for t in passage.title_path if (x := _TITLE_SCALE.search(t))), None)
        return m.group(1).lower() if m else ""
    return "thousand" if m.group(2) else m.group(1).lower()


def in_scale(value: str, asked: str, declared: str) -> str:
    """`value` restated in the scale the question asks for ("$381,603" declared in thousands,
    asked in millions: "$381.603 million"), "" when it needs no restating or cannot be: a value
    with its own scale word ("$3.2 billion") is in that scale, else in the one declared."""
    own = _OWN_SCALE.search(value)
    scale = own.group(1).lower() if own else declared
    if not asked or not scale or scale == asked or re.search(r"%|percent", value, re.I):
        return ""
    m = re.search(DIGITS, value)
    if m is None:
        return ""
    amount = float(m.group(0).replace(",", "")) * SCALES[scale] / SCALES[asked]
    negative = value.strip().startswith(("(", "-", "−")) and not own
    currency = next((c for c in CURRENCY if c in value), "")
    number = f"{amount:,.3f}".rstrip("0").rstrip(".")
    return f"{'-' if negative else ''}{currency}{number} {asked}"


def _scale_printed(value: str, passages: list[Passage]) -> str:
    """The scale declared for `value` where it is printed: in the first of `passages` (the one
    the answer is read from), else in another passage that prints the same digits under a
    declared scale (a statement's table shown without the "(in thousands)" above it, the same
    amount in a summary table that declares it)."""
    digits = re.search(r"\d[\d,.]*\d|\d", value)
    first = passages[0]
    if digits is None:
        return declared_scale(first, len(first.text))
    at = first.text.find(digits.group(0))
    declared = declared_scale(first, at if at >= 0 else len(first.text))
    for p in {id(p): p for p in passages[1:]}.values() if not declared and len(digits.group(0)) >= 4 else ():
        at = p.text.find(digits.group(0))
        if at >= 0 and (declared := declared_scale(p, at)):
            break
    return declared


def _cites(text: str, start: int, end: int) -> bool:
    """Whether the number at text[start:end] is a citation marker ("a strategy [96]", "[3, 12]"):
    it numbers a reference, it counts nothing."""
    return bool(re.search(r"\[[\d,\s–-]*$", text[max(0, start - 12):start])
                and re.match(r"[\d,\s–-]*\]", text[end:end + 12]))


def _balanced(number: str) -> str:
    """A number without the bracket of a parenthesis it opens or closes ("(80%" of "(80% in
    2017)", "150)" of "(population 150)"); "(460.8)", a negative amount, keeps both."""
    if number.startswith("(") and not number.endswith(")"):
        return number[1:].lstrip()
    if number.endswith(")") and not number.startswith("("):
        return number[:-1].rstrip()
    return number


# a unit written onto its number ("4in", "10pt", "2.5cm", "512MB"): not an ordinal's ending ("3rd")
# nor one capital, which names rather than measures ("5G", "2D")
_GLUED_UNIT = re.compile(r"(?!(?:st|nd|rd|th)\b)(?:[A-Za-z]{2,3}|[a-z])\b(?![-.]\w)")


def _glued_unit(text: str, end: int) -> str:
    """The unit written onto the number that ends at `end` of `text`, '' where none is: a
    dimension in a manual is one word ("The default is 4in."), and the number alone is not it."""
    m = _GLUED_UNIT.match(text, end)
    return m.group(0) if m and end > 0 and text[end - 1].isdigit() else ""


def _other_unit(a: Asked, text: str) -> float:
    """What a value written in another unit than the one the question asks its answer in loses
    ("Answer in USD millions": a percentage; "in percent": an amount of money): 2.0, else 0."""
    percent = bool(re.search(r"%|percent", text, re.I))
    if (a.unit == "MONEY" and percent) or (a.unit == "PERCENT" and not percent and re.search(rf"[{CURRENCY}]", text)):
        return 2.0
    return 0.0


def _stop_word(word: str) -> bool:
    """Whether spaCy's English lists `word` as a stop word (False without the model)."""
    nlp = english_if_installed()
    return nlp is not None and bool(nlp.vocab[word].is_stop)


def _continues(text: str) -> bool:
    """Whether `text` opens with a stop word in lower case ("and other current liabilities"):
    the rest of a label the layout cut, not a value of its own."""
    first = re.match(r"[a-z]+\b", text.strip())
    return first is not None and _stop_word(first.group(0))


def _stops_open(text: str) -> bool:
    """Whether `text` ends on a stop word ("default is", "the value of"): a piece of a sentence
    the layout cut, not a text of its own."""
    last = re.search(r"\b([a-z]+)\W*$", text.strip())
    return last is not None and _stop_word(last.group(1))


def _keyed(key: str, value: str, a: Asked) -> bool:
    """Whether a "Key: value" line's key names what the question asks: the noun asked for
    ("Email: ..." for "what is the email"), or, for a description, a short key made of the
    question's own content words ("Fax : 514-312-0292" for "What is INF's FAX No?"; not "The
    answer: Yes", nor "UNIT 15: ..." for "UNIT 14") over a value that names something (not a
    letter, not a phrase opening with a stop word: a row label run on past its colon)."""
    if len(re.sub(r"\W", "", value)) < 2 or _continues(value):
        return False
    if a.target and a.target in _lemmas(key):
        return True
    words = re.findall(r"\w+", key.lower())
    return a.kind == "describe" and bool(words) and len(words) <= 3 and all(w in a.terms for w in words)


def _says_the_rest(words: frozenset[str], a: Asked, weights: dict[str, float]) -> bool:
    """Whether a sentence holds most of what the question says besides the verb and the thing
    asked (its names, its other words, by weight): only then does the verb's subject or object
    there answer ("It may also contain commands" does not say what /sbin contains)."""
    rest = {t: w for t, w in weights.items() if t != a.verb and t != a.target}
    total = sum(rest.values())
    return total > 0 and sum(w for t, w in rest.items() if t in words) >= 0.5 * total


def _fillers(sent: Any, a: Asked, weights: dict[str, float]) -> list[str]:
    """What the sentence puts in the role the question asks about, for the verb of lemma
    `a.verb`: its object ("... TTT that defines phenylalanine") or its subject ("part of the
    un-translated region ... will be included"), a passive verb's roles swapped (the subject
    of "X acquired Y" is the agent of "Y was acquired by X"), each as the noun phrase it heads
    (its head and what precedes it when the phrase is long), the question's own words excepted."""
    out = []
    for t in sent:
        if t.lemma_.lower() != a.verb or t.pos_ not in ("VERB", "AUX"):
            continue
        passive = any(c.dep_ in ("nsubjpass", "auxpass") for c in t.children)
        if a.role == "object" or (a.role == "passive subject" and not passive):
            roles = ("nsubjpass",) if passive else ("dobj", "attr", "oprd")
        elif a.role == "passive subject":
            roles = ("nsubjpass",)
        else:
            roles = ("pobj",) if passive else ("nsubj",)
        heads = [c for c in t.children if c.dep_ in roles]
        if a.role == "subject" and passive:  # "... was acquired by X": the agent's object
            heads = [o for c in t.children if c.dep_ == "agent" for o in c.children if o.dep_ == "pobj"]
        for o in heads:
            if o.pos_ not in ("NOUN", "PROPN", "NUM") or o.lemma_.lower() in weights:
                continue
            long = sum(1 for _ in o.subtree) > 12
            phrase = sent.doc[o.left_edge.i:(o.i if long else o.right_edge.i) + 1].text
            out.append(phrase.strip(" ,;"))
    return out


def names_something(chunk: Any) -> bool:
    """Whether a noun chunk names a thing rather than describing one: it holds a proper noun, a
    number, an all-capital word or a token with symbols in it (a path, a call, a version:
    "/usr/local", "na.locf", "the SUPERIOR COURT"). "some binary software" or "the following
    directories" only describe, and a described thing does not answer "which ..."; the
    sentence then answers. A word in lower case is no proper noun, whatever the tagger says
    ("Loadable kernel modules (optional)")."""
    return any((t.pos_ == "PROPN" and not t.is_lower) or t.pos_ == "NUM" or t.like_num
               or (t.is_upper and len(t.text) > 1) or not (t.is_alpha or t.is_punct) for t in chunk)


def assigned(text: str, names: Collection[str]) -> list[tuple[str, str]]:
    """(line, value) for each line of `text` that sets one of `names` ("319 \\multicoltolerance =
    9999", "HISTSIZE=500"): a manual's code gives a setting its value this way."""
    wanted = {n.lower() for n in names}
    out = []
    for line in text.splitlines():
        for m in _ASSIGNED.finditer(line):
            if m.group(1).lower() in wanted:
                out.append((" ".join(line.split()), m.group(2).rstrip(";,")))
    return out


# a name set to a value: "\multicoltolerance = 9999", "HISTSIZE=500", "\LTcapwidth=4in"
_ASSIGNED = re.compile(r"(?<![\w\\@])(\\?[A-Za-z@][\w@.]*)\s?=\s?([^\s=]+)")


def as_subject(words: Collection[str], weights: dict[str, float]) -> float:
    """A short text (a long form, a gloss, a glossed title) scored as `candidates` scores a sentence
    with the thing asked as its subject: the question's words in it by its length, plus what a
    sentence gets for naming the thing (0.8), having it as subject (1.2) and describing it (0.6)."""
    hit = sum(w for t, w in weights.items() if t in words)
    return hit / math.sqrt(len(words) + 4) * 3 + 0.8 + 1.2 + 0.6


def span_score(sentence_score: float, close: float, bound: bool) -> float:
    """A span's score: half its sentence's (which counts the question's words anywhere in it),
    how closely those words surround the span, and whether the sentence gives it as the value
    of the thing asked about (`_bound`)."""
    return 0.5 * sentence_score + close + (1.0 if bound else 0.0) + 0.8


def _span_of(sent: Any, span: str) -> Any:
    """The tokens of the sentence's first occurrence of the text `span` (None when it has none)."""
    at = sent.text.find(span)
    return sent.doc.char_span(sent.start_char + at, sent.start_char + at + len(span),
                              alignment_mode="expand") if at >= 0 else None


def _bound(sent: Any, span: str, target: str, reach: int = 8) -> bool:
    """Whether the sentence gives `span` as the value of the noun a "what is the N" question
    asks about: a token of lemma `target` within `reach` tokens of it ("The goodwill balance
    was $1,383 million")."""
    part = _span_of(sent, span) if target else None
    if part is None:
        return False
    head = part.root  # "was $4.9 billion, $6.4 billion and $8.8 billion": a listed value stands where its list starts
    while head.dep_ in ("conj", "appos") and head.head.i != head.i:
        head = head.head
    return any(t.lemma_.lower() == target and min(abs(t.i - part.start), abs(t.i - head.i)) <= reach for t in sent)


COPULA_VALUE_CHARS = 40  # the longest value "the N is V" gives that reads as a value, not a clause


def copula_value(sent: Any, target: str, said: Collection[str] = (), qualifiers: Collection[str] = ()) -> str:
    """V of "the N is V", N the noun asked ("The default value is ‘> ’." for "what is the default
    value of PS2?"): what the sentence says the value is, whatever it is (a quoted string, a path,
    a word), as a manual states a setting's value; '' when the sentence does not say N is something,
    or says it of an N the question does not ask ("The default zero value is ...": every word of
    the subject must be one of `said`, when given). The subject may be one of the noun's
    `qualifiers` alone: "The default is 4in." says the default width in the item on the width."""
    root = sent.root
    subject = next((c for c in root.children if c.dep_ == "nsubj" and (
        c.lemma_.lower() == target or (c.lemma_.lower() in qualifiers and c.pos_ == "NOUN"))), None) \
        if root.lemma_ == "be" else None
    # by a qualifier alone the sentence may speak of another thing's default ("The default is
    # empty." of another option): only a value written as one, a number or code, reads as N's
    by_qualifier = subject is not None and subject.lemma_.lower() != target
    if subject is None or (said and any(t.is_alpha and t.pos_ != "DET" and t.lower_ not in said
                                        and t.lemma_.lower() not in said for t in subject.subtree)):
        return ""
    rest = doc_text(sent.doc)[root.idx + len(root.text):sent.end_char]
    value = re.split(r",\s|;|\.\s|\s\(", rest, maxsplit=1)[0].strip().rstrip(".").strip()
    if by_qualifier and not (value[:1].isdigit() or tools(value) or _CODEISH.fullmatch(value)):
        return ""
    return value if 0 < len(value) <= COPULA_VALUE_CHARS and not re.match(r"(?:not|also|set|taken|used)\b", value) \
        else ""


def plural(t: Any) -> bool:
    """Whether a word is inflected with an "s" ("variables", "builtins"; not "formatting")."""
    return t.lower_ != t.lemma_ and t.lower_.endswith("s")


@lru_cache(maxsize=4096)
def titles_many(title: str, noun: str) -> bool:
    """Whether a title names a list of `noun`s: its head is the noun's plural, or a plural the
    noun modifies ("5.2 Bash Variables", "Options for the amsmath package", "Function references",
    "Bash Builtin Commands"; not "The Shopt Builtin", a section on one, nor "Substitution of
    system commands", a section on something else). Read in lower case (the tagger takes a
    title's capitals for proper nouns, which it does not lemmatise), by the lemma rather than the
    tag: a title is no sentence, and the tagger reads "shell builtins" as a verb."""
    nlp = english_if_installed()
    if nlp is None:
        return False
    toks = list(nlp(title.lower(), disable=["ner"]))
    for t, nxt in zip(toks, [*toks[1:], None]):
        if t.lemma_ != noun:
            continue
        if (plural(t) and t.dep_ == "ROOT") or (nxt is not None and nxt.i == t.head.i and nxt.dep_ == "ROOT"
                                                 and plural(nxt)):
            return True
    return False


@lru_cache(maxsize=4096)
def _lemmas(text: str) -> frozenset[str]:
    """The lemmas of a short text (a table row's label, a passage's titles), lower case. The
    lemmatizer reads the tagger's parts of speech only: the parser and the entity recogniser are
    skipped (a third of the time, the same lemmas)."""
    nlp = english_if_installed()
    if nlp is None:
        return frozenset(text.lower().split())
    return frozenset(t.lemma_.lower() for t in nlp(text[:300], disable=["parser", "ner"]))


def read(question: str, passages: list[Passage], numbers: list[int] | None = None,
         furniture: frozenset[str] = frozenset(), entries: frozenset[str] = frozenset(),
         page_labels: list[str] | None = None, choose: Chooser | None = None,
         explain: Callable[[Asked, list[Candidate], Candidate], None] | None = None) -> tuple[str, list[int]]:
    """The extractive answer to `question` from the numbered `passages`: (text, citations);
    ("", []) when no sentence holds any of the question's words. `furniture`: running headers
    and footers (`recurring_blocks`); `entries`: the ids of reference entries and of their blocks,
    an entry's name answering a "which function / command ..." question asked of its passage;
    `page_labels`: the numbers the document prints on its pages, named in a which-page answer
    where they differ from the PDF's; `choose`: which candidate answers (`best_candidate`'s hand-set
    order when None; `candidate_scorer.fitted_choice` with fitted weights); `explain`: called with
    the question read, every candidate and the chosen one (what `--explain` shows)."""
    a = _asked_once(question)
    cands = candidates(a, passages, numbers, furniture, entries)
    if not cands:
        return "", []
    chosen = choose(a, cands) if choose is not None else best_candidate(cands)
    if explain is not None:
        explain(a, cands, chosen)
    return render_answer(a, chosen, cands, page_labels, passages)


def read_quantity(question: str, passages: list[Passage], numbers: list[int] | None = None,
                  furniture: frozenset[str] = frozenset(), entries: frozenset[str] = frozenset()
                  ) -> tuple[str, list[int]] | None:
    """`read`'s answer to a quantity question ("how many", "what percentage", an amount) when its
    best candidate is a number of the kind asked; None for another question, or when the reader
    only finds a sentence. What the in-process model is not asked (`answer.extractive_quantities`)."""
    a = _asked_once(question)
    if a.kind != "quantity":
        return None
    cands = candidates(a, passages, numbers, furniture, entries)
    if not cands or not best_candidate(cands).fits:
        return None
    return _answer(a, cands, None, passages)


def candidates(a: Asked, passages: list[Passage], numbers: list[int] | None = None,
               furniture: frozenset[str] = frozenset(), entries: frozenset[str] = frozenset()) -> list[Candidate]:
    """Every scored answer candidate of the passages (`read` answers with the best)."""
    nlp = english_if_installed()
    if nlp is None or not passages:
        return []
    nums = numbers or list(range(1, len(passages) + 1))
    terms = tuple(a.terms)
    parsed: list[tuple[int, Passage, list[_Sentence | None]]] = []
    titles: list[str] = []  # each parsed passage's `title_words`
    items_of: list[list[tuple[int, int]]] = []  # each parsed passage's `term_items` of the thing described
    for k, p in zip(nums, passages):
        if set(p.node_ids) <= furniture or listing_share(p.text) >= 0.5:
            continue
        # under a title holding a question word every sentence may score (`in_title`); elsewhere
        # only the lines holding one
        title = title_words(p)
        titles.append(title)
        items = term_items(p.text, a.described) if a.kind == "describe" and a.described else []
        items_of.append(items)
        # the item of a term asked about is read whole: its sentences need not repeat the name
        whole = any(t in title for t in terms) or bool(items)
        parsed.append((k, p, _sentences(nlp, p, None if whole else terms)))
    if a.kind in ("quantity", "date", "entity") or a.value:  # answered by an entity of the sentence (`_spans`)
        _with_entities(nlp, [s for _, _, ss in parsed for s in ss if s is not None])
    # a line left unparsed holds none of the words, so it counts in n and in no word's df
    texts = [s.text if s is not None else "" for _, _, ss in parsed for s in ss]
    weights = _idf(a.terms, texts or [p.text for _, p, _ in parsed])
    # a key the evidence names by the question's words run together ("urlcolor" for "what color
    # are URL links", "bookmarksnumbered" for "section numbers ... bookmarks") is a question word
    # of its own, weighing what its parts do; and, where the noun asked is not one of its parts, the name
    # asked ("which option ...": the key, not "what color ...": the key is what has the colour),
    # unless the question says its parts as a phrase ("batch files": "batchfile" is what it says)
    stem = dict(zip(terms, stem_words(list(terms))))
    target_stem = stem_words([a.target])[0] if a.target else None
    joined = joined_words(terms, {w for t in texts for w in tokenize(t)}, a.names)
    for j in joined:
        weights[j] = sum(max(weights[t] for t in terms if stem[t] == stem[part]) for part in joined_parts(j, terms))
    # (a phrase the question says is what it asks about, "batch files": "batchfile"; but a function
    # the evidence writes as a call is a function's name whatever the question says, "rolling
    # means": "rollmean()")
    called = "\n".join(texts).lower() if a.target == "function" else ""
    keys = frozenset(j for j in joined_words([t for t in terms if stem[t] != target_stem],
                                             joined, a.names)
                     if not _phrase_said(j, a) or f"{j.lower()}(" in called) \
        if a.kind == "entity" and a.target and joined else frozenset()
    numeric = replace(a, kind="quantity", labels=NUMERIC_LABELS)  # what a value question's number is read as
    about = document_subject(a, [p for _, p, _ in parsed])
    parts = part_labels([p for _, p, _ in parsed]) if a.kind == "quantity" or a.value or a.kind == "entity" \
        else frozenset()
    cands: list[Candidate] = []
    # "which function / command ..." over a reference manual (a document with reference entries):
    # the answer is the name of a unit the manual names (an entry or a section), and the rank
    # retrieval gave it is the strongest evidence of which one, not a phrase of a passage
    by_entry = a.kind == "entity" and bool(a.target) and bool(entries)
    # "what does X do?" where the evidence holds the entry or section named X: it says; so does
    # the entry of a name spelled as code for any question ("what is the default value of
    # save_default_options?"), where another entry's value is another setting's
    own_entry = any(p.name.lower() in a.names and (a.kind == "describe" or is_identifier(p.name))
                    for _, p, _ in parsed if p.name)
    # titles every passage has (the document's own): they tell no passage apart
    everywhere = frozenset(set.intersection(*(set(p.title_path) for _, p, _ in parsed))) \
        if len(parsed) > 1 else frozenset()
    how_to = a.procedure and not a.manner  # "how do I ...": the reader's own action, not a third party's
    kinds = kinds_by_spelling([p.text for _, p, _ in parsed]) if a.kind == "entity" and a.target and not a.labels \
        else {}
    for rank, (k, p, sents) in enumerate(parsed):
        if own_entry and (p.name.lower() not in a.names or not (a.kind == "describe" or is_identifier(p.name))):
            continue
        # a passage of a reference entry is answered by the entry's name; one of another section
        # ("2.2 Fixed-width-format files") by what its sentences name (`named_as`)
        in_entry = by_entry and bool(p.name) and (p.node_id in entries or not entries.isdisjoint(p.node_ids))
        prior = 0.6 / (1 + rank)
        title = titles[rank]
        entry_named = sum(1 for n in a.names if n in p.name.lower())  # the passage is the entry asked about
        own = {n for n in a.names if n == p.name.lower()}
        section = _section_named(p, weights, everywhere)
        items = items_of[rank]
        # a list of the kind of thing a "which N" question asks for: its own section titled with
        # N's plural ("5.2 Bash Variables"; not "4.3.2 The Shopt Builtin", a list of options)
        listed = a.kind == "entity" and bool(a.target) and bool(p.title_path) \
            and titles_many(p.title_path[-1], a.target)
        # "what is a tie?" over "1.316 tie", "how do I write a block comment?" under "2.7.2 Block
        # Comments": the section the document titles with the term or the thing acted on; its first
        # prose sentence says it, as an item's does, without repeating the name (`titled_with`)
        defining = _first_prose(sents) if p.title_path and titled_with(p.title_path[-1], a) else -1
        # "how do I ...": the passage's usage line, which an answer from it shows (`_answer`)
        usage_tool = how_to and tools_named(_usage_line(p, a), a.said_tools)
        # "how do I print the contents of a structure?" over a reference manual: the entry whose
        # name is made of the question's words ("asn1_print_structure") is the function that does it
        name_parts = identifier_words(p.name) if how_to and p.name and entries \
            and (p.node_id in entries or not entries.isdisjoint(p.node_ids)) else frozenset()
        named_for = bool(name_parts) and name_parts <= set(weights)
        for order, sent in enumerate(sents):
            if sent is None:
                continue
            s, words = sent.span, sent.words
            # the name of the entry asked about says nothing more in its own sentences (its
            # prototype repeats it): there the sentence scores by the question's other words
            text = sent.text
            at = p.text.find(text[:60]) if items else -1
            # "Shift the positional parameters ..." under the term "shift": the manual's own
            # description of the thing asked, as an entry's sentences are, its first most of all;
            # each of them speaks of the term whether or not it repeats its name
            in_item = any(lo <= at < hi for lo, hi in items)
            opens_item = (any(lo <= at <= lo + 2 for lo, _ in items) and not _LABELLED.match(text)) \
                or order == defining
            hit = sum(w for t, w in weights.items() if (t in words or (in_item and t in a.described)) and t not in own)
            in_title = sum(w for t, w in weights.items() if t in title and (t not in words or t in own))
            if (hit + in_title <= 0 and not in_item) or not sent.alpha:
                continue
            if not sent.has_verb and heads_listing(p, text):
                continue  # "Table of Contents", "Index": the heading of a listing names nothing asked
            if a.kind == "describe" and _POINTER.search(text):
                continue  # "See Section 7.31 [...], page 37, for more details": the answer is there
            if a.described and names_term(text, a.described):
                continue  # the term's own line or its synopsis ("caller", "caller [expr]") names it
            synopsis = _SYNOPSIS.match(text)
            if synopsis and synopsis.group(1).lower() in a.names:
                continue  # "val = save_default_options ()": the synopsis of the entry asked about
            low = text.lower()
            named = sum(1 for n in a.names if n in low) + entry_named
            # "lapply returns a list ...", "A coprocess is a shell command ..." for "what is a coprocess?"
            subject = bool(sent.subjects.intersection(a.names)) or (a.definition and any(
                t.dep_ == "nsubj" and t.head.dep_ == "ROOT" and t.lemma_.lower() == a.target for t in s))
            if opens_item:
                subject, named = True, named + 1
            has_verb = sent.has_verb
            # the question's words in the sentence count by its length; in its section title once
            sc = hit / math.sqrt(sent.tokens + 4) * 3 + 0.3 * in_title + 0.8 * named + 1.2 * subject + prior \
                + (IN_ITEM if opens_item else 0.0)
            if (a.kind in ("describe", "yesno", "page", "section") or in_entry) and (not has_verb or sent.tokens < 4):
                sc -= 1.0  # a fragment ("show output", a heading) does not describe
            if a.kind == "describe" or in_entry:
                # a description states what its subject does: the name as subject, or a sentence
                # opening with the present-tense verb of a reference entry ("Creates the ...");
                # a "name: ..." item describes a parameter, not the entry
                if subject or sent.opens_with_verb:
                    sc += 0.6
                if a.definition and subject and sent.copula:
                    sc += DEFINES  # "what is CRAN?": "... (CRAN) is a collection of sites ..."
                if _LABELLED.match(text):
                    sc -= 0.6
                if sent.symbols > 0.3 * sent.tokens:  # a prototype or a code line: it names, it does not describe
                    sc -= 1.0
            if a.kind == "describe" and sent.anaphoric:
                sc -= LEANS  # "However, block comments do not nest.": the sentence before says what it adds to
            if a.kind == "describe" and _CODEISH.search(text) and not named:
                sc += 0.2  # "how do I ...": the sentence naming the function or command that does it
            if named_for:
                sc += NAMES_TOOL  # the entry named for the action: its sentences say what to call
            if how_to and (usage_tool or _shows_tool(p, text, a.said_tools)):
                sc += NAMES_TOOL  # "how do I ...": the command, option or function to use, not only the task
            if how_to and sent.imperative:
                sc += INSTRUCTS  # "how do I change the precision?": "Change the precision to ..., by typing \p 100"
            if a.action and a.action not in words and a.action not in title:
                sc -= ACTIONLESS  # "how do I merge ...": a sentence on creating objects does not say
            sentence = " ".join(text.split())
            first_new = len(cands)
            sent_parts = {"hit": hit, "in_title": in_title, "named": float(named), "subject": float(subject),
                          "opens_item": float(opens_item), "tokens": float(sent.tokens), "sentence": sc}
            # "which function ...": the names the sentence gives the noun asked about (`named_as`)
            # ("what is the N": not where N is a piece of a name the question gives, "/var/tmp")
            given = _named_spans(s, a, weights) if a.target and (a.kind == "entity" or (
                a.value and not a.definition and not any(a.target in n for n in a.names))) else []
            if keys and not keys.isdisjoint(words):
                anchors = _anchors(s, weights)
                # (the key's own words are the question's at no distance, as a code name's are)
                given = [*given, *((_near(anchors, t.i, t.i + 1) + NAMED_AS + weights.get(t.lower_, 0.0), t.text)
                                   for t in s if t.lower_ in keys)]
            # (a sentence that says none of the question's words describes another term; a
            # synopsis line, "[-d delim]", describes none; the tagger reads a description's
            # opening verb as a plural noun, "Selects a text font ...")
            described = sent.has_verb or (sent.tokens >= 5 and sent.symbols <= 0.3 * sent.tokens)
            term = item_term(p, text) if (listed or kinds) and described and hit > 0 else ""
            if term and not listed and a.target not in kinds.get(spelling(term), ()):
                term = ""
            if term and term.lower() not in weights and term.lower() not in a.names:
                # "which variable sets ...": the term of the definition-list item the sentence
                # opens, where the document titles the list with the noun asked ("5.2 Bash Variables"),
                # or where the term is spelled the way the document spells names of that kind
                # ("\autoref{label}" for "which command ...", beside "the usual \ref command")
                given = [*given, (_near(_anchors(s, weights), s.start, s.start) + NAMED_AS, term)]
            if a.kind == "entity" and a.target and a.objects and acts_on_another(s, a.objects, weights):
                given = []  # "which command declares an option?": "... it declares a robust command" names another
            if by_entry and p.name and p.name.lower() not in a.names:
                # "which function / command ...": the reference entry the sentence belongs to; the
                # rank retrieval gave the entry is the strongest evidence of which one it is. Outside
                # an entry, a name the sentence gives the noun asked ("Function read.fwf reads
                # ...") is the answer, and the section's name only where the sentence gives none.
                entry_score = 0.1 * sc + 2.0 / (1 + rank)
                for close, word in ([] if in_entry else given):
                    cands.append(Candidate(span_score(sc, close, True), k, p, sentence, word, order, fits=True,
                                           via="entry_given", parts=sent_parts))
                cands.append(Candidate(entry_score, k, p, sentence, p.name, via="entry_name", parts=sent_parts))
                continue
            spans: list[tuple[float, str]] = []
            if a.kind in ("quantity", "date", "entity"):
                spans = _spans(s, a, weights, parts, given if not a.labels else [])[:SPANS_PER_SENTENCE]
            if a.kind == "entity" and a.target and not a.labels and section and _titles_the_noun(section[1], a):
                # "which step / what type of court ...": the section the sentence is in, named by
                # its innermost title that shares a word with the question and names the noun asked
                # ("SUPERIOR COURT"); against the sentence's own spans, as a span whose question
                # words are the title's. A title that names something else ("3.1 Monitoring your
                # heart rate" for "what kind of environment") is where the answer is, not what it is.
                cands.append(Candidate(span_score(sc, section[0], False) if spans else sc + 0.9, k, p, sentence,
                                       section[1], order, via="section_title"))
            verb = has_verb and sent.tokens > 3
            if a.verb and _says_the_rest(words, a, weights):
                for filler in _fillers(s, a, weights):
                    cands.append(Candidate(span_score(sc, 1.0, True), k, p, sentence, filler, order, verb, fits=True, via="verb_filler"))
            # a "Key: value" line gives a value, which answers neither a how nor a why
            keyed = _KEY_VALUE.match(sentence) if (a.target or a.kind == "describe") \
                and not (a.procedure or a.reason) else None
            if keyed and _keyed(keyed.group(1), keyed.group(2), a) and not set(_lemmas(keyed.group(2))) & set(a.terms):
                # "Email: x@y.org", "Subskill: Semantic Parsing": a line that names the thing asked
                # as its key gives its value; in a definition list's item ("Default: "a4"" under
                # "paper-size ..."), with what the item says of the rest of the question
                cands.append(Candidate(span_score(sc + _item_says(p, text, words, weights), 1.0, True), k, p,
                                       sentence, keyed.group(2), order, verb, fits=True, via="key_value"))
            # (not for a definition, which the whole sentence gives, nor a value naming what is asked)
            stated = copula_value(s, a.target, a.said | set(a.terms), a.qualifiers) if a.target and not a.definition \
                and (a.value or a.kind == "quantity") else ""
            if stated and not _NUMBER.match(stated) and not any(n in stated.lower() for n in a.names):
                # "The default value is ‘> ’." under "PS2": the value the sentence gives the N asked,
                # a number or not (a number is read by the numeric spans), with its item's words
                cands.append(Candidate(span_score(sc + _item_says(p, text, words, weights), 1.0, True), k, p,
                                       sentence, stated, order, verb, fits=True, via="copula_value"))
            if a.kind in ("quantity", "date", "entity") and not spans:
                # a sentence without an answer of the asked type is a fallback, a quantity's most
                cands.append(Candidate(sc - (2.0 if a.kind == "quantity" else 0.8), k, p, sentence, "", order, verb,
                                       via="untyped_sentence"))
            named_kind = {w for _, w in given} if not a.labels else set()  # of the kind asked
            for close, span in spans:
                # each span of the sentence, scored by how closely the question's words surround it
                bound = bool(a.target) and _bound(s, span, a.target)
                cands.append(Candidate(span_score(sc, close, bound), k, p, sentence, span, order, verb,
                                       fits=bool(a.labels) or span in named_kind, via="typed_span"))
            if not spans and a.kind not in ("quantity", "date", "entity"):
                cands.append(Candidate(sc, k, p, sentence, "", order, verb, via="sentence"))
            if a.manner and verb:
                # "how does X record Y?": the sentence's own phrase on the question's verb ("at the
                # lower of cost ..."), the sentence's answer when it is the best one
                for _, _, placed in _placed(s, set(weights), a.slots)[:1]:
                    cands.append(Candidate(sc + MANNER, k, p, sentence, placed, order, verb, via="manner_phrase"))
            if a.value:
                # "what is the default prefix?": a name the sentence gives the N ("the default
                # prefix is /usr/local"), as "which N" is answered (`named_as`)
                for close, word in given:
                    if _NUMBER.fullmatch(word):
                        continue  # a number is read whole by the numeric spans below ("$3,215.4")
                    cands.append(Candidate(span_score(sc, close, True), k, p, sentence, word, order, verb, fits=True, via="given_name"))
            if a.value or (a.kind == "entity" and a.target and not a.labels and not in_entry):
                # "what goodwill does X have": a number the sentence gives as the N asked about
                # answers as well as a name does; a "what is the N" answers with it first
                for close, span in _spans(s, numeric, weights, parts)[:SPANS_PER_SENTENCE]:
                    if a.definition or (a.kind == "entity" and _counts(s, span, a.target)):
                        continue  # "what are promise objects?", "which statements ...": not how many
                    bound = _bound(s, span, a.target) or span == stated  # "The default is 4in."
                    cands.append(Candidate(span_score(sc, close, bound), k, p, sentence, span, order, verb,
                                           fits=bound and a.value, via="numeric_span"))
            for c in cands[first_new:]:
                c.parts = sent_parts
        for name in (n for n in a.names if n.isalpha() and 2 <= len(n) <= 8):
            long_form = expansion(name, "\n".join([*p.title_path, p.text]))
            if long_form and a.kind in ("describe", "entity") and not a.target:
                # "what does NARL stand for / what is NARL": the long form the document gives it
                where = next((ln for ln in [*p.title_path, *p.text.splitlines()]
                              if re.search(rf"\(\s*{re.escape(name)}\s*\)", ln, re.I)), long_form)
                # scored as a sentence with the name as its subject ("NARL is the National ..."):
                # one that says more of what the question asks ("what does NARL study?") is better
                said = {*re.findall(r"\w+", long_form.lower()), name}
                sc = max(3.0, as_subject(said, weights)) + prior
                cands.append(Candidate(sc, k, p, " ".join(where.split())[:300], long_form, via="long_form"))
        if a.kind == "describe" and not a.procedure:
            for name, gloss in entry_glosses(p.text, a.names):
                # "na.locf impute NAs by carrying forward ...": the entry's own words on a line of
                # entries (a reference card), scored as a sentence with the name as its subject
                said = {*re.findall(r"[\w.]+", gloss.lower()), name}
                cands.append(Candidate(as_subject(said, weights) + prior, k, p, f"{name} {gloss}", "", via="entry_gloss"))
            for title in p.title_path:
                # "3.16. /sbin : System binaries": a title that names the thing asked about and
                # says what it is, after a colon or a dash
                m = _TITLE_GLOSS.match(title)
                if m and m.group(1).strip().lower() in a.names:
                    # scored as a sentence with the name as its subject: "/sbin is system binaries"
                    glossed = set(re.findall(r"\S+", title.lower()))
                    cands.append(Candidate(as_subject(glossed, weights) + prior, k, p, title, m.group(2).strip(), via="title_gloss"))
        if a.kind == "entity" and a.target and not a.labels:
            for term, gloss in glossed_list(p.text):
                # "which function is the parallel version of sum?": "parsum: parallel version of
                # sum", scored as a sentence with the term as its subject
                said = set(_lemmas(gloss))
                if term.lower() not in weights and sum(1 for t in weights if t in said) >= 2:
                    cands.append(Candidate(as_subject(said, weights) + prior, k, p, f"{term}: {gloss}", term, fits=True,
                                           via="glossed_term"))
        if a.kind == "entity" and a.labels == _LABELS_BY_WH["where"]:
            for title in p.title_path:
                # "5.10. /var/log : Log files and directories": a title that names a place of the
                # document's own kind (a path, a command) and glosses it with the question's words
                # answers "where are log files kept?" with the place
                m = _TITLE_GLOSS.match(title)
                if m and _CODEISH.fullmatch(m.group(1).strip()):
                    glossed = set(_lemmas(m.group(2)))
                    hit = sum(w for t, w in weights.items() if t in glossed)
                    if hit > 0:
                        sc = hit / math.sqrt(len(glossed) + 4) * 3 + 0.8 + 1.2 + prior
                        cands.append(Candidate(sc, k, p, title, m.group(1).strip(), fits=True, via="titled_place"))
        if a.kind == "quantity" or a.value or (a.kind == "entity" and a.target and not a.labels and not in_entry):
            # "what goodwill does X have", "what score did X achieve in Y": a number the table
            # gives the row and column the question names answers as well as a name does
            cell = table_cell(p, a if a.kind == "quantity" else numeric, weights, about)
            if cell is not None and cell[0] > 0:
                bound = bool(a.target) and a.target in _lemmas(cell[2])
                # the row names what is asked: the target, or two of the question's words that are
                # not the name of whom it is asked about (the company the question names)
                named = sum(1 for t in weights if t in cell[2] and not any(t in n for n in a.names))
                # the table's titles count as a sentence's do ("MGM RESORTS INTERNATIONAL >
                # CONSOLIDATED BALANCE SHEETS": the statement of the company the question names)
                titled = sum(w for t, w in weights.items() if t in titles[rank] and t not in cell[2])
                sc = cell[0] + (1.0 if bound else 0.0) + 0.8 + prior + 0.3 * titled
                cands.append(Candidate(sc, k, p, f"{cell[2]}: {cell[1]}", cell[1],
                                       fits=a.kind == "quantity" or bound or named >= 2, via="table_cell"))
        if a.value and a.said_tools:
            for line, value in assigned(p.text, a.said_tools):
                # "what is the default value of \multicoltolerance?": "\multicoltolerance = 9999", the
                # value the code sets it to, scored as a sentence naming it as its subject
                said = set(re.findall(r"[\w\\@.]+", line.lower()))
                cands.append(Candidate(as_subject(said, weights) + prior, k, p, line, value, fits=True, via="assigned_value"))
        if a.kind == "describe" or (a.kind == "entity" and not a.labels):
            for row_score, label, next_cell in table_rows_named(p, a, weights):
                cands.append(Candidate(row_score + prior, k, p, f"{label}: {next_cell}", next_cell, via="row_named"))
        if a.kind == "entity" and a.target and not a.labels:
            for row_score, label, text in table_rows_described(p, a, weights):
                cands.append(Candidate(row_score + prior, k, p, f"{label}: {text}", label, fits=True, via="row_described"))
        if a.kind == "quantity" and a.target:
            counted = table_count(p, a.target, weights)
            if counted is not None:
                sc = counted[0] + 1.0 + 0.8 + prior
                cands.append(Candidate(sc, k, p, counted[2], str(counted[1]), fits=True, via="table_count"))
    rank_of = {k: rank for rank, (k, _, _) in enumerate(parsed)}
    for c in cands:
        c.score += PASSAGE_PRIOR / (1 + rank_of[c.number])
    return cands


def _phrase_said(word: str, a: Asked) -> bool:
    """Whether the question says the parts `word` joins next to each other, in either order
    ("batch files", "break lines": "batchfile", "linebreaks"): it writes the word as a phrase."""
    stems = stem_words(list(a.terms))  # the question's words in order (a word's lemma and form one after the other)
    order = [st for i, st in enumerate(stems) if i == 0 or st != stems[i - 1]]
    at = [{i for i, st in enumerate(order) if st == part} for part in stem_words(list(joined_parts(word, list(a.terms))))]
    return all(any(abs(i - j) == 1 for i in x for j in y) for x, y in zip(at, at[1:]))


def _cell_words(text: str) -> set[str]:
    """A table cell's (or title's) words, lower case, whole ("/var/log", "read.fwf"), with their lemmas."""
    return {*re.findall(r"[\w/.+-]+", text.lower()), *_lemmas(text)}


def table_rows_named(passage: Passage, a: Asked, weights: dict[str, float]) -> list[tuple[float, str, str]]:
    """"What happens when you press and hold the Down button?": a table row whose label the
    question says (most of its words, stop words too), under a title that may say the rest
    ("Down button" > "Press and hold | Wake up the voice assistant."), answers with the row's
    next text cell, its first sentence: (score, label, cell). Its score is a sentence's, the
    label and the innermost title being its words, and how much of the label the question says."""
    title = passage.title_path[-1].lower() if passage.title_path else ""
    # a key named by the question's words run together ("urlcolor": `candidates`) says two
    joined = {t for t in weights if t not in a.terms}
    out: list[tuple[float, str, str]] = []
    for rows in pipe_tables(passage.text):
        for r in rows[1:]:
            cells = [c for c in _merge_units(r) if c]
            if len(cells) < 2 or not re.search(r"[A-Za-z]{2,}.*\s.*[A-Za-z]{2,}|^[A-Za-z]{3,}", cells[1]):
                continue  # the next cell says something: words, not a number or a sign
            if _continues(cells[1]):
                continue  # "Accounts payable | and other current liabilities": the label run on
            label = cells[0]
            tokens = re.findall(r"[a-z]+", label.lower())
            if not tokens:
                continue
            covered = sum(t in a.said or t in joined for t in tokens) / len(tokens)
            words = _cell_words(label) | _cell_words(title)
            held = [t for t in weights if t in words]  # whole words: "log" is not in "login"
            hit = sum(weights[t] for t in held)
            # one question word in a one-word label ("login", "tmp") is no evidence the row is asked about
            if covered < 0.5 or not any(t in label.lower() for t in weights) or len(held) + len(joined.intersection(held)) < 2:
                continue
            answer = re.split(r"(?<=[.!?])\s+(?=[A-Z])", cells[1])[0]
            if re.search(r"[.!?]\s+[A-Z]", label) or answer.rstrip().endswith("-") or _stops_open(answer):
                # prose the layout set in columns ("be aligned. The | default is", "Therefore the
                # multicols | environ-"): a sentence's pieces, not a row's label and text
                continue
            out.append((hit / math.sqrt(len(tokens) + 4) * 3 + 1.5 * covered, label, answer))
    return out


def table_rows_described(passage: Passage, a: Asked, weights: dict[str, float]) -> list[tuple[float, str, str]]:
    """"Which file records the last login of each user?": a table row whose text says the
    question ("lastlog | record of last login of each user") answers "which N" with its label,
    a name (one word, or one spelled as code) the question does not say: (score, label, text).
    Its score is a sentence's, the row's text being its words."""
    out: list[tuple[float, str, str]] = []
    for rows in pipe_tables(passage.text):
        for r in rows:  # the first too: a table without a header row has its first row there
            cells = [c for c in _merge_units(r) if c]
            if len(cells) < 2 or len(cells[0].split()) != 1 or cells[0].lower() in a.terms:
                continue
            label, text = cells[0], " ".join(cells[1:])
            if not re.search(r"[A-Za-z]{2,}", label) or _continues(text) or _stops_open(text):
                continue
            words = _cell_words(text)
            held = [t for t in weights if t in words and t not in label.lower()]
            if len(held) < 2:
                continue  # one word of the question is no evidence the row is the one described
            out.append((sum(weights[t] for t in held) / math.sqrt(len(text.split()) + 4) * 3, label, text))
    return out


def table_count(passage: Passage, target: str, weights: dict[str, float]) -> tuple[float, int, str] | None:
    """"How many quality levels ...": a table whose row-label column is headed by the things
    counted ("Quality levels") lists one per row: (score, rows, "header: first, ..., last").
    The header scores as a sentence's words do; a table the passage cuts short is not counted."""
    best: tuple[float, int, str] | None = None
    for rows in pipe_tables(passage.text):
        if len(rows) < 3 or not rows[0] or target not in _lemmas(rows[0][0]):
            continue
        items = [r[0] for r in rows[1:] if r and r[0]]
        if not items or "…" in " ".join(rows[-1]):
            continue
        head = rows[0][0].lower()
        hit = sum(w for t, w in weights.items() if t in head)
        sc = hit / math.sqrt(len(head.split()) + 4) * 3
        text = f"{rows[0][0]}: {', '.join(items[:3])}{', ...' if len(items) > 4 else ''}" \
               f"{', ' + items[-1] if len(items) > 3 else ''}"
        if best is None or sc > best[0]:
            best = (sc, len(items), text)
    return best


_NUMBERING = re.compile(r"^(?:[A-Z]\.|\d+\.?)(?:\d+\.?)*\s+")  # "1.316 ", "A.2 ", "3. "


def titled_with(title: str, a: Asked) -> bool:
    """Whether a title, its numbering aside, is the term a definition asks about, in a few of the
    question's words ("1.316 tie", "3.2.6 Coprocesses" for "what is a coprocess?"), or, for "how
    do I ...", the thing the question acts on, with or without the action ("2.7.2 Block Comments"
    for "how do I write a block comment?", "2.2 Quitting Octave" for "how do I quit Octave?")."""
    core = _NUMBERING.sub("", title.strip())
    if not 0 < len(core.split()) <= 4:
        return False
    # each word as the question says it, a plural the lemmatizer does not know ("coprocesses")
    # by its spelling, else its lemma
    lemmas: set[str] = set()
    for w in re.findall(r"\w+", core.lower()):
        said = next((f for f in (w, w[:-2] if w.endswith("es") else "", w[:-1] if w.endswith("s") else "")
                     if f and f in a.terms), "")
        lemmas |= {said} if said else set(_lemmas(w))
    if a.definition and a.target:
        return a.target in lemmas and lemmas <= set(a.terms) | {a.target}
    if a.procedure and a.action and len(lemmas) >= 2:
        # a title that opens on an action is about that action: "6.3 Installing packages" does
        # not say how to remove an installed package
        said = _lemmas(" ".join(a.terms))
        acts = core.split()[0].lower().endswith("ing")
        return lemmas <= said and said - {a.action} <= lemmas and (a.action in lemmas or not acts)
    return False


def _first_prose(sents: list[_Sentence | None]) -> int:
    """The order of the first sentence that says something: words, not a "Key: value" label
    ("ES: ligadura ...") nor a pointer elsewhere ("See also")."""
    for order, sent in enumerate(sents):
        if sent is not None and sent.alpha and sent.tokens >= 4 and not _LABELLED.match(sent.text) \
                and not _POINTER.search(sent.text):
            return order
    return -1


def title_words(passage: Passage) -> str:
    """The passage's titles in lower case with their lemmas: a question's lemma "merge" is in
    the title "2.4. Merging and binding", as it is in a sentence."""
    title = " ".join(passage.title_path).lower()
    return f"{title} {' '.join(sorted(_lemmas(title)))}" if title else ""


def _titles_the_noun(title: str, a: Asked) -> bool:
    """Whether a section title names the kind of thing a "which N" question asks for: one of its
    words is N or the noun N is of ("type of court": "SUPERIOR COURT"), or their plural."""
    words = set(re.findall(r"\w+", title.lower()))
    return any(w in words for t in (a.target, a.member) if t for w in (t, f"{t}s", f"{t}es"))


def _section_named(passage: Passage, weights: dict[str, float],
                   shared: frozenset[str] = frozenset()) -> tuple[float, str] | None:
    """The innermost title of the passage that shares a word with the question, with the
    question's words it holds scored as a sentence's are (by its length): (score, title).
    A title every passage has (the document's own: "BEST BUY FISCAL 2023 FORM 10-K") names no
    part of it and is passed over."""
    for title in reversed(passage.title_path):
        if title in shared:
            continue
        words = set(re.findall(r"\w+", title.lower()))
        hit = sum(w for t, w in weights.items() if t in words)
        if hit > 0:
            return hit / math.sqrt(len(words) + 4) * 3, title
    return None


def _usage_line(passage: Passage, a: Asked) -> str:
    """The first code-like line of the passage (a call, a command with its arguments) holding
    two or more of the question's words: "set output {"<filename>"}" for "how do I set the
    output file?"."""
    for ln in passage.text.splitlines():
        s = ln.strip()
        if not s or len(s) > 120 or not re.search(r"[{}()<>\[\]=\"]", s) or " " in s.rstrip(".")[-1:]:
            continue
        words = {w.lower() for w in re.findall(r"[A-Za-z][\w.]*", s)}
        if len(words & set(a.terms)) >= 2 and not re.search(r"[.!?]\s*$", s):
            return s
    return ""


# "export [-fn] [-p] [name[=value]]": a term and its arguments; with what a call returns, as
# Octave and MATLAB manuals write them ("[cstr] = strsplit (str, del)", "val = history_file ()")
_SYNOPSIS = re.compile(r"^(?:(?:\[[^\]]*\]|[\w.]+)\s*=\s*)?([\w.-]+)\s+[\[(<-]")
SYNOPSIS_LINES = 6  # how far above a description its item's synopsis may be (`item_synopsis`)


def item_synopsis(passage: Passage, sentence: str) -> str:
    """The synopsis of the definition-list item a sentence describes: the nearest line above it,
    within `SYNOPSIS_LINES`, that is a term followed by its arguments ("export [-fn] [-p]
    [name[=value]]" over "Mark each name to be passed to child processes in the environment.").
    "How do I ..." is answered with the command as the manual writes it; '' when there is none."""
    at = passage.text.find(sentence[:60])
    if at <= 0:
        return ""
    for ln in reversed(passage.text[:at].split("\n")[-SYNOPSIS_LINES - 1:]):
        t = ln.strip()
        if _SYNOPSIS.match(t) and len(t) <= 120:
            return t
    return ""


# a definition list's term: a word, an option or a call ("HISTTIMEFORMAT", "-l", "card(X)"),
# alone on its line or ahead of its synopsis ("readonly [-aAf] [-p] [name[=value]] ...")
# "\selectfont": a TeX command too; "~/.octaverc", "/etc/profile": a file
_TERM = r"(?:-{1,2}|\\|~?/?\.?)[A-Za-z$@%][\w.$@%+/-]*(?:\([^()]*\))?"
# ("job-count num", "-P command --process=command": an option and the placeholder of its value)
_TERM_LINE = re.compile(rf"({_TERM})(\s+[a-z][\w-]*)?(?:\s+[\[(<{{-].*)?")
# a TeX command's arguments written onto it ("\autoref{label}", "\vpageref[text]{key}")
_GLUED_ARGUMENTS = re.compile(r"(?<=[A-Za-z@*])(?:\[[^\]{}]*\]|\{[^{}]*\})+$")


def term_line(line: str) -> re.Match[str] | None:
    """`_TERM_LINE`'s match of a line that is a definition list's term line, its term group 1; a
    placeholder follows only a name spelled as code or an option ("job-count num", "-P command";
    not "image width", two plain words)."""
    m = _TERM_LINE.fullmatch(line.strip())
    if m is None or (m.group(2) and not m.group(1).startswith("-")
                     and not re.search(r"[-_.\d]|^[A-Z]+$", m.group(1).lstrip("\\"))):
        return None
    return m


# a term line led by the kind of thing it is, in capitalised words and a colon ("Package Option:
# hyphens", "Function: sqrt (x)", "— Command: cd [dir]")
_LABELLED_TERM = re.compile(r"\W{0,2}(?:[A-Z][a-z]+ ){0,2}[A-Z][a-z]+:\s+(\S.*)")
# a term the layout set on the line of its description ("leqno Place equation numbers on the left.")
_TERM_AHEAD = re.compile(rf"({_TERM})\s+(?=[A-Z][a-z]*\b)")


def _term_like(term: str) -> bool:
    """Whether a word can be a definition list's term rather than the first word of prose or a
    heading: not a capitalised plain word ("Examples", "The"), unless written as a call."""
    word = term.split("(", 1)[0].lstrip("-")
    return bool(word) and ("(" in term or not (word[:1].isupper() and word[1:].islower()))


def spelling(word: str) -> str:
    """How a manual spells a name, which tells its kind within one document: "tex" (`\\ref`),
    "option" (`-x`, `--mt=engine`), "call" (`read.fwf(file)`), "code" (`read.fwf`, `glp_simplex`);
    '' for a plain word."""
    w = word.strip(_QUOTES + ",;:")
    if re.match(r"\\[A-Za-z@]", w):
        return "tex"
    if _OPTION_SPELLED.match(w):
        return "option"
    if _CALL.match(w):
        return "call"
    return "code" if re.fullmatch(r"[A-Za-z]\w*(?:[._]\w+)+", w) else ""


def kinds_by_spelling(texts: Sequence[str]) -> dict[str, frozenset[str]]:
    """The words the texts set beside names of each `spelling`, singular ("the usual \\ref command",
    "option --mt", "the read.fwf function"): what the document calls names spelled that way, so a
    term line spelled so is one of them ("\\autoref{label}" answers "which command ..."). One name
    is enough: a word beside it that is no kind ("\\end file") is rarely the noun a question asks
    for; requiring two names lost an answer on the tuned sets and gained none."""
    out: dict[str, set[str]] = {}
    for text in texts:
        words = text.split()
        for i, w in enumerate(words):
            kind = spelling(w)
            if not kind:
                continue
            for near in (words[i - 1] if i else "", words[i + 1] if i + 1 < len(words) else ""):
                noun = near.strip(_QUOTES + ",;:.()").lower()
                if noun.isalpha() and len(noun) > 2:
                    out.setdefault(kind, set()).update({noun, noun.removesuffix("s")})
    return {k: frozenset(v) for k, v in out.items()}


def item_term(passage: Passage, sentence: str) -> str:
    """`item_head`'s term."""
    return item_head(passage, sentence)[0]


def item_head(passage: Passage, sentence: str) -> tuple[str, str]:
    """The term of the definition-list item a sentence opens: the word its line opens with ahead
    of a capitalised description ("leqno Place equation numbers on the left.", "HISTSIZE The
    maximum number of commands ..."), or the term line right above it, alone or as its synopsis
    ("HISTTIMEFORMAT" over "If this variable is set ...", "card(X)" over "|X|, cardinality ...",
    "readonly [-aAf] [-p] ..." over "Mark each name as readonly."); '' when the sentence opens
    no item. A manual lists its variables, options and functions this way, and names each only
    in its term. With the term, its line as the manual writes it ("job-count num"): (term, line),
    ('', '') when there is none."""
    head = _TERM_AHEAD.match(sentence)
    if head:
        term = written = head.group(1)
    else:
        at = passage.text.find(sentence[:60])
        if at <= 0:
            return "", ""
        # the term on the sentence's own line ("HISTSIZE" where the parser split the sentence
        # from it), else the line above
        before, _, own = passage.text[:at].rpartition("\n")
        written = own.strip() or before.rsplit("\n", 1)[-1].strip()
        line = term_line(written)
        if line is None and written.startswith("\\"):
            # "\autoref{label}" over "This is a replacement for ...": a command with its arguments
            line = term_line(_GLUED_ARGUMENTS.sub("", written))
        labelled = _LABELLED_TERM.fullmatch(written) if line is None else None
        if labelled is not None:
            # "Package Option: hyphens", "Function: sqrt (x)": the term after the kind the
            # manual files it under
            line = term_line(labelled.group(1))
        if line is None:
            return "", ""
        term = line.group(1)
    stop = _stop_word(term.lower())  # "and" between two displays
    return (term, written) if _term_like(term) and not term.endswith((".", ",")) and not stop else ("", "")


def _item_says(passage: Passage, sentence: str, words: frozenset[str], weights: dict[str, float]) -> float:
    """What the definition-list item a value line lies in adds to its score: the question's words
    the item says and the line does not ("PS2" over "The default value is ‘> ’."), by the item's
    length, as a sentence's words count."""
    item, said = item_words(passage, sentence)
    more = sum(w for t, w in weights.items() if t in item and t not in words)
    return more / math.sqrt(said + 4) * 3


def item_words(passage: Passage, sentence: str) -> tuple[frozenset[str], int]:
    """The words of the definition-list item a sentence lies in, from its term line down to the
    sentence (within `SYNOPSIS_LINES` lines), with the parts of the term's name, and how many
    they are: a "Default: 1024." line is about its item's term ("max-markup-depth num", "Set
    maximum depth for the markup tree ..."), which it never names. Empty when no term line is above."""
    at = passage.text.find(sentence[:60])
    if at <= 0:
        return frozenset(), 0
    lines = passage.text[:at].split("\n")[-SYNOPSIS_LINES - 1:]
    for i in range(len(lines) - 1, -1, -1):
        # the term alone on its line, or ahead of the item's text on the sentence's own line
        # ("PS2 The secondary prompt string. The default value is ‘> ’.")
        line = term_line(lines[i]) or (_TERM_AHEAD.match(lines[i].strip()) if i == len(lines) - 1 else None)
        if line is not None and _term_like(line.group(1)):
            said = " ".join(lines[i:]).lower()
            words = set(re.findall(r"\w+", said)) | _lemmas(said) | identifier_words(line.group(1).replace("-", "_"))
            return frozenset(words), len(said.split())
    return frozenset(), 0


INTRODUCED_LINES = 4  # the lines a sentence ending in a colon brings with it at most (`introduced`)
INTRODUCED_CHARS = 300


# the parts of speech a sentence cannot end on: a verb without its object, a preposition, a
# determiner or a conjunction before what it governs
_OPEN_ENDS = ("VERB", "AUX", "ADP", "DET", "CCONJ", "SCONJ", "PART")


def unfinished(sentence: str) -> bool:
    """Whether a sentence stops where what it introduces begins: it ends in a colon, or in a
    word that needs what follows ("To cite R in publications, use" over the entry it means; not
    a heading, "Call up the main menu")."""
    end = sentence.rstrip()
    if end.endswith(":"):
        return True
    nlp = english_if_installed()
    if nlp is None or not re.search(r"[a-z]$", end):
        return False
    last = nlp(end[-300:], disable=["ner"])[-1]
    deps = {c.dep_ for c in last.children}
    if deps & {"dobj", "pobj", "attr"} or last.tag_ == "VBN":  # "... are to be plotted" ends a clause
        return False
    # the tagger may read a clause's last verb as a noun ("..., use"): a root that heads a clause
    return last.pos_ in _OPEN_ENDS or (last.dep_ == "ROOT" and bool(deps & {"advcl", "nsubj", "aux"}))


def heads_listing(passage: Passage, sentence: str) -> bool:
    """Whether the passage's next line after `sentence` (a page number passed over) is a contents,
    index or bibliography line (`is_reference_line`): the sentence heads that listing ("Table of
    Contents" over "Introduction . . . 1")."""
    after = _text_after(passage, sentence)
    lines = [ln for ln in (after or "").splitlines() if ln.strip() and not ln.strip().isdigit()]
    return bool(lines) and is_reference_line(lines[0])


def _text_after(passage: Passage, sentence: str) -> str | None:
    """The passage's text after `sentence` (found by its last six words, however the passage
    breaks its lines); None when the passage does not hold it."""
    words = sentence.split()[-6:]
    m = re.search(r"\s+".join(map(re.escape, words)), passage.text) if words else None
    return passage.text[m.end():] if m is not None else None


_SENTENCE_END = re.compile(r"[.!?](?=\s+[^a-z\s]|\s*$)")
# a footnote ("∗This file has version ...", "† ...") or a listing's numbered line ("85 \fi ..."):
# what follows a sentence on the page, not what it goes on to say
_NOT_PROSE = re.compile(r"[∗*†‡¹²³]|\d+\s+[\\%]")


def next_sentence(passage: Passage, sentence: str) -> str:
    """The sentence that follows `sentence` in its paragraph, as the passage prints it: on the
    same line or the next, up to its full stop, `INTRODUCED_CHARS` at most; '' at a paragraph's
    end, before a term line or a display, a pointer elsewhere ("See also"), a footnote or a
    listing's numbered line (`_NOT_PROSE`)."""
    after = _text_after(passage, sentence)
    if not after or after.startswith("\n\n") or re.match(r"[ \t]*\n[ \t]*\n", after):
        return ""
    lines = after.lstrip(" \t").split("\n")
    if not lines[0].strip():
        lines = lines[1:]
        if not lines or term_line(lines[0]) or _DISPLAY.match(lines[0]):
            return ""
    rest = " ".join(" ".join(lines[:INTRODUCED_LINES]).split())
    end = _SENTENCE_END.search(rest)
    said = rest[:end.end()] if end else ""
    if not said or len(said) > INTRODUCED_CHARS or len(said.split()) < 4 or re.match(r"\W*see\b", said, re.I) \
            or said.lstrip().startswith("|") or _NOT_PROSE.match(said):
        return ""
    return said



def introduced(passage: Passage, sentence: str) -> str:
    """What a sentence ending in a colon introduces: the lines after it in the passage ("&>word",
    "and", ">&word" after "There are two formats for redirecting standard output and standard
    error:"), up to `INTRODUCED_LINES` lines or `INTRODUCED_CHARS` characters, joined by " / ";
    '' when the passage has no line after it."""
    after = _text_after(passage, sentence)
    if after is None:
        return ""
    out: list[str] = []
    for ln in after.split("\n"):
        ln = " ".join(ln.split())
        if not ln or ln.startswith("|"):
            continue
        if out and sum(map(len, out)) + len(ln) > INTRODUCED_CHARS:
            break
        out.append(ln[:INTRODUCED_CHARS])
        if len(out) == INTRODUCED_LINES:
            break
    return " / ".join(out)


# a line a manual displays as code: a prompt and a command ("> sink("record.lis")", "$ make"),
# or a call alone on its line ("size(3cm);")
_DISPLAY = re.compile(r"^\s*(?:[>$%#]\s?\S.*|[\w.]+\(.*\)\s*;?)\s*$")


def _display_before(passage: Passage, sentence: str) -> str:
    """The code line a sentence continues: one that opens without its subject, in lower case or
    a parenthesis ("will divert all subsequent output ..." under "> sink("record.lis")"), says what
    the displayed command does; '' otherwise."""
    if not re.match(r"[a-z(]", sentence):
        return ""
    at = passage.text.find(sentence[:60])
    if at <= 0:
        return ""
    before = passage.text[:at].rstrip("\n").rsplit("\n", 1)[-1]
    return " ".join(before.split()) if _DISPLAY.match(before) and passage.text[at - 1] == "\n" else ""


def _display_after(passage: Passage, sentence: str) -> str:
    """The code a sentence without a closing mark leads into: the displayed lines right after it
    ("... executed at any time in an R session with the command" over "> source("commands.R")");
    '' otherwise."""
    if re.search(r"[.!?;)\]\"'”’]\s*$", sentence):
        return ""
    after = _text_after(passage, sentence)
    if after is None or not after.startswith("\n"):
        return ""
    shown = []
    for ln in after[1:].split("\n")[:INTRODUCED_LINES]:
        if not _DISPLAY.match(ln):
            break
        shown.append(" ".join(ln.split()))
    return " / ".join(shown)[:INTRODUCED_CHARS]


def _sentence_page(passage: Passage, sentence: str) -> int:
    """The page of the first prose line of the passage (not a title or table line, as
    `_sentences` reads them) that holds the start of `sentence`."""
    words = sentence.split()[:8]
    rx = re.compile(r"\s+".join(map(re.escape, words))) if words else None
    pos = 0
    for ln in passage.text.splitlines(keepends=True):
        s = ln.strip()
        if rx is not None and s and not s.startswith("|") and s not in passage.title_path and rx.search(ln):
            return passage.page_at(pos)
        pos += len(ln)
    return passage.first_page


def hand_set_key(c: Candidate) -> tuple[bool, float, int]:
    """The hand-set order of candidates, best last: one of the kind asked first, then the best
    scored, then the best-ranked passage's."""
    return c.fits, c.score, -c.number


def best_candidate(cands: list[Candidate]) -> Candidate:
    """The answer among the candidates by the hand-set order (`hand_set_key`; ties: the first)."""
    return max(cands, key=hand_set_key)


def _source(passage: Passage, page: int, page_labels: list[str] | None) -> str:
    """Where an extractive answer is read from, as it quotes it: '"Section", p. 36 (printed 30)'."""
    cited = cite_page(page, printed_label(page_labels, page))
    return f'"{passage.name}", {cited}' if passage.name else cited


def _answer(a: Asked, cands: list[Candidate], page_labels: list[str] | None = None,
            passages: list[Passage] | None = None) -> tuple[str, list[int]]:
    """The answer text of the best candidate (`best_candidate`)."""
    return render_answer(a, best_candidate(cands), cands, page_labels, passages)


def render_answer(a: Asked, chosen: Candidate, cands: list[Candidate], page_labels: list[str] | None = None,
                  passages: list[Passage] | None = None) -> tuple[str, list[int]]:
    """The answer text of the `chosen` candidate: its span, cited, then the sentence it is read
    from; or the sentence itself (and, for a description, the next one). `cands` (all of them)
    give the sentence that follows it. `chosen` itself is left as it is: any candidate can be
    rendered, which is how a fit labels every one."""
    best = replace(chosen)
    where = _source(best.passage, best.passage.first_page, page_labels)
    if a.kind == "page":  # the page the deciding sentence is on (a passage can span pages)
        page = _sentence_page(best.passage, best.sentence)
        printed = printed_page(page, page_labels)
        best.span = f"Page {page}" + (f" (printed page {printed})" if printed else "")
        where = _source(best.passage, page, page_labels)
    elif a.kind == "section" and best.passage.name:
        best.span = best.passage.name
    if best.span and (a.kind == "quantity" or a.value) and spelled_number(best.span):
        best.span = spelled_number(best.span)
    if best.span and a.scale and best.fits:
        # "Answer in USD millions" over a statement "(in thousands)": the value in the scale asked,
        # then as the document prints it
        declared = _scale_printed(best.span, [best.passage, *(passages or (c.passage for c in cands))])
        restated = in_scale(best.span, a.scale, declared)
        if restated:
            best.span = f"{restated} ({best.span}{'' if _OWN_SCALE.search(best.span) else f' in {declared}s'})"
    if best.span:
        return f"{best.span} [{best.number}] (from {where}: {best.sentence[:400]})", [best.number]
    shown_before = _display_before(best.passage, best.sentence)
    text = f"From {where}: {shown_before + ' ' if shown_before else ''}{best.sentence[:600]} [{best.number}]"
    follow = [c for c in cands if c.passage is best.passage and c.order == best.order + 1 and c.verb]
    last = best.sentence
    if (a.kind == "describe" or (a.kind == "entity" and a.target)) and not unfinished(last):
        # a description often goes on in its next sentence, one that says none of the question's
        # words as well ("Anything that is enclosed in %{ and %} is ignored."); so does a sentence
        # answering "which N ..." where no name of an N was read from it
        after = follow[0].sentence if follow else next_sentence(best.passage, best.sentence)
        if after:
            text += f" {after[:300]} [{best.number}]"
            last = after
    shown = introduced(best.passage, last) if unfinished(last) else _display_after(best.passage, last)
    if shown:  # "There are two formats for ...:", "To cite R in publications, use": what follows says it
        text += f" {shown} [{best.number}]"
    usage = (_usage_line(best.passage, a) or item_synopsis(best.passage, best.sentence)
             or item_head(best.passage, best.sentence)[1]) if a.procedure else ""
    if usage and usage not in text:  # "how do I ...": the command as the manual writes it
        text += f" Usage: {usage} [{best.number}]"
    return text, [best.number]
