"""Peer targets: the setting forms, and calls balanced over real replicas (in-process aio servers)."""

from __future__ import annotations

import socket

import pytest

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.runtime import MeshSettings, ServiceBinding, create_server, service_channel
from services.runtime.peers import LB_POLICY, channel_target, parse_peer


@pytest.mark.parametrize(("value", "target"), [
    ("rag:50051", "rag:50051"),
    ("10.0.0.1:50051", "10.0.0.1:50051"),
    ("10.0.0.1:50051, 10.0.0.2:50061", "ipv4:10.0.0.1:50051,10.0.0.2:50061"),
    ("localhost:1,127.0.0.1:2", "ipv4:127.0.0.1:1,127.0.0.1:2"),
    ("[::1]:1,[::1]:2", "ipv6:[::1]:1,[::1]:2"),
    ("dns:///docuthinker-rag.ns.svc:50051", "dns:///docuthinker-rag.ns.svc:50051"),
])
def test_target_forms(value, target):
    resolved, options = channel_target(value)
    assert resolved == target
    assert ("grpc.lb_policy_name", LB_POLICY) in options


@pytest.mark.parametrize(("value", "why"), [
    ("rag", "not host:port"),
    ("", "empty"),
    ("rag-a:1,rag-b:1", "dns:///"),  # names in a list: a list is of literals, a name of many hosts is dns:///
    ("10.0.0.1:1,[::1]:2", "mixes"),
    ("dns:///rag", "not host:port"),
])
def test_bad_targets_say_what_is_wrong(value, why):
    with pytest.raises(ValueError, match=why):
        parse_peer(value)


def test_an_empty_target_is_this_machine_and_a_wildcard_bind_is_not_dialled():
    settings = MeshSettings(host="0.0.0.0", rag_port=6000)
    assert settings.address_of("rag") == "127.0.0.1:6000"
    settings = MeshSettings(host="0.0.0.0", rag_target="dns:///docuthinker-rag:50051")
    assert settings.peer_of("rag").dns and settings.peer_of("rag").endpoints == (("docuthinker-rag", 50051),)


class Replica(pb_grpc.NlpServiceServicer):
    def __init__(self, name: str) -> None:
        self.name = name

    async def ComputeAnalytics(self, request, context):
        return pb.ComputeAnalyticsResponse(top_keywords=[pb.KeywordCount(keyword=self.name)])


def _binding(servicer) -> ServiceBinding:
    return ServiceBinding("nlp", ["docuthinker.nlp.v1.NlpService"],
                          lambda server: pb_grpc.add_NlpServiceServicer_to_server(servicer, server))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_calls_spread_over_every_replica_and_skip_a_dead_one():
    base = MeshSettings(metrics_enabled=False)
    servers = [await create_server(_binding(Replica(name)), base, port=0) for name in ("a", "b")]
    try:
        dead = _closed_port()
        target = ",".join(f"127.0.0.1:{p}" for p in (servers[0].port, dead, servers[1].port))
        settings = base.model_copy(update={"nlp_target": target})
        async with service_channel("nlp", settings) as channel:
            stub = pb_grpc.NlpServiceStub(channel)
            answers = [(await stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"), timeout=10))
                       .top_keywords[0].keyword for _ in range(20)]
        # Every call answered (the dead address is skipped, not failed), and by both live replicas.
        assert set(answers) == {"a", "b"}, answers
        assert len(answers) == 20
    finally:
        for server in servers:
            await server.stop(0)
