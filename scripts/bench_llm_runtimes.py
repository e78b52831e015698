"""The in-process runtimes side by side: llama-cpp-python vs xllamacpp on the same GGUF, prompt and threads.

Each runtime runs in its own worker process (its own Python: the two need not share a
virtualenv); the driver asks them in turn, alternating the order every round, so both see the
same machine load. Per runtime: the answer to the request (greedy, as bookindex sends it), then
`--runs` speed runs on a cold KV cache: the time to the first streamed token (prompt processing,
tokens/s = prompt tokens / that time) and the generation rate of `--gen` tokens (end-of-turn
tokens banned so every run generates the same count), with the 1-minute load average.

    python scripts/bench_llm_runtimes.py --request req.json --gguf MODEL.gguf \\
        --python-lcp .venv/bin/python --python-xll /tmp/venv-x/bin/python --runs 3

`req.json`: a JSON list whose first item has "messages" (the chat request bookindex sent, e.g.
captured from `bookindex ask` by wrapping the provider's complete_stream).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

THREADS, N_CTX = 2, 8192
BAN = {151645: -100.0, 151643: -100.0}  # Qwen2.5's <|im_end|> and <|endoftext|>


def worker(runtime: str, gguf: str, request: str, gen: int) -> None:
    """Load one runtime, then answer "answer" / "speed" commands on stdin with JSON lines."""
    msgs = json.load(open(request))[0]["messages"]
    t = time.perf_counter()
    if runtime == "lcp":
        from llama_cpp import Llama

        llm = Llama(model_path=gguf, n_ctx=N_CTX, n_threads=THREADS, n_threads_batch=THREADS,
                    verbose=False, logits_all=False)

        def answer() -> str:
            llm.reset()
            r: Any = llm.create_chat_completion(messages=msgs, temperature=0.0, max_tokens=1024)
            return str(r["choices"][0]["message"]["content"])

        def speed() -> tuple[float, float, float, int, int]:
            llm.reset()
            t0, first, parts = time.perf_counter(), 0.0, []
            stream: Any = llm.create_chat_completion(messages=msgs, temperature=0.0, max_tokens=gen,
                                                     stream=True, logit_bias=BAN)
            for ch in stream:
                d: str | None = (ch["choices"][0].get("delta") or {}).get("content")
                if d:
                    first = first or time.perf_counter()
                    parts.append(d)
            n = len(llm.tokenize("".join(parts).encode(), add_bos=False))
            return t0, first, time.perf_counter(), llm.n_tokens - n, n
    else:
        import xllamacpp as xlc

        p = xlc.CommonParams()
        p.model.path = gguf
        p.n_ctx, p.n_parallel, p.n_batch, p.n_ubatch = N_CTX, 1, 512, 512
        p.cpuparams.n_threads = p.cpuparams_batch.n_threads = THREADS
        p.verbosity = -1
        srv = xlc.Server(p)

        def answer() -> str:
            r = srv.handle_chat_completions({"messages": msgs, "temperature": 0.0, "max_tokens": 1024,
                                             "cache_prompt": False})
            return str(r["choices"][0]["message"]["content"])

        def speed() -> tuple[float, float, float, int, int]:
            marks: list[float] = []
            usage: dict[str, Any] = {}

            def cb(raw: Any) -> bool:
                c = json.loads(raw) if isinstance(raw, str) else raw
                if isinstance(c, dict):
                    usage.update(c.get("usage") or {})
                    if any((ch.get("delta") or {}).get("content") for ch in c.get("choices") or []):
                        marks.append(time.perf_counter())
                return False

            t0 = time.perf_counter()
            srv.handle_chat_completions({"messages": msgs, "temperature": 0.0, "max_tokens": gen,
                                         "stream": True, "cache_prompt": False,
                                         "logit_bias": [[k, v] for k, v in BAN.items()],
                                         "stream_options": {"include_usage": True}}, cb)
            return (t0, marks[0], time.perf_counter(), int(usage.get("prompt_tokens", 0)),
                    int(usage.get("completion_tokens", 0)))
    print(json.dumps({"rt": runtime, "load_s": round(time.perf_counter() - t, 2)}), flush=True)
    for line in sys.stdin:
        out: dict[str, Any] = {"rt": runtime, "cmd": line.strip(), "load1": os.getloadavg()[0]}
        if out["cmd"] == "answer":
            out["answer"] = answer()
        else:
            t0, first, end, ptok, ntok = speed()
            out.update(ttft_s=round(first - t0, 2), pp_tok_s=round(ptok / (first - t0), 1),
                       gen_tok_s=round((ntok - 1) / (end - first), 1), prompt_tokens=ptok, gen_tokens=ntok)
        print(json.dumps(out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--request", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--python-lcp", default=sys.executable)
    ap.add_argument("--python-xll", default=sys.executable)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--worker", choices=["lcp", "xll"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.gguf, a.request, a.gen)
        return
    procs = {}
    for rt, py in (("lcp", a.python_lcp), ("xll", a.python_xll)):
        procs[rt] = subprocess.Popen([py, __file__, "--worker", rt, "--gguf", a.gguf, "--request", a.request,
                                      "--gen", str(a.gen)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        print(procs[rt].stdout.readline().strip(), flush=True)  # type: ignore[union-attr]

    def ask(rt: str, cmd: str) -> None:
        p = procs[rt]
        p.stdin.write(cmd + "\n")  # type: ignore[union-attr]
        p.stdin.flush()  # type: ignore[union-attr]
        print(p.stdout.readline().strip(), flush=True)  # type: ignore[union-attr]

    for rt in procs:
        ask(rt, "answer")
    for i in range(a.runs):
        for rt in (("lcp", "xll") if i % 2 == 0 else ("xll", "lcp")):
            ask(rt, "speed")
    for p in procs.values():
        p.stdin.close()  # type: ignore[union-attr]
        p.wait()


if __name__ == "__main__":
    main()
