"""``python -m services.launcher.healthcheck``: the image's HEALTHCHECK, for whichever process the container runs.

One image runs every process (each container names its command), so the check reads PID 1's command line to
know what to ask: a gRPC service its health service, Envoy and the chat API a TCP connect to their port,
PostgreSQL a connect to its port. Exit 0 healthy, 1 not (what podman's and Docker's health checks read).
"""

from __future__ import annotations

import os
import pathlib
import socket
import sys

from services.runtime.config import SERVICE_NAMES, MeshSettings


def _command() -> list[str]:
    raw = pathlib.Path("/proc/1/cmdline").read_bytes()
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _tcp_open(port: int, timeout: float) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def check(command: list[str], settings: MeshSettings, timeout: float = 3.0) -> tuple[bool, str]:
    """Whether the process ``command`` describes serves, and what was asked."""
    module = command[command.index("-m") + 1] if "-m" in command[:-1] else ""
    service = module.removeprefix("services.")
    if service in SERVICE_NAMES:
        from services.launcher.probes import grpc_serving

        address = f"127.0.0.1:{settings.port_of(service)}"
        return grpc_serving(address, timeout=timeout), f"gRPC health of {service} at {address}"
    if module == "services.launcher":
        # The whole mesh in one container: healthy once its gateway answers.
        return _tcp_open(settings.gateway_port, timeout), f"gateway port {settings.gateway_port}"
    if module == "services.openai_api":
        return _tcp_open(settings.openai_api_port, timeout), f"chat API port {settings.openai_api_port}"
    name = pathlib.Path(command[0]).name if command else ""
    if name == "envoy":
        return _tcp_open(settings.gateway_port, timeout), f"Envoy's listener {settings.gateway_port}"
    if name == "postgres":
        port = int(command[command.index("-p") + 1]) if "-p" in command[:-1] else 5432
        return _tcp_open(port, timeout), f"PostgreSQL port {port}"
    return True, f"nothing known to check for {' '.join(command) or 'PID 1'}"


def main() -> int:
    healthy, what = check(_command(), MeshSettings())
    print(f"{'healthy' if healthy else 'unhealthy'}: {what}", file=sys.stdout if healthy else sys.stderr)
    return 0 if healthy else 1


if __name__ == "__main__":
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    sys.exit(main())
