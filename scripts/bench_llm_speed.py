#!/usr/bin/env python
"""Prompt-processing and generation speed of the in-process model per weight format and llama.cpp
option (what the first token waits on): tokens per CPU-second on one thread, so figures taken on a shared,
loaded machine compare (wall seconds are printed too, with the load average).

    python scripts/bench_llm_speed.py --formats Q4_K_M,Q4_0,Q8_0 --pp 256 --tg 8 --rounds 2
    python scripts/bench_llm_speed.py --formats Q4_K_M --options '{}' '{"flash_attn": true}' '{"n_ubatch": 256}'

The embedded model (llm.model's default) is the Q4_K_M input; other formats are requantized from it
once into --work with llama.cpp's `llama_model_quantize` (allow_requantize). Each run loads the
model in a fresh child process (one thread, 2,048-token context), evaluates --pp tokens of
docs/architecture.md as one prompt, then --tg single-token steps, and reports the process's CPU
time. This times llama.cpp's kernels, not the answer path: no prompt, no sampling, no LLM client.
Writes llm_speed.json and llm_speed.md to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.atomic import write_json_atomic, write_text_atomic  # noqa: E402
from bookindex.providers.llm.local_model import resolve_gguf  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, sys, time
import llama_cpp
from llama_cpp import Llama
path, opts, n_pp, n_tg, text = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
for k in ("type_k", "type_v"):
    if k in opts:
        opts[k] = getattr(llama_cpp, "GGML_TYPE_" + opts[k])
llm = Llama(model_path=path, n_ctx=2048, n_threads=1, n_threads_batch=1, verbose=False, **opts)
toks = llm.tokenize(open(text, encoding="utf-8").read().encode(), add_bos=False)[:n_pp]
llm.eval(toks[:16]); llm.reset()  # first-touch of the weights outside the timing
t, c = time.perf_counter(), time.process_time()
llm.eval(toks)
pp_wall, pp_cpu = time.perf_counter() - t, time.process_time() - c
t, c = time.perf_counter(), time.process_time()
for i in range(n_tg):
    llm.eval([toks[i]])
tg_wall, tg_cpu = time.perf_counter() - t, time.process_time() - c
print(json.dumps({"pp_tokens": len(toks), "pp_cpu_s": pp_cpu, "pp_wall_s": pp_wall,
                  "tg_tokens": n_tg, "tg_cpu_s": tg_cpu, "tg_wall_s": tg_wall, "load1": os.getloadavg()[0]}))
"""


def converted(src: Path, fmt: str, work: Path) -> Path:
    """`src` requantized to `fmt` in `work` (done once; Q4_K_M is the embedded file itself)."""
    if fmt.upper() == "Q4_K_M":
        return src
    import llama_cpp  # deferred: the optional `local-llm` extra

    out = work / f"{src.stem}.{fmt.lower()}.gguf"
    if not out.is_file():
        work.mkdir(parents=True, exist_ok=True)
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{fmt.upper()}")
        params.allow_requantize = True
        tmp = out.with_suffix(".part")
        if llama_cpp.llama_model_quantize(str(src).encode(), str(tmp).encode(), params) != 0:
            raise SystemExit(f"llama_model_quantize failed for {fmt}")
        os.replace(tmp, out)
    return out


def run_one(path: Path, options: str, pp: int, tg: int) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), options, str(pp), str(tg),
                           str(ROOT / "docs" / "architecture.md")], capture_output=True, text=True, check=True)
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    r.update(pp_tok_per_cpu_s=round(r["pp_tokens"] / r["pp_cpu_s"], 1), tg_tok_per_cpu_s=round(r["tg_tokens"] / r["tg_cpu_s"], 2))
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="", help="GGUF path or embedded name (default: the embedded 1.5B)")
    ap.add_argument("--formats", default="Q4_K_M", help="comma-separated: Q4_K_M (as shipped), Q4_0, Q8_0, IQ4_NL, ...")
    ap.add_argument("--options", nargs="*", default=["{}"], help="Llama(...) keyword arguments as JSON, one run each")
    ap.add_argument("--pp", type=int, default=256, help="prompt tokens evaluated in one batch")
    ap.add_argument("--tg", type=int, default=8, help="single-token generation steps")
    ap.add_argument("--rounds", type=int, default=1, help="A/B rounds: every variant once per round")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bookindex-llm-speed"), help="requantized files")
    ap.add_argument("--out", type=Path, default=Path("bench-out/llm-speed"))
    a = ap.parse_args(argv)
    src = resolve_gguf(a.model)
    variants = [(fmt.strip(), opt) for fmt in a.formats.split(",") for opt in a.options]
    files = {fmt: converted(src, fmt, a.work) for fmt, _ in variants}
    rows = []
    for rnd in range(a.rounds):
        for fmt, opt in variants:
            r = run_one(files[fmt], opt, a.pp, a.tg)
            r.update(round=rnd + 1, format=fmt, options=opt, file_mib=round(files[fmt].stat().st_size / 2**20))
            rows.append(r)
            print(f"round {rnd + 1} {fmt} {opt}: pp {r['pp_tok_per_cpu_s']} tok/CPU-s, tg {r['tg_tok_per_cpu_s']} tok/CPU-s "
                  f"(wall pp {r['pp_wall_s']:.1f} s, load {r['load1']:.1f})", flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(a.out / "llm_speed.json", {"model": str(src), "rows": rows})
    md = ("| round | format | options | file MiB | pp tok/CPU-s | tg tok/CPU-s | pp wall s | load avg |\n"
          "|---|---|---|---|---|---|---|---|\n")
    md += "".join(f"| {r['round']} | {r['format']} | `{r['options']}` | {r['file_mib']} | {r['pp_tok_per_cpu_s']} | "
                  f"{r['tg_tok_per_cpu_s']} | {r['pp_wall_s']:.1f} | {r['load1']:.1f} |\n" for r in rows)
    write_text_atomic(a.out / "llm_speed.md", md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
