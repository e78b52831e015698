"""BookRAG's operator library (Table 3): formulators, selectors, reasoners, synthesizers.

`OPERATORS` maps the operator names used in plans to their classes.
"""

from typing import Any

from bookindex.operators.base import LinkedEntity, Operator, State
from bookindex.operators.context import DerivedViews, IndexContext, MemoryIndex
from bookindex.operators.formulator import Decompose, Extract
from bookindex.operators.reasoner import GraphReasoning, SkylineRanker, TextReasoning
from bookindex.operators.selector import FilterModal, FilterRange, SelectByEntity, SelectBySection
from bookindex.operators.synthesizer import Map, Reduce

OPERATORS: dict[str, type[Operator[Any]]] = {cls.name: cls for cls in (
    Extract, Decompose, FilterModal, FilterRange, SelectByEntity, SelectBySection,
    GraphReasoning, TextReasoning, SkylineRanker, Map, Reduce)}

__all__ = ["OPERATORS", "DerivedViews", "IndexContext", "MemoryIndex", "LinkedEntity", "Operator", "State", "Extract",
           "Decompose", "FilterModal", "FilterRange", "SelectByEntity", "SelectBySection",
           "GraphReasoning", "TextReasoning", "SkylineRanker", "Map", "Reduce"]
