#!/usr/bin/env python
"""KV-cache prefix reuse of the in-process model: the same answer prompt timed after an
unrelated call (nothing to reuse) and after a call sharing its instructions (prefix reused).

    python scripts/bench_kv_prefix.py --model qwen2.5-coder-0.5b --rounds 3 --out bench-out/kv

Prints and writes kv_prefix.json and kv_prefix.md (seconds per round, max_tokens 1, cache off).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.atomic import write_json_atomic, write_text_atomic  # noqa: E402
from bookindex.core.config import load_settings  # noqa: E402
from bookindex.operators import prompts  # noqa: E402
from bookindex.providers.llm import get_llm  # noqa: E402
from bookindex.providers.llm.client import _with_json_instruction  # noqa: E402

SCHEMA = prompts.Grounded.model_json_schema()
EVIDENCE = " ".join(f"item {i} says the option number {i} sets the width." for i in range(60))


def answer_messages(question: str, evidence: str) -> list[dict[str, Any]]:
    """The answer prompt exactly as Reduce sends it (JSON instruction first, then instructions)."""
    return _with_json_instruction([{"role": "user", "content": prompts.ANSWER.format(query=question, evidence=evidence)}], SCHEMA)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("bench-out/kv"))
    a = ap.parse_args(argv)
    s = load_settings(overrides={"llm.provider": "llamacpp", "llm.model": a.model, "cache.enabled": False})
    provider: Any = get_llm(s).provider

    def timed(msgs: list[dict[str, Any]]) -> tuple[float, int]:
        t = time.perf_counter()
        comp = provider.complete(msgs, temperature=0.0, max_tokens=1, json_schema=SCHEMA)
        return time.perf_counter() - t, comp.prompt_tokens

    timed(answer_messages("warm up?", EVIDENCE))  # loads the model
    rows = []
    for k in range(a.rounds):
        timed([{"role": "user", "content": f"Unrelated text {k} " * 80}])
        cold, tokens = timed(answer_messages(f"Which option sets the width {k}?", EVIDENCE))
        timed(answer_messages(f"What is item {k}?", "other evidence " * 40))
        warm, _ = timed(answer_messages(f"Which option sets the height {k}?", EVIDENCE))
        rows.append({"round": k + 1, "prompt_tokens": tokens, "cold_s": round(cold, 2), "warm_s": round(warm, 2)})
    a.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(a.out / "kv_prefix.json", {"model": a.model, "rounds": rows})
    md = "| round | prompt tokens | after an unrelated call s | after a shared-prefix call s |\n|---|---|---|---|\n"
    md += "".join(f"| {r['round']} | {r['prompt_tokens']} | {r['cold_s']} | {r['warm_s']} |\n" for r in rows)
    write_text_atomic(a.out / "kv_prefix.md", md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
