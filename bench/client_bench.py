"""What the typed client layer costs per call: ``NlpClient`` vs the raw generated stub, same channel.

One small NLP servicer (fixed replies, no models) on a free port; one mesh channel
(``open_channel``: the runtime's interceptors and contract-derived retry policy) shared by both
callers, so only the client layer differs. Two calls: ``ExtractTopics`` succeeding (the
typed result built from the reply) and ``ExtractEntities`` failing with a rich
``google.rpc.Status`` (``remote_error`` parsing the trailer into the domain error, against the
raw ``AioRpcError``). Rounds interleave the callers in a shuffled order so the shared CPU's
noise falls on both; the overhead is the median over rounds of (client p50 - stub p50).

    python -m bench.client_bench [--rounds 10] [--calls 300] [--out PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import pathlib
import random
import statistics
import time

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from bench.environment import describe as environment
from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.clients.nlp import NlpClient
from services.runtime import MeshSettings, ServiceBinding, create_server, open_channel
from services.runtime.errors import DomainError

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def _packed(message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


REFUSAL = rpc_status.to_status(status_pb2.Status(
    code=code_pb2.INVALID_ARGUMENT, message="unknown label",
    details=[_packed(error_details_pb2.ErrorInfo(reason="BAD_LABELS", domain="docuthinker.dev")),
             _packed(error_details_pb2.BadRequest(field_violations=[
                 error_details_pb2.BadRequest.FieldViolation(field="labels", description="unknown")]))]))


class _Fixed(pb_grpc.NlpServiceServicer):
    async def ExtractTopics(self, request, context):
        return pb.ExtractTopicsResponse(topics=[pb.Topic(name=f"topic {i}", weight=1 / (i + 1)) for i in range(8)])

    async def ExtractEntities(self, request, context):
        await context.abort_with_status(REFUSAL)


async def _timed(call, calls: int) -> float:
    taken = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        taken.append(time.perf_counter() - started)
    return statistics.median(taken) * 1e6


async def run(rounds: int, calls: int) -> dict:
    settings = MeshSettings()
    binding = ServiceBinding("nlp", ["docuthinker.nlp.v1.NlpService"],
                             lambda server: pb_grpc.add_NlpServiceServicer_to_server(_Fixed(), server))
    server = await create_server(binding, settings, port=0)
    channel = open_channel(f"127.0.0.1:{server.port}", settings)
    stub, client = pb_grpc.NlpServiceStub(channel), NlpClient(channel)
    topics = pb.ExtractTopicsRequest(text="x", max_topics=8)
    refused = pb.ExtractEntitiesRequest(text="x", labels=["X"])

    async def stub_ok():
        reply = await stub.ExtractTopics(topics)
        return [(t.name, t.weight) for t in reply.topics]

    async def stub_error():
        try:
            await stub.ExtractEntities(refused)
        except grpc.aio.AioRpcError:
            return
        raise AssertionError("the refusal did not come")

    async def client_ok():
        return await client.topics("x", 8)

    async def client_error():
        try:
            await client.entities("x", ["X"])
        except DomainError as exc:
            assert exc.reason == "BAD_LABELS" and exc.violations
            return
        raise AssertionError("the refusal did not come")

    callers = {"stub_ok": stub_ok, "client_ok": client_ok, "stub_error": stub_error, "client_error": client_error}
    per_round: dict[str, list[float]] = {name: [] for name in callers}
    rng = random.Random(13)
    try:
        for call in callers.values():
            await _timed(call, 100)
        for _ in range(rounds):
            order = list(callers)
            rng.shuffle(order)
            for name in order:
                per_round[name].append(await _timed(callers[name], calls))
    finally:
        await channel.close()
        await server.stop(0)

    def overhead(kind: str) -> dict:
        deltas = [c - s for c, s in zip(per_round[f"client_{kind}"], per_round[f"stub_{kind}"])]
        return {"stub_p50_us": round(statistics.median(per_round[f"stub_{kind}"]), 1),
                "client_p50_us": round(statistics.median(per_round[f"client_{kind}"]), 1),
                "overhead_us_median_of_rounds": round(statistics.median(deltas), 1),
                "overhead_ratio": round(statistics.median(per_round[f"client_{kind}"])
                                        / statistics.median(per_round[f"stub_{kind}"]), 3)}

    return {"rounds": rounds, "calls_per_round": calls, "success": overhead("ok"), "rich_error": overhead("error"),
            "per_round_p50_us": {k: [round(v, 1) for v in vs] for k, vs in per_round.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--out", type=pathlib.Path,
                        default=RESULTS / f"client-overhead-{dt.date.today().isoformat()}.json")
    args = parser.parse_args()
    result = asyncio.run(run(args.rounds, args.calls))
    result["environment"] = environment()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("success", "rich_error")}))


if __name__ == "__main__":
    main()
