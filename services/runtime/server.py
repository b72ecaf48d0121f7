"""The one gRPC server bootstrap used by every service.

``create_server`` binds a ``grpc.aio`` server with the standard health service, server
reflection, the mesh credential check (``mesh_auth``) and the mesh interceptors (RPC metrics and traces included); ``serve`` also starts
the process's /metrics port and its trace exporter (when configured), runs until SIGTERM/SIGINT,
then shuts down gracefully: health NOT_SERVING first, then drain in-flight RPCs for the grace period. Work
still running in worker threads after that (a model warm-up, the computation of a call its caller gave up on) gets
one more grace period, then the process exits without it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from services.runtime import gateway_reflection, keepalive, logs, mesh_auth, metrics, tracing
from services.runtime.clients import ChannelPool
from services.runtime.config import MeshSettings
from services.runtime.data_dir import make_private, private_umask
from services.runtime.interceptors import (
    ErrorMapping,
    RequestScope,
    ServerObservability,
    Validation,
    server_interceptor,
)

log = logging.getLogger("docuthinker.server")


@dataclass
class ServiceBinding:
    """What a service contributes to the server: its registrations and lifecycle hooks."""

    name: str
    """Short name, e.g. "rag"; used in logs."""
    full_names: Sequence[str]
    """Fully qualified gRPC service names, for health and reflection."""
    register: Callable[[grpc.aio.Server], None]
    """Adds the servicers to the server; called after ``on_start``, before the server starts."""
    on_start: Callable[[], Awaitable[None]] | None = None
    on_stop: Callable[[], Awaitable[None]] | None = None
    channels: ChannelPool | None = None
    """The service's channels to its peers: closed after ``on_stop``, once nothing calls out any more."""
    gateway_reflection: Sequence[str] = ()
    """Further services its reflection describes to callers through the gateway (``gateway_reflection``)."""


@dataclass
class RunningServer:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    binding: ServiceBinding

    async def set_serving(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", *self.binding.full_names):
            await self.health.set(name, status)

    async def stop(self, grace: float) -> None:
        await self.set_serving(False)
        await self.server.stop(grace)
        if self.binding.on_stop is not None:
            await self.binding.on_stop()
        if self.binding.channels is not None:
            await self.binding.channels.close()


async def create_server(binding: ServiceBinding, settings: MeshSettings, port: int | None = None) -> RunningServer:
    """Builds, binds and starts the server; ``port=0`` picks a free port (tests)."""
    server = grpc.aio.server(
        interceptors=[server_interceptor(binding.name, [
            # The mesh credential first: a caller that is not the mesh reaches no handler, tenant or metrics code.
            *mesh_auth.server_concerns(settings.mesh_credential_file),
            functools.partial(ServerObservability, service=binding.name, record_metrics=settings.metrics_enabled),
            ErrorMapping,
            functools.partial(RequestScope, default_tenant=settings.default_tenant),
            Validation,
        ])],
        options=[
            ("grpc.max_receive_message_length", settings.max_message_bytes),
            ("grpc.max_send_message_length", settings.max_message_bytes),
            ("grpc.so_reuseport", 0),
            # Clients re-resolve their peer's name when a connection ends: aged connections make a scale-out
            # reach every replica. In-flight calls finish on the old connection (no grace limit is set).
            ("grpc.max_connection_age_ms", int(settings.max_connection_age_s * 1000)),
            *keepalive.server_options(settings),
        ],
    )
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    own = [*binding.full_names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name]
    if binding.gateway_reflection:
        gateway_reflection.enable(server, own, binding.gateway_reflection)
    else:
        reflection.enable_server_reflection([*own, reflection.SERVICE_NAME], server)
    bind_port = settings.port_of(binding.name) if port is None else port
    bound = server.add_insecure_port(f"{settings.host}:{bind_port}")
    if bound == 0:
        raise RuntimeError(f"{binding.name}: cannot bind {settings.host}:{bind_port}")
    if binding.on_start is not None:
        await binding.on_start()
    binding.register(server)  # after on_start: a servicer may be built from what start-up opened
    await server.start()
    running = RunningServer(server, bound, health_servicer, binding)
    await running.set_serving(True)
    return running


async def _serve(binding: ServiceBinding, settings: MeshSettings) -> None:
    workers = ThreadPoolExecutor(thread_name_prefix=f"{binding.name}-worker")  # asyncio.to_thread's, bounded at stop
    asyncio.get_running_loop().set_default_executor(workers)
    metrics.set_process_service(binding.name)
    tracing.configure(binding.name, settings.otlp_endpoint, settings.trace_sample_ratio)
    if settings.metrics_enabled:
        metrics.start_metrics_server(binding.name, settings.host, settings.metrics_port_of(binding.name))
    mesh_auth.warn_if_open(binding.name, settings.mesh_credential_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):  # before "serving": a stop asked right after it is graceful too
        loop.add_signal_handler(sig, stop.set)
    running = await create_server(binding, settings)
    log.info("serving", extra={"fields": {"address": f"{settings.host}:{running.port}"}})
    await stop.wait()
    log.info("shutting down", extra={"fields": {"grace_s": settings.shutdown_grace_s}})
    await running.stop(settings.shutdown_grace_s)
    tracing.shutdown()
    log.info("stopped")
    await _leave_worker_threads(workers, settings.shutdown_grace_s)


async def _leave_worker_threads(workers: ThreadPoolExecutor, grace_s: float) -> None:
    """Waits up to ``grace_s`` for the worker threads (``asyncio.to_thread``), then exits the process without them.

    ``asyncio.run`` waits for every worker thread without a limit, and so does the interpreter's exit: a warm-up
    still loading a model, or a long computation whose caller has gone, held a stopped nlp past its supervisor's
    deadline until it was killed (15 s per mesh stop in the tests). The server has stopped and the stores are
    closed, so nobody reads what they would return."""
    waiter = threading.Thread(target=workers.shutdown, daemon=True)
    waiter.start()
    deadline = time.monotonic() + grace_s
    while waiter.is_alive() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    if waiter.is_alive():
        log.warning("worker threads still busy after the grace period: exiting without them",
                    extra={"fields": {"grace_s": grace_s}})
        logging.shutdown()
        os._exit(0)


def serve(make_binding: Callable[[MeshSettings], ServiceBinding], settings: MeshSettings | None = None) -> None:
    """Entry point of a service process."""
    settings = settings or MeshSettings()
    private_umask()  # before anything is written: data, sockets, logs
    make_private(settings.data_dir)
    binding = make_binding(settings)
    logs.configure(binding.name, settings.log_level)
    asyncio.run(_serve(binding, settings))
