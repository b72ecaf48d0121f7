"""What the contracts say about each RPC: whether it may be retried, and its REST forms.

Retries: the ``idempotency_level`` option. Both retry layers (the mesh channels' service
config and Envoy's routes) read it from the descriptors, so a new RPC is retried only once its
proto declares it safe. Only
``NO_SIDE_EFFECTS`` calls are repeated transparently: an ``IDEMPOTENT`` one (a delete) may
already have taken effect, and its repeat then reports differently (NOT_FOUND) from the
attempt that succeeded. A client stream is never repeated: its messages are consumed once.

REST forms: the ``google.api.http`` rules, walked once here (``http_rules_of``) for everything
the gateway derives from them (the OpenAPI document, the strict-JSON routes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from google.api import annotations_pb2
from google.protobuf import descriptor_pb2

from docuthinker.graph.v1 import graph_service_pb2
from docuthinker.nlp.v1 import nlp_service_pb2
from docuthinker.orchestrator.v1 import orchestrator_service_pb2
from docuthinker.rag.v1 import rag_service_pb2

NO_SIDE_EFFECTS = descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS
_MESH_MODULES = (graph_service_pb2, nlp_service_pb2, orchestrator_service_pb2, rag_service_pb2)


@dataclass(frozen=True)
class RpcMethod:
    service: str
    """Fully qualified, e.g. docuthinker.rag.v1.RagService."""
    name: str
    client_streaming: bool
    server_streaming: bool
    options: descriptor_pb2.MethodOptions
    input_type: str = ""
    """Fully qualified with a leading dot, as descriptors name it: .docuthinker.rag.v1.SearchRequest."""

    @property
    def grpc_path(self) -> str:
        return f"/{self.service}/{self.name}"

    @property
    def retry_safe(self) -> bool:
        """Whether a transparent retry may send this call again."""
        return self.options.idempotency_level == NO_SIDE_EFFECTS and not self.client_streaming


def methods_of(files: Iterable[descriptor_pb2.FileDescriptorProto]) -> list[RpcMethod]:
    """The methods of the mesh's own services (``docuthinker.*`` packages) in ``files``."""
    return [
        RpcMethod(f"{file.package}.{service.name}", m.name, m.client_streaming, m.server_streaming, m.options,
                  m.input_type)
        for file in files
        if file.package.startswith("docuthinker.")
        for service in file.service
        for m in service.method
    ]


def mesh_methods() -> list[RpcMethod]:
    """The methods of the generated contracts this process was built with."""
    files = []
    for module in _MESH_MODULES:
        proto = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(proto)
        files.append(proto)
    return methods_of(files)


@dataclass(frozen=True)
class HttpRule:
    """One REST form of an RPC: its main ``google.api.http`` rule (``index`` 0) or an additional binding."""

    method: RpcMethod
    verb: str
    """get, put, post, delete or patch."""
    template: str
    """The path template, e.g. /v1/documents/{document_id}."""
    body: str
    """"*" (the whole request message), a top-level field name, or "" (no body)."""
    index: int


HTTP_BODY = ".google.api.HttpBody"


def _raw_body_stream(method: RpcMethod, body: str, messages: dict[str, descriptor_pb2.DescriptorProto]) -> bool:
    """A client stream whose REST body is one ``google.api.HttpBody`` field: the gateway streams the raw body to
    it in pieces (``UploadDocumentBody``), so over REST it is an ordinary upload."""
    request = messages.get(method.input_type)
    field = next((f for f in request.field if f.name == body), None) if request is not None else None
    return field is not None and field.type_name == HTTP_BODY


def http_rules_of(files: Iterable[descriptor_pb2.FileDescriptorProto]) -> list[HttpRule]:
    """The HTTP rules of the mesh's methods in ``files``, in descriptor order. Custom verbs and client
    streams of JSON messages are left out: the gateway offers neither over REST."""
    files = list(files)
    messages = {f".{f.package}.{m.name}": m for f in files for m in f.message_type}
    rules = []
    for method in methods_of(files):
        top = method.options.Extensions[annotations_pb2.http]
        if method.client_streaming and not _raw_body_stream(method, top.body, messages):
            continue
        for index, rule in enumerate([top, *top.additional_bindings]):
            verb = rule.WhichOneof("pattern")
            if verb in (None, "custom"):
                continue
            rules.append(HttpRule(method, verb, getattr(rule, verb), rule.body, index))
    return rules
