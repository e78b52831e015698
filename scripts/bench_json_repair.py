#!/usr/bin/env python
"""JSON repair: the earlier hand-written scanner vs the json-repair library vs bookindex's wrapper.

    python scripts/bench_json_repair.py [--baseline-rev 2ac31b5] [--out bench-out/json_repair]

Each approach (also the thinnest wrapper: json-repair on the first fenced block) parses every reply of tests/json_cases.py (the cases of tests/test_llm_client.py,
29 broken replies as models write them, 12 held-out ones written after the wrapper was tuned);
a case passes when the value equals the intended one. A reply without JSON must raise (NoJSON);
json-repair returns "" there, which counts as a failure. The hand-written scanner is read from
git at --baseline-rev (bookindex/providers/llm/jsonfix.py before the wrapper). Prints a Markdown
table; writes JSON + Markdown.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import json_repair  # noqa: E402
from json_cases import CLIENT_CASES, HELD_OUT, LLM_CASES, NO_JSON  # noqa: E402

from bookindex.providers.llm.jsonfix import extract_json  # noqa: E402


def baseline(rev: str) -> Callable[[str], Any]:
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:bookindex/providers/llm/jsonfix.py"],
                         capture_output=True, text=True, check=True).stdout
    namespace: dict[str, Any] = {}
    exec(compile(src, f"jsonfix@{rev}", "exec"), namespace)
    return namespace["extract_json"]


def library_first(text: str) -> Any:
    """The thinnest wrapper: json-repair on the first fenced block (else the reply), a NoJSON-like
    error when it finds no object or array."""
    fence = re.search(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)(?:```|$)", text, re.S)
    value = json_repair.loads(fence.group(1) if fence else text)
    if not isinstance(value, (dict, list)):
        raise ValueError("no JSON")
    return value


def score(fn: Callable[[str], Any], cases: list[tuple[str, str, Any]]) -> tuple[int, list[str]]:
    failed = []
    for cid, raw, intended in cases:
        try:
            ok = fn(raw) == intended
        except Exception:
            ok = False
        if not ok:
            failed.append(cid)
    return len(cases) - len(failed), failed


def refuses(fn: Callable[[str], Any]) -> int:
    n = 0
    for raw in NO_JSON:
        try:
            fn(raw)
        except ValueError:
            n += 1
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline-rev", default="2ac31b5")
    ap.add_argument("--out", type=Path, default=Path("bench-out/json_repair"))
    args = ap.parse_args()
    lib = f"json-repair {importlib.metadata.version('json-repair')}"
    approaches = {f"hand-written scanner ({args.baseline_rev})": baseline(args.baseline_rev),
                  f"{lib}, loads() alone": json_repair.loads,
                  f"{lib}, library first (fence, then loads)": library_first,
                  "bookindex wrapper (scanner, then json-repair)": extract_json}
    sets = {"client tests": CLIENT_CASES, "LLM replies": LLM_CASES, "held-out": HELD_OUT}
    total = sum(len(c) for c in sets.values())
    res: dict[str, Any] = {}
    md = ["| approach | " + " | ".join(f"{k} ({len(v)})" for k, v in sets.items())
          + f" | all ({total}) | no JSON -> error ({len(NO_JSON)}) |", "|---" * (len(sets) + 3) + "|"]
    for name, fn in approaches.items():
        scores = {k: score(fn, v) for k, v in sets.items()}
        passed = sum(s[0] for s in scores.values())
        res[name] = {"passed": passed, "total": total, "no_json_refused": refuses(fn),
                     "failed": {k: s[1] for k, s in scores.items()}}
        md.append(f"| {name} | " + " | ".join(str(s[0]) for s in scores.values())
                  + f" | {passed} ({passed / total:.0%}) | {res[name]['no_json_refused']} |")
    text = "\n".join(md)
    print(text)
    for name, r in res.items():
        print(f"{name} fails: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in r["failed"].items() if v))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "json_repair.json").write_text(json.dumps(res, indent=2))
    (args.out / "json_repair.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
