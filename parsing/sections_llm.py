"""The LLM pass of section filtering (BookRAG §4.2.2) over title candidates, in batches.

Each batch shows the model the candidates' text and layout features (font size, bold,
numbering, the rule-based level as a hint) plus the higher-level sections accepted so far, and
asks for each candidate's level or "not a title". Batches run in order because each one's
context depends on the previous. A failing batch keeps the rule levels (the LLM refines, it
is never required). So does an answer whose list length differs from the batch: small local
models tend to copy or truncate the format, and a misaligned list would mislabel headings.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from bookindex.core.model import Block
from bookindex.core.protocols import LLM
from bookindex.parsing.numbering import parse_numbering

BATCH = 40
CONTEXT_SECTIONS = 40

SYSTEM = (
    "You reconstruct the section hierarchy of a long document from title candidates found by a "
    "layout parser. Some candidates are not headings (bold terms, figure text, table headers, "
    "running headers, author names). For every candidate return its id and either its heading "
    "level (1 = top-level chapter/part, 2 = section, 3 = subsection, ...) or null when it is not a "
    "heading. Keep levels consistent with the sections found so far and with fonts: the same "
    "font size and weight usually means the same level; numbering like 2.3.1 means level 3."
)


class HeadingBatch(BaseModel):
    """One entry per candidate, in the order given: its level 1..6, or null (0) if not a title.

    A flat list in candidate order is what small local models get right; per-item objects
    with ids made a 0.5B model answer with an empty list."""

    levels: list[int | None] = Field(description="levels in candidate order; null or 0 = not a title")


def _describe(i: int, b: Block, body: float) -> dict[str, Any]:
    nb = parse_numbering(b.content)
    return {
        "id": i, "page": b.page_idx + 1, "text": b.content[:160],
        "font_size": b.features.get("font_size"), "body_font_size": body, "bold": bool(b.features.get("bold")),
        "run_in": bool(b.features.get("run_in")), "numbering": nb.label if nb else None,
        "rule_level": b.extra.get("rule_level"),
    }


def llm_levels(blocks: list[Block], cands: list[int], llm: LLM, *,
               batch: int | None = None) -> dict[str, int]:
    """Set levels of `blocks[cands]` from the LLM; returns counts (batches, failed, demoted)."""
    batch = batch or BATCH
    sizes = [float(b.features.get("font_size", 0)) for b in blocks if b.type == "text" and b.features]
    body = sorted(sizes)[len(sizes) // 2] if sizes else 10.0
    found: list[str] = []
    stats = {"batches": 0, "failed": 0, "demoted": 0}
    for start in range(0, len(cands), batch):
        ids = cands[start:start + batch]
        context = found[-CONTEXT_SECTIONS:]
        user = (
            "Sections found so far (most recent last):\n"
            + ("\n".join(context) if context else "(none yet)")
            + "\n\nCandidates (JSON lines):\n"
            + "\n".join(json.dumps(_describe(n, blocks[k], body), ensure_ascii=False) for n, k in enumerate(ids, 1))
            + f'\n\nAnswer as JSON: {{"levels": [...]}} with exactly {len(ids)} entries, the level of '
            + f'candidate 1, candidate 2, ... up to candidate {len(ids)} (null when it is not a heading).'
        )
        stats["batches"] += 1
        try:
            out = llm.complete([{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
                               schema=HeadingBatch, stage="sections")
        except Exception as exc:  # LLMError or transport trouble: keep the rule levels
            stats["failed"] += 1
            for k in ids:
                blocks[k].extra["llm_error"] = type(exc).__name__
            _extend_found(found, blocks, ids)
            continue
        decided = list(out.levels)
        if len(decided) != len(ids):
            # a list of the wrong length cannot be aligned with the candidates: keep the rules
            stats["mismatched"] = stats.get("mismatched", 0) + 1
            for k in ids:
                blocks[k].extra["llm_mismatch"] = len(decided)
            _extend_found(found, blocks, ids)
            continue
        for n, k in enumerate(ids):
            lv = decided[n]
            if lv is None or lv < 1:
                blocks[k].level = None
                blocks[k].extra["not_heading"] = "llm"
                stats["demoted"] += 1
            else:
                blocks[k].level = min(int(lv), 6)
            blocks[k].extra["llm_level"] = lv
        _extend_found(found, blocks, ids)
    return stats


def _extend_found(found: list[str], blocks: list[Block], ids: list[int]) -> None:
    for k in ids:
        b = blocks[k]
        if b.level is not None and b.level <= 3:
            found.append(f"L{b.level}: {b.content[:80]} (p. {b.page_idx + 1})")
