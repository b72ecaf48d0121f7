"""What the user surfaces cost over the REST answer: the OpenAI-compatible chat API and the docuthinker CLI.

One real mesh (auto ports, temp data), README.md and the sample memo uploaded, then rounds that interleave, per
question, the same grounded answer asked five ways through Envoy:

- ``rest_query``: ``POST /v1/query`` (the transcoded unary RPC), total latency;
- ``chat_completion``: the openai SDK's ``chat.completions.create`` (chat API process -> rag Query), total;
- ``rest_stream``: ``POST /v1/query:stream`` (SSE), time to the first answer delta and total;
- ``chat_stream``: the SDK with ``stream=True``, time to the first content chunk and total;
- ``cli_ask``: ``docuthinker ask --json`` as a subprocess (includes Python start-up), total.

Interleaving makes the ratios robust to other load on the (shared) CPUs; absolute figures are noisy.

    python -m bench.chat_api_bench [--rounds 5] [--out bench/results/chat-api-DATE.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import openai

from bench.environment import describe as environment
from bench.stats import latency_summary
from services.launcher.mesh import ROOT, Mesh

QUESTIONS = (
    "Which port does the Envoy gateway listen on?",
    "What does make test run?",
    "Which embedding model does the rag service use?",
    "Where do logs go?",
)
WAYS = ("rest_query", "chat_completion", "rest_stream", "chat_stream", "cli_ask")


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def _cli() -> list[str]:
    script = pathlib.Path(sys.executable).parent / "docuthinker"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "docuthinker_cli"]


def run(rounds: int) -> dict:
    samples: dict[str, list[float]] = {f"{w}_total_ms": [] for w in WAYS}
    samples.update({"rest_stream_first_delta_ms": [], "chat_stream_first_delta_ms": []})
    with tempfile.TemporaryDirectory() as tmp, Mesh(data_dir=pathlib.Path(tmp) / "data",
                                                     log_dir=pathlib.Path(tmp) / "logs", auto_ports=True) as mesh:
        http = mesh.http(timeout=300)
        for path in (ROOT / "README.md",):
            reply = http.post("/v1/documents:ingest", params={"filename": path.name}, content=path.read_bytes(),
                              headers={"Content-Type": "text/markdown"})
            reply.raise_for_status()
        sdk = openai.OpenAI(base_url=f"{mesh.base_url}/v1", api_key=mesh.mint() or "unused", max_retries=0, timeout=300)
        cli = [*_cli(), "--gateway", mesh.base_url]
        cli_env = {**os.environ, "DOCUTHINKER_TOKEN_FILE": str(mesh.local_auth.token_file)}  # what `make run` wrote
        for question in QUESTIONS:  # warm every path (sentence-vector caches, connections)
            http.post("/v1/query", json={"question": question}).raise_for_status()
            sdk.chat.completions.create(model="docuthinker", messages=[{"role": "user", "content": question}])
        for _ in range(rounds):
            for question in QUESTIONS:
                messages = [{"role": "user", "content": question}]
                start = time.perf_counter()
                http.post("/v1/query", json={"question": question}).raise_for_status()
                samples["rest_query_total_ms"].append(_ms(start))
                start = time.perf_counter()
                sdk.chat.completions.create(model="docuthinker", messages=messages)
                samples["chat_completion_total_ms"].append(_ms(start))
                start, first = time.perf_counter(), None
                with http.stream("POST", "/v1/query:stream", json={"question": question}) as stream:
                    for line in stream.iter_lines():
                        if first is None and '"answer_delta"' in line:
                            first = _ms(start)
                samples["rest_stream_total_ms"].append(_ms(start))
                samples["rest_stream_first_delta_ms"].append(first if first is not None else _ms(start))
                start, first = time.perf_counter(), None
                for chunk in sdk.chat.completions.create(model="docuthinker", messages=messages, stream=True):
                    if first is None and chunk.choices and chunk.choices[0].delta.content:
                        first = _ms(start)
                samples["chat_stream_total_ms"].append(_ms(start))
                samples["chat_stream_first_delta_ms"].append(first if first is not None else _ms(start))
                start = time.perf_counter()
                subprocess.run([*cli, "ask", question, "--json"], check=True, capture_output=True, timeout=300,
                               env=cli_env)
                samples["cli_ask_total_ms"].append(_ms(start))
        sdk.close()
        http.close()
    summary = {name: latency_summary(values) for name, values in samples.items()}
    p50 = {name: s["p50"] for name, s in summary.items()}
    return {
        "benchmark": "chat-api",
        "date": dt.date.today().isoformat(),
        "rounds": rounds,
        "questions": list(QUESTIONS),
        "latency_ms": summary,
        "overhead_p50_ms": {
            "chat_completion_vs_rest_query": round(p50["chat_completion_total_ms"] - p50["rest_query_total_ms"], 1),
            "chat_stream_first_delta_vs_rest_stream": round(
                p50["chat_stream_first_delta_ms"] - p50["rest_stream_first_delta_ms"], 1),
            "cli_ask_vs_rest_query": round(p50["cli_ask_total_ms"] - p50["rest_query_total_ms"], 1),
        },
        "environment": environment(),
        "cli": " ".join(_cli()[:1]),
        "samples_ms": {name: [round(v, 1) for v in values] for name, values in samples.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=pathlib.Path,
                        default=ROOT / "bench" / "results" / f"chat-api-{dt.date.today().isoformat()}.json")
    args = parser.parse_args()
    result = run(args.rounds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for name, s in result["latency_ms"].items():
        print(f"{name:<32} p50 {s['p50']:>8.1f} ms   p95 {s['p95']:>8.1f} ms   (n={s['n']})")
    print("overheads (p50):", result["overhead_p50_ms"])
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
