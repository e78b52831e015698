"""Answers computed from the document's tables when a question asks for arithmetic.

`operators.formula` reads what to compute from the question, `operators.statements` finds each
line item's value at its year in the document's tables; this module puts the two together into
an answer that states the result first and then every value it used, each cited by its table
("1.73 [1]. Computed from: total current assets 2016: 1,200 [1]; total current liabilities 2016:
693.6 [1]"). It answers only when every item is found; otherwise the extractive reader answers
as before.

A model you bring answers by itself (`answer.computed` auto), but reads the same computation:
`Computed.note` is the line the first table's passage opens with in its prompt, so the model
checks a calculation against the cells it cites rather than doing the arithmetic itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from bookindex.core.model import DocumentTree
from bookindex.operators.formula import Item, Result, Value, evaluate, explain, formula, render
from bookindex.operators.glossary import named_statements, terms_in
from bookindex.operators.statements import find

NOTE_OPENS = "Computed by bookindex from the cells below (check them):"  # how `Computed.note` begins


@dataclass
class Computed:
    answer: str
    node_ids: list[str]  # the tables cited, in citation order
    result: Result  # the value and the cells it was computed from
    structural: dict[str, Any] = field(default_factory=dict)

    def note(self, shown: int) -> str:
        """The computation as a line of a model's prompt whose first `shown` passages are the
        cited tables in citation order: each value cited by its passage number, a table beyond
        them by its page."""
        def where(v: Value) -> str:
            k = self.node_ids.index(v.node_id) + 1
            return f"[{k}]" if k <= shown else f"(p. {v.page})"

        return (f"{NOTE_OPENS} {self.structural['what']} = "
                f"{self.structural['value']}, from {explain(self.result, where)}.")


def computed_answer(tree: DocumentTree, question: str) -> Computed | None:
    """The computed answer to `question` over `tree`, or None when it asks for no arithmetic or
    a value it needs is printed in no table."""
    f = formula(question)
    if f is None:
        return None
    wanted = frozenset(named_statements(question)) | frozenset(st for t in terms_in(question) for st in t.statements)
    found: dict[Item, Value | None] = {}

    def look(item: Item) -> Value | None:
        if item not in found:
            found[item] = find(tree, item, wanted)
        return found[item]

    result = evaluate(f.expr, look)
    if result is None:
        return None
    declared = {v.scale for v in found.values() if v is not None and v.scale != 1.0}
    if len(declared) == 1 and any(v is not None and v.scale == 1.0 for v in found.values()):
        # a table that declares no unit is in the unit the document's other tables declare
        unit = declared.pop()
        result = evaluate(f.expr, lambda item: replace(v, scale=unit) if (v := found[item]) and v.scale == 1.0 else v)
        if result is None:
            return None
    order: list[str] = []

    def cite(node_id: str) -> int:
        if node_id not in order:
            order.append(node_id)
        return order.index(node_id) + 1

    value = render(f, result)
    sources = explain(result, lambda v: f"[{cite(v.node_id)}]")
    text = f"{value} [1]. Computed from: {sources}"
    structural = {"operation": "COMPUTE", "value": value, "what": f.what,
                  "items": [{"node_id": v.node_id, "type": "table", "page": v.page, "label": v.label,
                             "year": v.year, "cell": v.cell} for _, v in result.used]}
    return Computed(text, order, result, structural)
