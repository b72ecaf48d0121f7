"""An OpenAPI 3.0 document of the REST surface, generated from the descriptor set's ``google.api.http`` rules.

The REST API is Envoy's transcoding of the protos, so the protos are its only truth: every HTTP rule
becomes an operation, path variables become path parameters, the fields a GET or DELETE does not bind
become query parameters, a ``body: "*"`` rule takes the request message (minus its path fields) as JSON
and a body bound to ``google.api.HttpBody`` takes raw bytes. Message schemas follow the proto3 JSON
mapping (proto field names, as the gateway prints them; 64-bit integers as integers or strings; enums by
name; well-known types by their JSON form) and allow no unknown properties, as the gateway does not.
Every error answer is ``google.rpc.Status``. The bad-input suite (``tests/e2e/test_bad_input.py``) fuzzes
the mesh from this document.

    python -m gateway.openapi --out openapi.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re

from google.protobuf import descriptor_pb2

from gateway.rpc_routes import DESCRIPTOR_SET
from services.runtime.contracts import HTTP_BODY, http_rules_of

F = descriptor_pb2.FieldDescriptorProto
_INT32 = {F.TYPE_INT32: (-(2**31), 2**31 - 1), F.TYPE_SINT32: (-(2**31), 2**31 - 1), F.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
          F.TYPE_UINT32: (0, 2**32 - 1), F.TYPE_FIXED32: (0, 2**32 - 1)}
_INT64 = {F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64, F.TYPE_UINT64, F.TYPE_FIXED64}
_WELL_KNOWN: dict[str, dict] = {
    ".google.protobuf.Struct": {"type": "object"},
    ".google.protobuf.Value": {},
    ".google.protobuf.ListValue": {"type": "array", "items": {}},
    ".google.protobuf.Any": {"type": "object", "properties": {"@type": {"type": "string"}}, "required": ["@type"]},
    ".google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    ".google.protobuf.Duration": {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]{1,9})?s$"},
    ".google.protobuf.FieldMask": {"type": "string"},
    ".google.protobuf.Empty": {"type": "object", "additionalProperties": False},
    ".google.protobuf.StringValue": {"type": "string"},
    ".google.protobuf.BoolValue": {"type": "boolean"},
    ".google.protobuf.DoubleValue": {"type": "number"},
    ".google.protobuf.FloatValue": {"type": "number"},
    ".google.protobuf.Int32Value": {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
    ".google.protobuf.UInt32Value": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
    ".google.protobuf.Int64Value": {"type": "integer"},
    ".google.protobuf.UInt64Value": {"type": "integer", "minimum": 0},
    ".google.protobuf.BytesValue": {"type": "string", "format": "byte"},
}
_STATUS = {"$ref": "#/components/schemas/google.rpc.Status"}


class _Types:
    def __init__(self, fds: descriptor_pb2.FileDescriptorSet) -> None:
        self.messages: dict[str, descriptor_pb2.DescriptorProto] = {}
        self.enums: dict[str, descriptor_pb2.EnumDescriptorProto] = {}
        for file in fds.file:
            prefix = f".{file.package}" if file.package else ""
            for message in file.message_type:
                self._add(prefix, message)
            for enum in file.enum_type:
                self.enums[f"{prefix}.{enum.name}"] = enum
        self.schemas: dict[str, dict] = {}

    def _add(self, prefix: str, message: descriptor_pb2.DescriptorProto) -> None:
        name = f"{prefix}.{message.name}"
        self.messages[name] = message
        for nested in message.nested_type:
            self._add(name, nested)
        for enum in message.enum_type:
            self.enums[f"{name}.{enum.name}"] = enum

    def field_schema(self, field: descriptor_pb2.FieldDescriptorProto) -> dict:
        if field.type == F.TYPE_MESSAGE:
            entry = self.messages[field.type_name]
            if entry.options.map_entry:
                value = self.field_schema(entry.field[1])
                return {"type": "object", "additionalProperties": value}
            single = self.message_ref(field.type_name)
        elif field.type == F.TYPE_ENUM:
            single = {"type": "string", "enum": [v.name for v in self.enums[field.type_name].value]}
        elif field.type in _INT32:
            low, high = _INT32[field.type]
            single = {"type": "integer", "minimum": low, "maximum": high}
        elif field.type in _INT64:
            single = {"type": "integer", **({"minimum": 0} if field.type in (F.TYPE_UINT64, F.TYPE_FIXED64) else {})}
        elif field.type in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
            single = {"type": "number"}
        elif field.type == F.TYPE_BOOL:
            single = {"type": "boolean"}
        elif field.type == F.TYPE_BYTES:
            single = {"type": "string", "format": "byte"}
        else:
            single = {"type": "string"}
        return {"type": "array", "items": single} if field.label == F.LABEL_REPEATED else single

    def message_ref(self, type_name: str) -> dict:
        if type_name in _WELL_KNOWN:
            return dict(_WELL_KNOWN[type_name])
        key = type_name.lstrip(".")
        if key not in self.schemas:
            self.schemas[key] = {}  # placeholder: recursive messages refer to themselves
            self.schemas[key] = self.object_schema(type_name)
        return {"$ref": f"#/components/schemas/{key}"}

    def object_schema(self, type_name: str, without: frozenset[str] = frozenset()) -> dict:
        message = self.messages[type_name]
        properties = {f.name: self.field_schema(f) for f in message.field if f.name not in without}
        return {"type": "object", "properties": properties, "additionalProperties": False}


def _path_and_variables(template: str) -> tuple[str, list[str]]:
    variables: list[str] = []

    def name(match: re.Match) -> str:
        variables.append(match.group(1))
        return "{" + match.group(1) + "}"

    return re.sub(r"\{([^}=]+)(?:=[^}]*)?\}", name, template), variables


def _query_parameters(types: _Types, message: descriptor_pb2.DescriptorProto, bound: set[str]) -> list[dict]:
    """Top-level scalar, enum and repeated-scalar fields not in the path (the transcoder's query mapping)."""
    params = []
    for field in message.field:
        if field.name in bound or (field.type == F.TYPE_MESSAGE and field.type_name not in _WELL_KNOWN):
            continue
        if field.type == F.TYPE_MESSAGE and _WELL_KNOWN[field.type_name].get("type") not in ("string", "integer",
                                                                                              "number", "boolean"):
            continue
        params.append({"name": field.name, "in": "query", "required": False, "schema": types.field_schema(field)})
    return params


def document(descriptor_set: pathlib.Path = DESCRIPTOR_SET, title: str = "DocuThinker") -> dict:
    fds = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes())
    types = _Types(fds)
    types.message_ref(".google.rpc.Status")
    paths: dict[str, dict] = {}
    for rule in http_rules_of(fds.file):
        method = rule.method
        package, _, service = method.service.rpartition(".")
        path, variables = _path_and_variables(rule.template)
        message = types.messages[method.input_type]
        parameters = [{"name": v, "in": "path", "required": True,
                       "schema": {"type": "string", "pattern": "^[^/]+$", "minLength": 1}}
                      for v in variables]
        operation: dict = {
            "operationId": f"{service}.{method.name}" + (f".{rule.index}" if rule.index else ""),
            "tags": [package],
            "responses": {
                "200": {"description": "the response message (a server stream: SSE events)"},
                "default": {"description": "google.rpc.Status",
                            "content": {"application/json": {"schema": _STATUS}}},
            },
        }
        bound = set(variables)
        if rule.body == "*":
            schema = types.object_schema(method.input_type, frozenset(bound))
            operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
        elif rule.body:
            field = next(f for f in message.field if f.name == rule.body)
            bound.add(rule.body)
            if field.type_name == HTTP_BODY:
                operation["requestBody"] = {"required": True, "content": {"application/octet-stream": {
                    "schema": {"type": "string", "format": "binary"}}}}
            else:  # a message field: its own schema inline (strict: no other properties), as for body "*"
                schema = (types.object_schema(field.type_name) if field.type == F.TYPE_MESSAGE
                          and field.type_name not in _WELL_KNOWN else types.field_schema(field))
                operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
            parameters += _query_parameters(types, message, bound)
        else:
            parameters += _query_parameters(types, message, bound)
        if parameters:
            operation["parameters"] = parameters
        paths.setdefault(path, {})[rule.verb] = operation
    return {
        "openapi": "3.0.3",
        "info": {"title": title, "version": "v1",
                 "description": "Generated from the protos (gateway/openapi.py); errors are google.rpc.Status."},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(types.schemas.items()))},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the REST surface's OpenAPI document (from the protos).")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("openapi.json"))
    args = parser.parse_args()
    args.out.write_text(json.dumps(document(), indent=2))
    print(args.out)


if __name__ == "__main__":
    main()
