"""A paused peer (SIGSTOP) fails its callers with UNAVAILABLE through keepalive, long before their deadline:
the call in flight when it stopped, and the calls made while it stays stopped."""

from __future__ import annotations

import asyncio
import os
import pathlib
import signal
import subprocess
import sys
import time

import grpc
import pytest

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.runtime import MeshSettings, open_channel

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEADLINE_S = 120.0  # far beyond keepalive: a call ending before it can only have been ended by keepalive


@pytest.fixture
def peer(tmp_path):
    port_file = tmp_path / "port"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "gen"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "tests.runtime.slow_peer", str(port_file)], cwd=ROOT, env=env)
    try:
        for _ in range(600):
            if port_file.exists() and port_file.read_text():
                break
            if proc.poll() is not None:
                raise AssertionError("the peer exited")
            time.sleep(0.1)
        yield proc, int(port_file.read_text())
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.wait()


async def test_a_paused_peer_fails_calls_with_unavailable_not_at_their_deadline(peer) -> None:
    proc, port = peer
    settings = MeshSettings(peer_keepalive_s=0.5, peer_keepalive_timeout_s=1.0, metrics_enabled=False)
    async with open_channel(f"127.0.0.1:{port}", settings, retries=False) as channel:
        stub = pb_grpc.NlpServiceStub(channel)
        assert (await stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="0"), timeout=30)).characters == 1
        in_flight = asyncio.ensure_future(stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="30"), timeout=DEADLINE_S))
        await asyncio.sleep(0.3)  # let the call reach the peer before it stops
        proc.send_signal(signal.SIGSTOP)
        with pytest.raises(grpc.aio.AioRpcError) as cut:
            await in_flight
        assert cut.value.code() == grpc.StatusCode.UNAVAILABLE, cut.value
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="0"), timeout=DEADLINE_S)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value
        proc.send_signal(signal.SIGCONT)  # back: served again
        for _ in range(50):
            try:
                reply = await stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="0"), timeout=5)
                break
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.2)
        assert reply.characters == 1
