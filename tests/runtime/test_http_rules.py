"""The one walker of the contracts' HTTP rules that the OpenAPI document and the strict-JSON routes share."""

from __future__ import annotations

from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor_pb2

from services.runtime.contracts import http_rules_of


def _file(package: str) -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name=f"{package}.proto", package=package)
    service = file.service.add(name="S")
    get = service.method.add(name="Get", input_type=f".{package}.GetRequest", output_type=f".{package}.R")
    rule = get.options.Extensions[annotations_pb2.http]
    rule.get = "/v1/things/{id}"
    rule.additional_bindings.add(post="/v1/things/{id}:get", body="*")
    rule.additional_bindings.add(custom=http_pb2.CustomHttpPattern(kind="HEAD", path="/v1/things/{id}"))
    upload = service.method.add(name="Upload", input_type=f".{package}.Chunk", output_type=f".{package}.R",
                                client_streaming=True)
    upload.options.Extensions[annotations_pb2.http].post = "/v1/things"
    service.method.add(name="NoRule", input_type=f".{package}.GetRequest", output_type=f".{package}.R")
    return file


def test_main_rule_and_bindings_in_order_without_custom_verbs_client_streams_or_foreign_packages():
    rules = http_rules_of([_file("docuthinker.x.v1"), _file("other.v1")])
    assert [(r.method.grpc_path, r.verb, r.template, r.body, r.index) for r in rules] == [
        ("/docuthinker.x.v1.S/Get", "get", "/v1/things/{id}", "", 0),
        ("/docuthinker.x.v1.S/Get", "post", "/v1/things/{id}:get", "*", 1),
    ]
    assert rules[0].method.input_type == ".docuthinker.x.v1.GetRequest"
