"""Query expansion from a small domain glossary: terms a question uses but its evidence does not.

A question asks for a "return on assets" or a "days payable outstanding"; the pages that answer
it are the financial statements, which print only the line items the ratio is computed from
("Net income", "Total assets", "Accounts payable", "Cost of sales"). With an LLM, extraction and
decomposition bridge that gap; without one, lexical retrieval cannot. Each entry maps a pattern
to the line items (and the statement that prints them), which are added to the lexical query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bookindex.providers.lexical import word_stems

_IS = "consolidated statements of operations income"
_BS = "consolidated balance sheets"
_CF = "consolidated statements of cash flows"


@dataclass(frozen=True)
class Term:
    """A glossary term: the line items it is computed from and the statements that print them."""

    pattern: re.Pattern[str]
    items: tuple[str, ...]
    statements: tuple[str, ...]


def _t(pattern: str, items: str, *statements: str) -> Term:
    return Term(re.compile(pattern, re.I), tuple(x.strip() for x in items.split(";")), statements)


# components as printed in 10-K style statements
FINANCE: list[Term] = [
    _t(r"return on (?:average )?assets?|\broa\b", "net income; total assets", _IS, _BS),
    _t(r"return on (?:average )?(?:stockholders'?|shareholders'?|common )?equity|\broe\b",
       "net income; total stockholders equity", _IS, _BS),
    _t(r"return on (?:invested )?capital(?: employed)?|\broce\b|\broic\b",
       "operating income; total assets; total current liabilities; long-term debt", _IS, _BS),
    _t(r"invested capital|capitali[sz]ation ratio", "long-term debt; total stockholders equity", _BS),
    _t(r"fixed asset turnover", "total net revenues; property and equipment, net", _IS, _BS),
    _t(r"(?<!fixed )asset turnover", "total net revenues; total assets", _IS, _BS),
    _t(r"inventory turnover|days? (?:of )?inventory|\bdio\b", "inventories; cost of sales", _IS, _BS),
    _t(r"days? (?:of )?payables?(?: outstanding)?|\bdpo\b|payables? turnover",
       "accounts payable; cost of sales", _IS, _BS),
    _t(r"days? (?:of )?sales outstanding|\bdso\b|receivables? turnover",
       "accounts receivable; net revenues", _IS, _BS),
    _t(r"\bcapex\b|capital expenditures?",
       "purchases of property and equipment; capital expenditures; net revenues", _CF, _IS),
    _t(r"free cash flow", "net cash provided by operating activities; purchases of property and equipment", _CF),
    _t(r"operating cash flow", "net cash provided by operating activities; total current liabilities", _CF, _BS),
    _t(r"interest coverage|times interest earned", "operating income; interest expense", _IS),
    _t(r"interest (?:expense )?to (?:average )?(?:long-term |total )?debt",
       "interest expense; long-term debt", _IS, _BS),
    _t(r"\bebitda\b", "operating income; depreciation and amortization", _IS, _CF),
    _t(r"debt to (?:total )?(?:equity|capital)|debt-to-equity|leverage ratio",
       "long-term debt; total liabilities; total stockholders equity", _BS),
    _t(r"current ratio|quick ratio|acid.test|working capital|cash ratio",
       "total current assets; total current liabilities; cash and cash equivalents", _BS),
    _t(r"cash (?:balance )?to (?:total )?liabilit", "cash and cash equivalents; total liabilities", _BS),
    _t(r"gross (?:profit )?margin|gross profit", "gross profit; net revenues; cost of sales", _IS),
    _t(r"operating (?:profit )?margin|operating profit", "operating income; net revenues", _IS),
    _t(r"net (?:profit )?margin|profit margin", "net income; net revenues", _IS),
    _t(r"effective tax rat", "provision for income taxes; income before income taxes", _IS),
    _t(r"\br&d\b|research and development", "research and development; product development", _IS),
    _t(r"(?:asset|equity|debt) ratio|to (?:total )?assets? ratio", "total assets", _BS),
    _t(r"dividend payout|payout ratio", "dividends; net income", _IS, _CF),
    _t(r"\beps\b|earnings per share", "net income per share; basic; diluted", _IS),
    _t(r"\bgoodwill\b", "goodwill", _BS),
    # line items a question names in other words than the statement prints them
    _t(r"\b(?:total|long-term) debt\b", "long-term debt; current portion of long-term debt", _BS),
    _t(r"total liabilities", "total liabilities", _BS),
    _t(r"(?:common|shareholders'?|stockholders'?) equity|book value", "total stockholders equity", _BS),
    _t(r"(?:re)?purchas\w* (?:of )?(?:common )?(?:stock|shares)|buybacks?",
       "repurchases of common stock", _CF),
]


# what a statement's own heading calls it: each alternative's words all appear in the heading of
# the pages that print the statement ("CONSOLIDATED STATEMENTS OF OPERATIONS", "Consolidated
# Statements of Earnings", "Consolidated Balance Sheet At December 31")
STATEMENT_TITLES: dict[str, tuple[str, ...]] = {
    _IS: ("statements of operations", "statements of income", "statements of earnings", "income statements"),
    _BS: ("balance sheets", "statements of financial position", "statements of financial condition"),
    _CF: ("statements of cash flows",),
}


# a line item as questions name it, and as statements print it (the first that a statement of the
# document prints is read): the whole name must match
LINE_ITEM_NAMES: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(p, re.I), tuple(x.strip() for x in names.split(";"))) for p, names in (
        (r"(?:total |net )?(?:revenues?|sales)|top[- ]line", "revenue; net revenues; total net revenues; "
         "net sales; total net sales; total revenues"),
        (r"capex|capital expenditures?", "purchases of property and equipment; purchases of property, plant and "
         "equipment; capital expenditures; purchases of land, buildings and equipment"),
        (r"cogs|cost of (?:goods )?sold|cost of goods sold", "cost of sales; cost of goods sold; cost of revenue"),
        (r"(?:net )?pp&?e|(?:net )?ppne|fixed assets", "property and equipment, net; property, plant and equipment, net; "
         "net property, plant and equipment; land, buildings and equipment"),
        (r"net (?:profit|earnings)|net income attributable to (?:shareholders|stockholders)",
         "net income; net earnings; net income attributable"),
        (r"(?:cash (?:flow )?from|operating) (?:operations|operating activities)|operating cash flow",
         "net cash provided by operating activities; cash provided by operations; "
         "net cash provided by operations"),
        (r"(?:unadjusted )?operating (?:income|profit)", "operating income; operating profit; income from operations"),
        (r"inventor(?:y|ies)", "inventories; merchandise inventories"),
        (r"accounts receivables?|receivables?", "accounts receivable; receivables"),
        (r"cash(?: balance)?|cash and (?:cash )?equivalents", "cash and cash equivalents; cash"),
        (r"assets?", "total assets"),
        (r"r&d|research and development(?: expenses?)?", "research and development; product development"),
        (r"d&a|depreciation and amortization", "depreciation and amortization; depreciation, amortization"),
    )
]


def line_item_names(name: str) -> tuple[str, ...]:
    """What statements call the line item a question names `name` ("capex": "purchases of
    property and equipment", ...); () when the glossary does not know it."""
    n = " ".join(name.lower().split())
    return next((names for rx, names in LINE_ITEM_NAMES if rx.fullmatch(n)), ())


def terms_in(question: str) -> list[Term]:
    return [t for t in FINANCE if t.pattern.search(question)]


def line_items(question: str) -> list[str]:
    """The line items behind the glossary terms of `question`, in order, without repeats."""
    return list(dict.fromkeys(i for t in terms_in(question) for i in t.items))


def named_statements(question: str) -> list[str]:
    """The statements `question` names itself, in any order of the heading's words ("the income
    statement", "the cash flow statement", "balance sheet")."""
    have = word_stems(question)
    return [st for st, alts in STATEMENT_TITLES.items() if any(word_stems(a) <= have for a in alts)]


def statement_titles(question: str) -> list[str]:
    """The headings, in their usual wordings, of the statements `question` names or that print
    the line items behind its glossary terms (none when it names neither)."""
    wanted = [*named_statements(question), *(st for t in terms_in(question) for st in t.statements)]
    return list(dict.fromkeys(a for st in dict.fromkeys(wanted) for a in STATEMENT_TITLES[st]))


def expansion(question: str) -> str:
    """Extra lexical query terms for the glossary terms in `question` ('' when none)."""
    words: list[str] = []
    for t in terms_in(question):
        words += [*t.items, *t.statements]
    return " ".join(dict.fromkeys(words))
