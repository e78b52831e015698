"""BookRAG's operator library (Table 3): formulators, selectors, reasoners, synthesizers.

`OPERATORS` maps the operator names used in plans to their classes.
"""

from typing import Any

from operators.base import LinkedEntity, Operator, State
from operators.context import DerivedViews, IndexContext, MemoryIndex
from operators.formulator import Decompose, Extract
from operators.reasoner import GraphReasoning, SkylineRanker, TextReasoning
from operators.selector import FilterModal, FilterRange, SelectByEntity, SelectBySection
from operators.synthesizer import Map, Reduce

OPERATORS: dict[str, type[Operator[Any]]] = {cls.name: cls for cls in (
    Extract, Decompose, FilterModal, FilterRange, SelectByEntity, SelectBySection,
    GraphReasoning, TextReasoning, SkylineRanker, Map, Reduce)}

__all__ = ["OPERATORS", "DerivedViews", "IndexContext", "MemoryIndex", "LinkedEntity", "Operator", "State", "Extract",
           "Decompose", "FilterModal", "FilterRange", "SelectByEntity", "SelectBySection",
           "GraphReasoning", "TextReasoning", "SkylineRanker", "Map", "Reduce"]
