"""Observability overhead: serving latency with metrics and tracing on vs off, in one run.

Three real meshes run side by side (Envoy + the four services each, free ports, temp data):

- ``off``: ``DOCUTHINKER_METRICS_ENABLED=false``, no trace endpoint (the runtime records nothing);
- ``metrics``: the default (RPC metrics in both interceptors, domain metrics, /metrics ports);
- ``tracing``: metrics, and traces exported over OTLP/gRPC to a receiver in this process, Envoy sampling
  ``--sample`` of the requests (default 10%) and the services following its decision.

Each mesh gets the same few documents. The timed calls go through Envoy over REST, one at a time
(closed loop, concurrency 1): ``list`` (GET /v1/documents: Envoy -> rag, a metadata read, the cheapest
call, where a fixed per-RPC cost shows most) and ``search`` (POST /v1/search: query embedding + hybrid
retrieval). Rounds interleave the three meshes in a shuffled order, so the shared CPU's noise falls on
all of them alike; ratios are per round (each mesh's p50 over the off mesh's p50 of that round), then
their median. The spans the receiver got are counted to show tracing ran at the configured rate.

    python -m bench.observability_bench [--rounds 12] [--requests 40] [--sample 0.1] [--out PATH]

Goals: p50 overhead <= 1% with metrics only, <= 3% with metrics and tracing at 10%.
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
import sys
import tempfile
import time

import httpx
import psutil

from bench.environment import describe as environment
from bench.stats import latency_summary, percentile
from docuthinker.nlp.v1 import nlp_service_pb2 as nlp_pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as nlp_grpc
from services.launcher.mesh import ROOT, Mesh
from services.runtime import MeshSettings, ServiceBinding, create_server, open_channel, tracing

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
CONFIGS = ("off", "metrics", "tracing")
GOALS = {"metrics": 0.01, "tracing": 0.03}
# The RPCs between Python processes behind one REST list or search call (Envoy -> rag); the interceptors'
# cost per such RPC (client and server side) times this is the runtime's share of a request.
RPCS_PER_REQUEST = 1
DOCUMENTS = {
    "lyon.txt": "The Lyon warehouse opened in 1998 and stores turbine parts for the southern region.",
    "lovelace.txt": "Ada Lovelace wrote the first published algorithm for Charles Babbage's Analytical Engine.",
    "policy.txt": "Expense reports are due within thirty days; travel above 500 euros needs prior approval.",
    "onboarding.txt": "New engineers get a laptop on day one and pair with a mentor for their first two weeks.",
}
QUESTIONS = ["When did the warehouse open?", "Who wrote the first algorithm?", "When are expense reports due?",
             "What do new engineers get?", "turbine parts storage", "mentor pairing"]


class _ReceiverProcess:
    """The test suite's OTLP receiver in a child process: decoding spans must not share the GIL with what is timed."""

    CODE = ("import sys; from tests.observability.otlp_receiver import OtlpReceiver; r = OtlpReceiver().start(); "
            "print(r.port, flush=True); sys.stdin.read(); print(len(r.spans), len({s.trace_id for s in r.spans}), "
            "flush=True)")

    def __init__(self) -> None:
        self._proc = subprocess.Popen([sys.executable, "-c", self.CODE], cwd=ROOT, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
        self.endpoint = f"127.0.0.1:{int(self._proc.stdout.readline())}"

    def stop(self) -> tuple[int, int]:
        """(spans, traces) received."""
        out, _ = self._proc.communicate("", timeout=30)
        spans, traces = out.split()
        return int(spans), int(traces)


def _env(config: str, endpoint: str, sample: float) -> dict[str, str]:
    env = {"DOCUTHINKER_SHUTDOWN_GRACE_S": "1", "DOCUTHINKER_RAG_GRAPH_POLL_INTERVAL_S": "0.5"}
    if config == "off":
        env["DOCUTHINKER_METRICS_ENABLED"] = "false"
    if config == "tracing":
        env["DOCUTHINKER_OTLP_ENDPOINT"] = endpoint
        env["DOCUTHINKER_TRACE_SAMPLE_RATIO"] = str(sample)
    return env


def _start(root: pathlib.Path, env: dict[str, str], attempts: int = 2) -> Mesh:
    """A started mesh; a process that dies while starting (seen once: an abort on a loaded machine) is
    reported with its log's tail and the mesh started again in a fresh directory."""
    for attempt in range(attempts):
        mesh = Mesh(data_dir=root / f"data{attempt}", log_dir=root / f"logs{attempt}", auto_ports=True, extra_env=env)
        try:
            return mesh.start()
        except (RuntimeError, TimeoutError) as exc:
            mesh.stop()
            for log in sorted(mesh.log_dir.glob("*.log")):
                print(f"--- {log.name} (tail)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-8:]))
            if attempt == attempts - 1:
                raise
            print(f"mesh failed to start ({exc}); trying again")
    raise AssertionError("unreachable")


def _seed(client: httpx.Client) -> None:
    for name, text in DOCUMENTS.items():
        reply = client.post("/v1/documents", params={"filename": name}, content=text.encode(),
                            headers={"Content-Type": "text/plain"})
        reply.raise_for_status()
        assert '"done"' in reply.text, reply.text


def _call(client: httpx.Client, operation: str, n: int) -> None:
    if operation == "list":
        reply = client.get("/v1/documents")
        reply.raise_for_status()
        assert reply.json()["documents"], "no documents listed"
    else:
        reply = client.post("/v1/search", json={"query": QUESTIONS[n % len(QUESTIONS)], "top_k": 3})
        reply.raise_for_status()
        assert reply.json()["results"], "no search results"


def _timed(client: httpx.Client, operation: str, requests: int) -> list[float]:
    samples = []
    for n in range(requests):
        started = time.perf_counter()
        _call(client, operation, n)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _cpu_s(processes: list[psutil.Process]) -> float:
    """CPU seconds the mesh's processes (every thread) have run: steadier than latency on a shared CPU.

    Read from /proc/<pid>/task/<tid>/schedstat (nanoseconds), not the clock-tick counters psutil reports
    (10 ms granularity, too coarse for a few milliseconds of work per request)."""
    total_ns = 0
    for process in processes:
        for task in pathlib.Path(f"/proc/{process.pid}/task").iterdir():
            try:
                total_ns += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
                continue
    return total_ns / 1e9


def run(rounds: int, requests: int, sample: float, seed: int = 17) -> dict:
    receiver = _ReceiverProcess()
    meshes: dict[str, Mesh] = {}
    clients: dict[str, httpx.Client] = {}
    with tempfile.TemporaryDirectory(prefix="obs-bench-") as tmp:
        try:
            for config in CONFIGS:
                meshes[config] = mesh = _start(pathlib.Path(tmp) / config, _env(config, receiver.endpoint, sample))
                clients[config] = mesh.http(timeout=60)
                _seed(clients[config])
            for config in CONFIGS:  # warm every path (model, caches, connections)
                for operation in ("list", "search"):
                    _timed(clients[config], operation, 20)
            samples = {c: {"list": [], "search": []} for c in CONFIGS}
            per_round = {c: {"list": [], "search": []} for c in CONFIGS}
            cpu = {c: {"list": [], "search": []} for c in CONFIGS}
            processes = {c: [psutil.Process(pid) for pid in meshes[c].pids().values()] for c in CONFIGS}
            order_rng = random.Random(seed)
            for _ in range(rounds):
                order = list(CONFIGS)
                order_rng.shuffle(order)
                for operation in ("list", "search"):
                    for config in order:
                        cpu_before = _cpu_s(processes[config])
                        taken = _timed(clients[config], operation, requests)
                        cpu[config][operation].append((_cpu_s(processes[config]) - cpu_before) * 1000 / requests)
                        samples[config][operation].extend(taken)
                        per_round[config][operation].append(percentile(taken, 50))
            time.sleep(1.5)  # the last span batches
        finally:
            for client in clients.values():
                client.close()
            for mesh in meshes.values():
                mesh.stop()
            spans, traced_requests = receiver.stop()  # warm-up requests included
    return _report(samples, per_round, cpu, rounds, requests, sample, spans, traced_requests)


def _report(samples, per_round, cpu, rounds, requests, sample, spans, traced_requests) -> dict:
    result: dict = {"operations": {}}
    for operation in ("list", "search"):
        summary = {c: latency_summary(samples[c][operation]) for c in CONFIGS}
        cpu_ms = {c: round(sum(cpu[c][operation]) / len(cpu[c][operation]), 4) for c in CONFIGS}
        ratios = {}
        for config in ("metrics", "tracing"):
            paired = [on / off for on, off in zip(per_round[config][operation], per_round["off"][operation])]
            ratios[config] = {
                "cpu_ms_per_request_ratio": round(cpu_ms[config] / cpu_ms["off"], 4),
                "p50_ratio_median_of_rounds": round(statistics.median(paired), 4),
                "p50_ratio_rounds_q1_q3": [round(percentile(paired, 25), 4), round(percentile(paired, 75), 4)],
                "p50_ratio_pooled": round(summary[config]["p50"] / summary["off"]["p50"], 4),
                "p95_ratio_pooled": round(summary[config]["p95"] / summary["off"]["p95"], 4),
                "goal_overhead": GOALS[config],
            }
        result["operations"][operation] = {"latency_ms": summary, "mesh_cpu_ms_per_request": cpu_ms,
                                           "ratios_vs_off": ratios}
    total_timed = rounds * requests * 2
    result["tracing"] = {"sample_ratio": sample, "requests_on_traced_mesh": total_timed + 40 + len(DOCUMENTS),
                         "traces_received": traced_requests, "spans_received": spans}
    result["plan"] = {"rounds": rounds, "requests_per_round_and_operation": requests, "concurrency": 1,
                      "interleaving": "per round, shuffled order of the three meshes; list then search"}
    return result


# -- the interceptors alone: one unary RPC between two in-process endpoints, many times ---------------------
class _Echo(nlp_grpc.NlpServiceServicer):
    async def ComputeAnalytics(self, request, context):
        return nlp_pb.ComputeAnalyticsResponse(characters=len(request.text))


async def _micro(rounds: int, calls: int, sample: float, endpoint: str) -> dict:
    """Per-call latency of a trivial unary RPC (client + server interceptors both) with the runtime's metrics
    off / on / on with tracing at ``sample``; servers and channels side by side, rounds interleaved."""
    def binding() -> ServiceBinding:
        return ServiceBinding("nlp", ["docuthinker.nlp.v1.NlpService"],
                              lambda server: nlp_grpc.add_NlpServiceServicer_to_server(_Echo(), server))

    off_settings, on_settings = MeshSettings(metrics_enabled=False), MeshSettings()
    servers = {"off": await create_server(binding(), off_settings, port=0),
               "metrics": await create_server(binding(), on_settings, port=0)}
    channels = {"off": open_channel(f"127.0.0.1:{servers['off'].port}", off_settings),
                "metrics": open_channel(f"127.0.0.1:{servers['metrics'].port}", on_settings)}
    stubs = {"off": nlp_grpc.NlpServiceStub(channels["off"]), "metrics": nlp_grpc.NlpServiceStub(channels["metrics"]),
             "tracing": nlp_grpc.NlpServiceStub(channels["metrics"])}
    request = nlp_pb.ComputeAnalyticsRequest(text="x")
    per_round: dict[str, list[float]] = {c: [] for c in CONFIGS}
    cpu_round: dict[str, list[float]] = {c: [] for c in CONFIGS}
    rng = random.Random(5)
    try:
        for stub in stubs.values():
            for _ in range(200):
                await stub.ComputeAnalytics(request)
        for _ in range(rounds):
            order = list(CONFIGS)
            rng.shuffle(order)
            for config in order:
                if config == "tracing":
                    tracing.configure("bench", endpoint, sample)
                taken = []
                cpu_started = time.process_time()
                for n in range(calls):
                    # A caller's sampled or unsampled trace, as Envoy would send it (``sample`` of them sampled).
                    metadata = None
                    if config == "tracing":
                        flags = "01" if rng.random() < sample else "00"
                        metadata = (("traceparent", f"00-{n + 1:032x}-{n + 1:016x}-{flags}"),)
                    started = time.perf_counter()
                    await stubs[config].ComputeAnalytics(request, metadata=metadata)
                    taken.append((time.perf_counter() - started) * 1e6)
                cpu_round[config].append((time.process_time() - cpu_started) * 1e6 / calls)
                if config == "tracing":
                    tracing.shutdown()
                per_round[config].append(percentile(taken, 50))
    finally:
        for channel in channels.values():
            await channel.close()
        for server in servers.values():
            await server.stop(0)
    medians = {c: round(statistics.median(v), 2) for c, v in per_round.items()}
    cpu = {c: round(statistics.median(v), 2) for c, v in cpu_round.items()}
    return {
        "rpc_p50_us_median_of_rounds": medians,
        "added_us_per_rpc_p50": {c: round(medians[c] - medians["off"], 2) for c in ("metrics", "tracing")},
        "cpu_us_per_rpc_median_of_rounds": cpu,
        "added_cpu_us_per_rpc": {c: round(cpu[c] - cpu["off"], 2) for c in ("metrics", "tracing")},
        "added_cpu_us_per_rpc_rounds_q1_q3": {
            c: [round(percentile([a - b for a, b in zip(cpu_round[c], cpu_round["off"])], q), 2) for q in (25, 75)]
            for c in ("metrics", "tracing")},
        "rounds": rounds, "calls_per_round": calls, "sample_ratio": sample,
        "what": "one unary RPC over loopback between in-process grpc.aio endpoints; client and server interceptors",
    }


def markdown(result: dict) -> str:
    lines = ["| operation | mesh | p50 ms | p95 ms | p50 ratio vs off (median of rounds) | p95 ratio (pooled) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for operation, data in result["operations"].items():
        for config in CONFIGS:
            lat = data["latency_ms"][config]
            ratio = data["ratios_vs_off"].get(config)
            r50 = f'{ratio["p50_ratio_median_of_rounds"]:.3f}' if ratio else "1"
            r95 = f'{ratio["p95_ratio_pooled"]:.3f}' if ratio else "1"
            lines.append(f"| {operation} | {config} | {lat['p50']:.2f} | {lat['p95']:.2f} | {r50} | {r95} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--sample", type=float, default=0.1)
    parser.add_argument("--micro-rounds", type=int, default=10)
    parser.add_argument("--micro-calls", type=int, default=400)
    parser.add_argument("--out", type=pathlib.Path,
                        default=RESULTS / f"observability-{dt.date.today().isoformat()}.json")
    args = parser.parse_args()
    started = time.time()
    receiver = _ReceiverProcess()
    try:
        micro = asyncio.run(_micro(args.micro_rounds, args.micro_calls, args.sample, receiver.endpoint))
    finally:
        receiver.stop()
    result = run(args.rounds, args.requests, args.sample)
    result["interceptors"] = micro
    for data in result["operations"].values():
        off_p50_us = data["latency_ms"]["off"]["p50"] * 1000
        data["interceptor_cost_share_of_off_p50"] = {
            c: round(micro["added_cpu_us_per_rpc"][c] * RPCS_PER_REQUEST / off_p50_us, 5) for c in ("metrics", "tracing")}
    result["environment"] = environment()
    result["wall_s"] = round(time.time() - started, 1)
    result["date"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    print(json.dumps(result["tracing"]))
    print(json.dumps(micro))
    print(args.out)


if __name__ == "__main__":
    main()
