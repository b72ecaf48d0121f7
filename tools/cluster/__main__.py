"""``python -m tools.cluster up|test|chaos|scale|down|compose-up|compose-down|record-image`` (``make cluster-*``,
``make compose-*``)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import uuid
from typing import Any

from tools.cluster import IMAGE, PODMAN_ENV, compose, drills, mesh, net, results, scaling, state, traffic


def record_image(tag: str, base: str, build_s: float, cached_steps: int) -> dict[str, Any]:
    def inspect(image: str, fmt: str) -> str:
        return subprocess.run(["podman", "image", "inspect", "--format", fmt, image], capture_output=True, text=True,
                              timeout=60, check=True, env={**__import__("os").environ, **PODMAN_ENV}).stdout.strip()

    figures = {"tag": tag, "id": inspect(tag, "{{.Id}}")[:12], "size_mb": round(int(inspect(tag, "{{.Size}}")) / 1e6),
               "base": base, "base_size_mb": round(int(inspect(base, "{{.Size}}")) / 1e6),
               "build_s": round(build_s, 1), "build_steps_from_cache": cached_steps, "user": inspect(tag, "{{.Config.User}}"),
               "healthcheck": json.loads(inspect(tag, "{{json .Config.Healthcheck}}") or "null")}
    results.record("image", figures)
    print(json.dumps(figures, indent=2))
    return figures


def up(rag_cpusets: tuple[str, str] = ("", ""), profile: str = "full") -> dict[str, Any]:
    if not mesh.image_exists():
        raise SystemExit(f"no image {IMAGE}: run `make image` first")
    started = time.monotonic()
    net.up()
    mesh.prepare_secrets()
    wanted = mesh.containers(rag_cpusets, profile)
    present = {name for name, _ in mesh.listed()}
    pg, *services = [c for c in wanted if c.name != "dt40-envoy"]
    envoy = next(c for c in wanted if c.name == "dt40-envoy")
    try:
        if pg.name not in present:
            mesh.start(pg)
        mesh.wait_healthy([pg], timeout_s=120)
        for container in services:
            if container.name not in present:
                mesh.start(container)
        if not (mesh.STATE / "secrets" / "envoy" / "envoy.yaml").exists():
            mesh.render_envoy()
        if envoy.name not in present:
            mesh.start(envoy)
        ready_s = mesh.wait_healthy(wanted, timeout_s=600)
        members = state.rag_members_healthy(2, timeout_s=120)
    except (RuntimeError, TimeoutError):
        mesh.collect_logs()
        print(f"cluster did not come up; logs in {mesh.LOGS}; `make cluster-down` removes it", file=sys.stderr)
        raise
    figures = {"containers": len(wanted), "healthy_s": round(ready_s, 1), "up_s": round(time.monotonic() - started, 1),
               "envoy_rag_members_healthy_s": members}
    print(f"cluster up: {len(wanted)} containers healthy in {figures['up_s']} s; gateway {traffic.GATEWAY}")
    return figures


def smoke() -> dict[str, Any]:
    """One document through Envoy, READY, found by search; the NLP and graph routes answer."""
    gateway = traffic.client(f"smoke{uuid.uuid4().hex[:6]}", timeout=120)
    reply = traffic.upload(gateway, "smoke.txt", traffic.text("smoke survey", 30, "zyxsmokeqv"))
    reply.raise_for_status()
    document = reply.json()["result"]["document"]
    hits = gateway.post("/v1/search", json={"query": "zyxsmokeqv", "top_k": 3}).json().get("results", [])
    sentiment = gateway.post("/v1/nlp/sentiment", json={"text": "The canal survey went wonderfully well."})
    graph = gateway.get("/v1/graph/stats")
    figures = {"upload": reply.status_code, "status": document["status"], "chunks": document["chunk_count"],
               "search_hits_with_marker": sum("zyxsmokeqv" in h.get("text", "") for h in hits),
               "nlp_sentiment": sentiment.status_code, "graph_stats": graph.status_code}
    print(json.dumps(figures))
    if not (document["status"] == "DOCUMENT_STATUS_READY" and figures["search_hits_with_marker"] and sentiment.status_code == 200
            and graph.status_code == 200):
        raise SystemExit(f"cluster test failed: {figures}")
    return figures


def down() -> None:
    if any(ns.startswith("dt40-") for ns in net.namespaces()) or mesh.STATE.exists():
        try:
            mesh.collect_logs()
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
            print(f"logs not collected: {exc}", file=sys.stderr)
    for h in net.HOSTS:
        if h in net.namespaces():
            net.set_loss((h,), 0)
    # Twice: a container that was still being started when the first pass listed them is caught by the second.
    removed = mesh.remove_all()
    removed += mesh.remove_all()
    namespaces = net.down()
    import shutil

    shutil.rmtree(mesh.STATE, ignore_errors=True)
    print(f"removed {len(removed)} containers, {namespaces or 'no namespaces'}, {mesh.STATE}; logs kept in {mesh.LOGS}")


def chaos(which: list[str]) -> dict[str, Any]:
    lease_s = float(mesh.environment()["DOCUTHINKER_RAG_INGEST_LEASE_S"])
    out: dict[str, Any] = {}
    runs = {
        "kill_rag": lambda: drills.kill_rag_mid_ingestion(lease_s),
        "cut_link": lambda: drills.cut_link(mesh.H3),
        "packet_loss": drills.packet_loss,
        "postgres_restart": drills.postgres_restart,
        "delay": drills.delay,
    }
    for name in which:
        print(f"drill {name} ...", flush=True)
        try:
            out[name] = runs[name]()
        finally:
            net.set_link(mesh.H3, up=True)
        results.record(f"drills.{name}", out[name])
        print(json.dumps(out[name], indent=2), flush=True)
    mesh.collect_metrics()
    mesh.collect_logs()
    return out


def scale(rounds: int = 2) -> dict[str, Any]:
    """1 vs 2 rag replicas, each pinned to its own core, alternated ``rounds`` times (1, 2, 1, 2 ...) so that load
    from other work on the machine falls on both; the ratios are of the medians over the rounds."""
    import os
    import statistics

    rags = [c for c in mesh.containers(("0", "1")) if c.name.startswith("dt40-rag")]
    for container in rags:
        mesh.podman(container.host, "rm", "--force", "--time", "5", container.name, check=False)
        mesh.start(container)
    mesh.wait_healthy(rags, timeout_s=300)
    state.rag_members_healthy(2)
    runs: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
    for _ in range(rounds):
        mesh.podman(rags[1].host, "stop", "--time", "10", rags[1].name)
        state.rag_members_healthy(1)
        runs[1].append({**scaling.scaling(1), "load_1m_before": round(os.getloadavg()[0], 2)})
        mesh.podman(rags[1].host, "start", rags[1].name)
        mesh.wait_healthy(rags, timeout_s=300)
        state.rag_members_healthy(2)
        runs[2].append({**scaling.scaling(2), "load_1m_before": round(os.getloadavg()[0], 2)})

    def median(n: int, key: str) -> float:
        return float(statistics.median(run[key] for run in runs[n]))

    figures: dict[str, Any] = {
        "pinning": "rag-1 --cpuset-cpus 0 (host2), rag-2 --cpuset-cpus 1 (host3); every other container (nlp x2, "
                   "orchestrator, graph, PostgreSQL, Envoy) and the load generator float over the same 2 cores, which "
                   "the machine shares with other work",
        "rounds": rounds, "one_replica": runs[1], "two_replicas": runs[2]}
    for key in ("chunks_per_s", "searches_per_s", "p50_ms", "p95_ms"):
        figures[f"median_{key}"] = {"one": median(1, key), "two": median(2, key),
                                    "ratio_two_to_one": round(median(2, key) / max(median(1, key), 0.01), 2)}
    results.record("scaling", figures)
    print(json.dumps(figures, indent=2))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cluster", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    image = commands.add_parser("record-image")
    image.add_argument("--tag", required=True)
    image.add_argument("--base", required=True)
    image.add_argument("--build-s", type=float, required=True)
    image.add_argument("--cached-steps", type=int, default=0)
    up_parser = commands.add_parser("up")
    up_parser.add_argument("--profile", choices=mesh.PROFILES, default="full")
    commands.add_parser("test")
    chaos_parser = commands.add_parser("chaos")
    chaos_parser.add_argument("--drills", default="kill_rag,cut_link,packet_loss,delay,postgres_restart")
    commands.add_parser("scale")
    commands.add_parser("down")
    commands.add_parser("compose-up")
    commands.add_parser("compose-down")
    args = parser.parse_args(argv)
    if args.command == "record-image":
        record_image(args.tag, args.base, args.build_s, args.cached_steps)
    elif args.command == "up":
        results.record(f"cluster_up_{args.profile}", up(profile=args.profile))
    elif args.command == "test":
        results.record("cluster_test", smoke())
    elif args.command == "chaos":
        chaos(args.drills.split(","))
    elif args.command == "scale":
        scale()
    elif args.command == "compose-up":
        results.record("compose", {**compose.up(), "smoke": compose.smoke()})
    elif args.command == "compose-down":
        compose.down()
    else:
        down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
