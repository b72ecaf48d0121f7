"""``make run``: start the mesh, print where it answers and its admin token, run until Ctrl-C or SIGTERM.

``python -m services.launcher token --tenant acme [--role admin]`` mints a bearer token with the
mesh's local signing key (``<data_dir>/auth``; see ``services/launcher/local_auth.py``), or with
another key (``--key PATH``). ``python -m services.launcher keygen --dir DIR`` makes a signing key
and adds its public key to ``DIR/jwks.json`` (for a gateway deployed elsewhere; again: a rotation).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import secrets
import sys

from gateway.auth import ROLES, AuthSettings, keygen, mint
from services.launcher import demo
from services.launcher.local_auth import LocalAuth
from services.launcher.memory_ceiling import MemoryCeiling
from services.launcher.mesh import Mesh
from services.launcher.settings import LauncherSettings, offset_ports, parse_replicas
from services.launcher.stop_signals import StopSignals
from services.launcher.supervisor import Supervisor
from services.runtime.config import DEFAULT_TENANT, SERVICE_NAMES, MeshSettings
from services.runtime.request_context import USER


def _token(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    ttl_s = args.ttl_hours * 3600
    # Without a subject a token would name nobody (no conversations); a fresh one keeps two tokens apart.
    args.subject = args.subject or f"user-{secrets.token_hex(4)}"
    try:
        if args.key is not None:
            print(mint(args.key, args.tenant, ttl_s=ttl_s, auth=AuthSettings(), subject=args.subject, role=args.role))
            return 0
        settings = MeshSettings()
        local = LocalAuth(settings.data_dir, AuthSettings(), settings.mesh_credential_file)
        if local.signing_key is None or not local.signing_key.exists():
            parser.error(f"no local signing key in {local.directory} (auth off, another issuer, or `make run` not run"
                         " yet); --key names another")
        print(local.token(args.tenant, args.role, ttl_s=ttl_s, subject=args.subject))
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    return 0


def _keygen(args: argparse.Namespace) -> int:
    key_path, jwks_path = keygen(args.dir)
    print(f"signing key: {key_path}\nJWKS: {jwks_path}\nuse with: export DOCUTHINKER_AUTH_JWKS_FILE={jwks_path}")
    return 0


def main(argv: list[str] | None = None) -> int:  # noqa: C901 - the command line, one flag after another
    parser = argparse.ArgumentParser(prog="python -m services.launcher", description="Run the DocuThinker mesh locally.")
    commands = parser.add_subparsers(dest="command")
    issue = commands.add_parser("token", help="print a bearer token signed with the mesh's local key (or --key)")
    issue.add_argument("--tenant", default=DEFAULT_TENANT)
    issue.add_argument("--role", choices=ROLES, default=USER, help="admin sees mesh-wide costs and dead letters")
    issue.add_argument("--ttl-hours", type=float, default=24.0)
    issue.add_argument("--subject", default="", help="who the token is for (the sub claim; conversations are kept per"
                                                      " subject); default: a new user-<random> for each token")
    issue.add_argument("--key", type=pathlib.Path, default=None,
                       help="a signing key made by keygen (default: the local mesh's, <data_dir>/auth)")
    generate = commands.add_parser("keygen", help="make a signing key and add its public key to DIR/jwks.json")
    generate.add_argument("--dir", type=pathlib.Path, required=True)
    parser.add_argument("--no-demo", action="store_true", help="skip the sample upload and question")
    parser.add_argument("--prometheus", action="store_true", default=os.environ.get("DOCUTHINKER_PROMETHEUS") == "1",
                        help="also start a local Prometheus scraping the mesh (or DOCUTHINKER_PROMETHEUS=1)")
    parser.add_argument("--prometheus-port", type=int, default=9090, help="port of that Prometheus (default 9090)")
    parser.add_argument("--replicas", type=parse_replicas, default=None, metavar="SERVICE=N,...",
                        help="processes per service, e.g. rag=2,nlp=2,orchestrator=2 (or DOCUTHINKER_LAUNCHER_REPLICAS)")
    parser.add_argument("--port-offset", type=int, default=int(os.environ.get("DOCUTHINKER_PORT_OFFSET", "0") or 0),
                        metavar="N", help="move every port by N (a second mesh on this machine: --port-offset 100,"
                                          " with its own DOCUTHINKER_DATA_DIR), or DOCUTHINKER_PORT_OFFSET")
    args = parser.parse_args(argv)
    if args.command == "token":
        return _token(args, parser)
    if args.command == "keygen":
        return _keygen(args)
    try:
        os.environ.update(offset_ports(dict(os.environ), args.port_offset))
    except ValueError as exc:
        parser.error(str(exc))
    if args.port_offset and args.prometheus_port == 9090:
        args.prometheus_port += args.port_offset
    settings = MeshSettings()
    launcher = LauncherSettings()
    ceiling = MemoryCeiling(launcher.memory_max_mb, limits_mb={"gateway": launcher.gateway_memory_max_mb})
    stale = ceiling.remove_stale()  # a launcher killed with SIGKILL could not remove its cgroups
    if stale:
        print(f"removed {len(stale)} memory cgroups left by a launcher that was killed: {', '.join(stale)}")
    try:
        mesh = Mesh(data_dir=settings.data_dir, log_dir=settings.log_dir, memory_ceiling=ceiling,
                    replicas=launcher.replicas if args.replicas is None else args.replicas)
    except ValueError as exc:
        print(f"cannot start the mesh: {exc}", file=sys.stderr)
        return 2
    stop = StopSignals().install()
    print("starting DocuThinker mesh ...", flush=True)
    try:
        mesh.start()
    except (RuntimeError, TimeoutError) as exc:
        print(f"mesh failed to start: {exc}", file=sys.stderr)
        mesh.stop()
        return 1
    print(f"REST + gRPC gateway (Envoy): {mesh.base_url}")
    print(f"web app:                     {mesh.web_url}")
    print(f"Envoy admin (unix socket):   {mesh.admin.socket_path}")
    print(f"OpenAI-compatible chat API:  {mesh.base_url}/v1/chat/completions")
    for child in mesh.children.values():
        if child.service in SERVICE_NAMES:
            print(f"{child.name:<13} gRPC:          {mesh.grpc_target(child.name)}")
    for name, url in mesh.metrics_urls().items():
        print(f"{name:<13} metrics:       {url}")
    if mesh.settings.otlp_endpoint:
        print(f"traces (OTLP/gRPC):          {mesh.settings.otlp_endpoint}")
    local_prometheus = None
    if args.prometheus:
        from services.launcher.prometheus import LocalPrometheus

        try:
            local_prometheus = LocalPrometheus(mesh, mesh.log_dir / "prometheus", port=args.prometheus_port).start()
            print(f"Prometheus (scraping the mesh): {local_prometheus.url}")
        except (RuntimeError, TimeoutError) as exc:
            print(f"prometheus failed to start: {exc}", file=sys.stderr)
    print(f"logs: {mesh.log_dir}   data: {mesh.data_dir}")
    print("all services SERVING", flush=True)
    if mesh.token:
        print(f"auth: bearer tokens required; admin token (tenant default) in {mesh.local_auth.token_file},"
              " which the CLI reads:")
        print(f"  {mesh.token}")
        print("  more: python -m services.launcher token --tenant NAME [--role admin]")
    elif mesh.auth.enabled:
        print(f"auth: bearer tokens required (JWKS {mesh.auth.jwks_file}, your issuer mints them)")
    else:
        print("auth: OFF (DOCUTHINKER_AUTH_ENABLED=false): anyone reaching the gateway may be any tenant, and admin",
              file=sys.stderr)
    if not args.no_demo:
        try:
            demo.run(mesh.base_url, out=lambda line: print(line, flush=True), token=mesh.mint(DEFAULT_TENANT, ttl_s=600))
        except Exception as exc:  # noqa: BLE001 - the mesh stays up; the demo is a courtesy
            print(f"demo failed: {exc}", file=sys.stderr, flush=True)
    if ceiling.available:
        print(f"memory ceiling:              {ceiling.limit_mb} MB per service, {ceiling.limit_of('gateway')} MB for"
              " Envoy (cgroups)")
    else:
        print(f"memory ceiling:              off ({ceiling.reason})")
    supervisor = None
    if launcher.supervise:
        supervisor = Supervisor(mesh, launcher, ceiling, report=lambda line: print(line, file=sys.stderr, flush=True))
        supervisor.watch(list(mesh.pids()))
        print(f"supervised: a child that dies is restarted (budget {launcher.restart_budget} restarts"
              f" per {launcher.restart_window_s:.0f} s)")
    print("press Ctrl-C to stop", flush=True)
    while not stop.wait(0.25):
        if supervisor is not None:
            supervisor.poll_once()
            continue
        dead = mesh.exited()
        if dead:
            print(f"process exited unexpectedly: {', '.join(dead)}; stopping", file=sys.stderr)
            break
    if supervisor is not None:
        supervisor.stop()
    if local_prometheus is not None:
        local_prometheus.stop()
    codes = mesh.stop()
    print(f"stopped: {codes}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
