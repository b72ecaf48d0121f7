"""What the mesh's interceptors cost per call: a bare gRPC server and channel against the mesh's own
(``create_server`` + ``open_channel``: every server concern and client concern, metrics on, tracing off).

Two in-process endpoints side by side, rounds interleaved in a shuffled order so the machine's noise
falls on both; per round the CPU time per call (client and server together: one process) and the p50
wall time, for a unary call and for a server stream of ``--messages`` messages. The figure to compare
between two versions of the runtime is the added CPU per call (mesh minus bare), from runs of this
script on each version, back to back on one machine.

    python -m bench.interceptor_bench [--rounds 12] [--calls 300] [--messages 20] [--label NAME] [--out PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import pathlib
import random
import statistics
import subprocess
import time

import grpc

from bench.environment import describe as environment
from bench.stats import percentile
from docuthinker.nlp.v1 import nlp_service_pb2 as nlp_pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as nlp_grpc
from services.runtime import MeshSettings, ServiceBinding, create_server, open_channel

CONFIGS = ("bare", "mesh")


class _Echo(nlp_grpc.NlpServiceServicer):
    def __init__(self, messages: int) -> None:
        self._messages = messages

    async def ComputeAnalytics(self, request, context):
        return nlp_pb.ComputeAnalyticsResponse(characters=len(request.text))

    async def Analyze(self, request, context):
        for _ in range(self._messages):
            yield nlp_pb.AnalyzeResponse(result=nlp_pb.OperationResult(operation=nlp_pb.OPERATION_ANALYTICS))


async def _measure(rounds: int, calls: int, messages: int) -> dict:
    settings = MeshSettings(metrics_enabled=True)
    bare = grpc.aio.server()
    nlp_grpc.add_NlpServiceServicer_to_server(_Echo(messages), bare)
    bare_port = bare.add_insecure_port("127.0.0.1:0")
    await bare.start()
    mesh = await create_server(ServiceBinding("nlp", ["docuthinker.nlp.v1.NlpService"],
                                              lambda server: nlp_grpc.add_NlpServiceServicer_to_server(
                                                  _Echo(messages), server)), settings, port=0)
    channels = {"bare": grpc.aio.insecure_channel(f"127.0.0.1:{bare_port}"),
                "mesh": open_channel(f"127.0.0.1:{mesh.port}", settings)}
    stubs = {name: nlp_grpc.NlpServiceStub(channel) for name, channel in channels.items()}
    unary_request = nlp_pb.ComputeAnalyticsRequest(text="x")
    stream_request = nlp_pb.AnalyzeRequest(text="x", operations=[nlp_pb.OPERATION_ANALYTICS])

    async def unary(stub: nlp_grpc.NlpServiceStub) -> None:
        await stub.ComputeAnalytics(unary_request)

    async def stream(stub: nlp_grpc.NlpServiceStub) -> None:
        async for _ in stub.Analyze(stream_request):
            pass

    kinds = {"unary": unary, "stream": stream}
    cpu: dict[str, dict[str, list[float]]] = {k: {c: [] for c in CONFIGS} for k in kinds}
    wall: dict[str, dict[str, list[float]]] = {k: {c: [] for c in CONFIGS} for k in kinds}
    rng = random.Random(7)
    try:
        for call in kinds.values():
            for stub in stubs.values():
                for _ in range(100):
                    await call(stub)
        for _ in range(rounds):
            order = [(k, c) for k in kinds for c in CONFIGS]
            rng.shuffle(order)
            for kind, config in order:
                taken = []
                cpu_started = time.process_time()
                for _ in range(calls):
                    started = time.perf_counter()
                    await kinds[kind](stubs[config])
                    taken.append((time.perf_counter() - started) * 1e6)
                cpu[kind][config].append((time.process_time() - cpu_started) * 1e6 / calls)
                wall[kind][config].append(percentile(taken, 50))
    finally:
        for channel in channels.values():
            await channel.close()
        await bare.stop(0)
        await mesh.stop(0)
    result: dict = {}
    for kind in kinds:
        cpu_median = {c: round(statistics.median(v), 1) for c, v in cpu[kind].items()}
        added = [m - b for m, b in zip(cpu[kind]["mesh"], cpu[kind]["bare"], strict=True)]
        result[kind] = {
            "cpu_us_per_call_median_of_rounds": cpu_median,
            "added_cpu_us_per_call": round(statistics.median(added), 1),
            "added_cpu_us_per_call_q1_q3": [round(percentile(added, q), 1) for q in (25, 75)],
            "p50_us_median_of_rounds": {c: round(statistics.median(v), 1) for c, v in wall[kind].items()},
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--messages", type=int, default=20, help="messages per server stream")
    parser.add_argument("--label", default="", help="names the runtime version measured (a commit, 'before')")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {
        "what": "per-call cost of the mesh's server and client interceptors: bare grpc.aio vs create_server + "
                "open_channel (metrics on, tracing off), one process, loopback, rounds interleaved",
        "label": args.label or commit, "commit": commit, "rounds": args.rounds, "calls_per_round": args.calls,
        "messages_per_stream": args.messages, "environment": environment(),
        "results": asyncio.run(_measure(args.rounds, args.calls, args.messages)),
    }
    out = args.out or pathlib.Path("bench/results") / f"interceptors-{dt.date.today()}-{result['label']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["results"], indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
