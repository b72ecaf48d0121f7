"""Neither retry layer may repeat an RPC whose contract does not declare it free of side effects."""

from __future__ import annotations

import json

from google.protobuf import descriptor_pb2

from gateway import envoy_config, rpc_routes
from services.runtime import channels
from services.runtime.config import MeshSettings
from services.runtime.contracts import NO_SIDE_EFFECTS, mesh_methods, methods_of

# Calls that write, bill or consume their request stream: a retry would repeat the effect.
NEVER_RETRIED = {
    "/docuthinker.rag.v1.RagService/UploadDocument",
    "/docuthinker.rag.v1.RagService/StreamUploadDocument",
    "/docuthinker.rag.v1.RagService/IngestDocument",
    "/docuthinker.rag.v1.RagService/DeleteDocument",
    "/docuthinker.rag.v1.RagService/Query",
    "/docuthinker.graph.v1.GraphService/UpsertDocumentFacts",
    "/docuthinker.nlp.v1.NlpService/Summarize",
    "/docuthinker.orchestrator.v1.OrchestratorService/AddConversationMessage",
    "/docuthinker.orchestrator.v1.OrchestratorService/Process",
}


def _contract_files() -> list[descriptor_pb2.FileDescriptorProto]:
    fds = descriptor_pb2.FileDescriptorSet.FromString(rpc_routes.DESCRIPTOR_SET.read_bytes())
    return list(fds.file)


def _not_retry_safe() -> set[str]:
    return {
        m.grpc_path for m in methods_of(_contract_files())
        if m.options.idempotency_level != NO_SIDE_EFFECTS or m.client_streaming
    }


def _channel_retried() -> set[str]:
    config = json.loads(dict(_options())["grpc.service_config"])
    retried = set()
    for entry in config["methodConfig"]:
        if "retryPolicy" not in entry:
            continue
        for name in entry["name"]:
            assert name.get("service") and name.get("method"), f"a wildcard retry entry retries every call: {name}"
            retried.add(f"/{name['service']}/{name['method']}")
    return retried


def _options() -> list[tuple[str, object]]:
    return channels.channel_options(MeshSettings())


def _envoy_retried() -> set[str]:
    rendered = envoy_config.render(MeshSettings())
    hcm = rendered["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    return {r["name"] for r in hcm["route_config"]["virtual_hosts"][0]["routes"]
            if "route" in r and "retry_policy" in r["route"]}


def test_the_shipped_descriptor_set_matches_the_generated_modules():
    shipped = {(m.grpc_path, m.options.idempotency_level) for m in methods_of(_contract_files())}
    assert shipped == {(m.grpc_path, m.options.idempotency_level) for m in mesh_methods()}


def test_writes_and_billed_calls_are_not_declared_retry_safe():
    assert NEVER_RETRIED <= _not_retry_safe()


def test_the_channels_retry_only_calls_without_side_effects():
    retried = _channel_retried()
    assert retried, "the channel retries nothing: the service config lost its methods"
    assert not retried & _not_retry_safe()
    assert "/docuthinker.rag.v1.RagService/Search" in retried


def test_envoy_retries_only_calls_without_side_effects():
    retried = _envoy_retried()
    assert retried
    assert not retried & _not_retry_safe()
    assert "/docuthinker.nlp.v1.NlpService/ExtractTopics" in retried
