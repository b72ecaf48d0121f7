"""The gateway's routes to the mesh's RPCs, derived from the contracts (the descriptor set).

``make proto`` writes gateway/docuthinker.pb, so a new RPC needs no hand-written route: streams get an unbounded
timeout, unary calls a bounded one, and only the unary calls whose contract declares ``idempotency_level =
NO_SIDE_EFFECTS`` are retried by Envoy (``services.runtime.contracts``, the rule the mesh channels follow too); an
RPC declared ``VISIBILITY_INTERNAL`` in its proto gets no route at all (404). Kept apart from the bootstrap
(``envoy_config``) because this is the one part that reads the contracts: the rest is listeners and clusters.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

from google.api import annotations_pb2
from google.protobuf import descriptor_pb2

from docuthinker.api.v1 import visibility_pb2
from services.runtime import gateway_reflection
from services.runtime.contracts import RpcMethod, methods_of

GATEWAY_DIR = pathlib.Path(__file__).resolve().parent
DESCRIPTOR_SET = GATEWAY_DIR / "docuthinker.pb"
UNARY_TIMEOUT_S = 120

# Calls answering with a user's uploaded bytes (HTML, SVG ...) on the web app's origin: a browser
# opening one directly gets them sandboxed (no scripts, no access to the app's stored token).
UNTRUSTED_BYTES = frozenset({"GetDocumentContent", "GetDocumentPreview", "GetDocumentVersionContent"})
UNTRUSTED_BYTES_HEADERS = {
    "content-security-policy": "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'",
    "x-content-type-options": "nosniff",
}


@dataclass(frozen=True)
class Method:
    service: str  # fully qualified, e.g. docuthinker.rag.v1.RagService
    name: str
    server_streaming: bool
    client_streaming: bool
    http_get: bool
    contract: RpcMethod
    internal: bool = False
    """Declared ``(docuthinker.api.v1.visibility) = VISIBILITY_INTERNAL``: only services call it, the gateway never routes it."""

    @property
    def grpc_path(self) -> str:
        return f"/{self.service}/{self.name}"

    @property
    def streaming(self) -> bool:
        return self.server_streaming or self.client_streaming

    @property
    def idempotent(self) -> bool:
        return not self.streaming and self.contract.retry_safe


def load_methods(descriptor_set: pathlib.Path = DESCRIPTOR_SET) -> dict[str, list[Method]]:
    """Methods of each mesh service, keyed by short service name (rag, nlp, ...)."""
    fds = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes())
    methods: dict[str, list[Method]] = {}
    for contract in methods_of(fds.file):
        short = contract.service.split(".")[1]
        rule = contract.options.Extensions[annotations_pb2.http]
        internal = contract.options.Extensions[visibility_pb2.visibility] == visibility_pb2.VISIBILITY_INTERNAL
        methods.setdefault(short, []).append(
            Method(contract.service, contract.name, contract.server_streaming, contract.client_streaming,
                   bool(rule.get), contract, internal)
        )
    return methods


RETRY_ON_ONE_REPLICA = "connect-failure,refused-stream,unavailable"
"""What a lone replica's idempotent call is retried on: its connection was refused, or it said UNAVAILABLE. Not a
reset of a request it had: a replica that dies under it is gone (a retry would find it refusing), and one that is
paused or hung is cut off by keepalive after ``peer_keepalive_s`` + ``peer_keepalive_timeout_s`` (about 5 s),
after which a retry would wait out a second keepalive on a new connection to the same stopped process (measured:
about 9 s in all, where the README promises 5)."""
RETRY_ON_REPLICAS = f"{RETRY_ON_ONE_REPLICA},reset"
"""Several replicas: a call reset under it is retried on another one (the previous-hosts predicate)."""


def routes(service: str, methods: list[Method], replicated: bool) -> list[dict]:
    routes = []
    for method in methods:
        if method.internal:
            continue  # no route: REST and gRPC callers of the gateway get its 404
        route: dict = {"cluster": service}
        if method.streaming:
            route["timeout"] = "0s"
            route["idle_timeout"] = "300s"
            route["max_stream_duration"] = {"grpc_timeout_header_max": "0s"}
        else:
            route["timeout"] = f"{UNARY_TIMEOUT_S}s"
            route["max_stream_duration"] = {"grpc_timeout_header_max": f"{UNARY_TIMEOUT_S}s"}
            if method.idempotent:
                route["retry_policy"] = {
                    "retry_on": RETRY_ON_REPLICAS if replicated else RETRY_ON_ONE_REPLICA,
                    "num_retries": 2,
                    "per_try_timeout": f"{UNARY_TIMEOUT_S // 3}s",
                    "retry_back_off": {"base_interval": "0.1s", "max_interval": "1s"},
                    # A retry goes to another replica than the one that just failed, when there is one.
                    "retry_host_predicate": [{"name": "envoy.retry_host_predicates.previous_hosts", "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"}}],
                    "host_selection_retry_max_attempts": 3,
                }
        entry = {"match": {"path": method.grpc_path}, "route": route, "name": method.grpc_path}
        if method.name in UNTRUSTED_BYTES:
            entry["response_headers_to_add"] = [
                {"header": {"key": k, "value": v}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}
                for k, v in UNTRUSTED_BYTES_HEADERS.items()
            ]
        routes.append(entry)
    return routes


def reflection_routes() -> list[dict]:
    """grpcurl at the gateway without -protoset: server reflection goes to the orchestrator, marked as coming
    through the gateway, and it describes every public service (``services/runtime/gateway_reflection.py``)."""
    return [{"match": {"prefix": prefix}, "name": prefix,
             "route": {"cluster": "orchestrator", "timeout": "0s", "idle_timeout": "60s"},
             "request_headers_to_add": [{"header": {"key": gateway_reflection.GATEWAY_HEADER, "value": "1"},
                                         "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}]}
            for prefix in gateway_reflection.METHOD_PREFIXES]

