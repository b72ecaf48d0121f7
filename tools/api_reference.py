"""Renders the API reference (docs/api.md) from the contracts: every service, RPC, REST route and message.

    python tools/api_reference.py           # print the page
    python tools/api_reference.py --write   # write docs/api.md
    python tools/api_reference.py --check   # exit 1 when docs/api.md differs (make docs runs this)

It reads the descriptor set that ``tools/protogen.py`` compiles from ``proto/`` with its comments
(``gateway/docuthinker.pb``), and takes the REST routes from the same place the gateway does
(``services.runtime.contracts.http_rules_of``), so the page says what Envoy serves: an RPC declared
``VISIBILITY_INTERNAL`` is listed without a route. ``tests/test_docs.py`` fails when the page is stale.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Iterator

from google.protobuf import descriptor_pb2

from docuthinker.api.v1 import visibility_pb2
from gateway import http_apps
from gateway.rpc_routes import DESCRIPTOR_SET
from services.runtime.config import MeshSettings
from services.runtime.contracts import HttpRule, http_rules_of

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "api.md"
F = descriptor_pb2.FieldDescriptorProto
M = descriptor_pb2.MethodOptions
# Field numbers of the descriptor messages, as SourceCodeInfo paths spell them.
_FILE_MESSAGE, _FILE_ENUM, _FILE_SERVICE = 4, 5, 6
_MESSAGE_FIELD, _MESSAGE_NESTED, _MESSAGE_ENUM = 2, 3, 4
_ENUM_VALUE, _SERVICE_METHOD = 2, 2
_SCALARS = {
    F.TYPE_DOUBLE: "double", F.TYPE_FLOAT: "float", F.TYPE_INT64: "int64", F.TYPE_UINT64: "uint64",
    F.TYPE_INT32: "int32", F.TYPE_FIXED64: "fixed64", F.TYPE_FIXED32: "fixed32", F.TYPE_BOOL: "bool",
    F.TYPE_STRING: "string", F.TYPE_BYTES: "bytes", F.TYPE_UINT32: "uint32", F.TYPE_SFIXED32: "sfixed32",
    F.TYPE_SFIXED64: "sfixed64", F.TYPE_SINT32: "sint32", F.TYPE_SINT64: "sint64",
}


def _retries(method: descriptor_pb2.MethodDescriptorProto) -> str:
    """Who repeats a failed call, as ``services.runtime.contracts`` and the gateway decide it."""
    level = method.options.idempotency_level
    if level == M.IDEMPOTENT:
        return "`IDEMPOTENT`: never retried transparently (a repeat may answer differently, e.g. NOT_FOUND)"
    if level != M.NO_SIDE_EFFECTS:
        return "never retried transparently (the default idempotency level)"
    if method.client_streaming:
        return "`NO_SIDE_EFFECTS`, but never retried: a client stream is consumed once"
    if method.server_streaming:
        return "`NO_SIDE_EFFECTS`: retried on UNAVAILABLE by the mesh channels; Envoy does not retry streams"
    return "`NO_SIDE_EFFECTS`: retried on UNAVAILABLE by the mesh channels and by Envoy"


class Comments:
    """The comments of one file, by SourceCodeInfo path (lint directives dropped)."""

    def __init__(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self._by_path: dict[tuple[int, ...], str] = {}
        for location in file.source_code_info.location:
            text = location.leading_comments or location.trailing_comments
            lines = [line.strip() for line in text.splitlines() if not line.strip().startswith("buf:lint:")]
            if any(lines):
                self._by_path[tuple(location.path)] = "\n".join(lines).strip()

    def block(self, *path: int) -> str:
        """A comment as paragraphs (blank lines kept)."""
        return self._by_path.get(path, "")

    def cell(self, *path: int) -> str:
        """A comment on one line, for a table cell."""
        return " ".join(self.block(*path).split()).replace("|", "\\|")


def _anchor(full_name: str) -> str:
    """A stable id for a message or enum: its full name without the leading dot, dots as dashes."""
    return full_name.lstrip(".").replace(".", "-").lower()


class Reference:
    def __init__(self, fds: descriptor_pb2.FileDescriptorSet) -> None:
        self.files = [f for f in fds.file if f.package.startswith("docuthinker.")]
        self.local: set[str] = set()
        for file in self.files:
            for name, _ in self._types(file):
                self.local.add(name)
        self.rules: dict[str, list[HttpRule]] = {}
        for rule in http_rules_of(fds.file):
            self.rules.setdefault(rule.method.grpc_path, []).append(rule)

    def _types(self, file: descriptor_pb2.FileDescriptorProto) -> Iterator[tuple[str, tuple[int, ...]]]:
        """Every message and enum of ``file``: full name (leading dot) and SourceCodeInfo path."""
        prefix = f".{file.package}"

        def walk(message: descriptor_pb2.DescriptorProto, name: str, path: tuple[int, ...]):
            yield name, path
            for i, nested in enumerate(message.nested_type):
                if not nested.options.map_entry:
                    yield from walk(nested, f"{name}.{nested.name}", (*path, _MESSAGE_NESTED, i))
            for i, enum in enumerate(message.enum_type):
                yield f"{name}.{enum.name}", (*path, _MESSAGE_ENUM, i)

        for i, message in enumerate(file.message_type):
            yield from walk(message, f"{prefix}.{message.name}", (_FILE_MESSAGE, i))
        for i, enum in enumerate(file.enum_type):
            yield f"{prefix}.{enum.name}", (_FILE_ENUM, i)

    def type_link(self, type_name: str) -> str:
        short = type_name.lstrip(".")
        if type_name in self.local:
            return f"[`{short.rsplit('.', 1)[-1]}`](#{_anchor(type_name)})"
        return f"`{short}`"

    def field_type(self, field: descriptor_pb2.FieldDescriptorProto, message: descriptor_pb2.DescriptorProto) -> str:
        if field.type in (F.TYPE_MESSAGE, F.TYPE_ENUM):
            entry = next((n for n in message.nested_type if n.options.map_entry
                          and field.type_name.endswith(f".{n.name}")), None)
            if entry is not None:
                key, value = entry.field
                return f"map<{self.field_type(key, entry)}, {self.field_type(value, entry)}>"
            kind = self.type_link(field.type_name)
        else:
            kind = f"`{_SCALARS[field.type]}`"
        if field.label == F.LABEL_REPEATED:
            return f"repeated {kind}"
        if field.proto3_optional:
            return f"optional {kind}"
        return kind

    def render(self) -> str:
        out = [
            "# API reference",
            "",
            "Generated from the contracts in `proto/` by `python tools/api_reference.py --write` (`make docs` fails",
            "when this page is stale). Every RPC is served over gRPC on its service's port and, where a route is",
            "listed, as REST/JSON through Envoy on the gateway port; a server stream arrives over REST as",
            "Server-Sent Events. Field names in JSON are the proto names; 64-bit integers are JSON strings. How",
            "errors, tenancy, streams and retries behave is in [API conventions](conventions.md).",
            "",
        ]
        for file in self.files:
            comments = Comments(file)
            for i, service in enumerate(file.service):
                out += self._service(file, comments, i, service)
        out += [
            "## Routes that are not RPCs",
            "",
            "The gateway also serves, beside the transcoded RPCs:",
            "",
            *(f"- `{path}`: the [OpenAI-compatible chat API](chat-api.md) (`services/openai_api`, plain HTTP)"
              for path in http_apps.OPENAI_PATHS),
            "- `GET /` and every file of the [web app](web-app.md) under `web/`, answered by Envoy itself"
            " (`gateway/static_site.py`), without a token.",
            "",
        ]
        for file in self.files:
            types = list(self._types(file))
            if not types:
                continue
            out += [f"## Messages of `{file.name}`", ""]
            comments = Comments(file)
            for name, path in types:
                out += self._type(file, comments, name, path)
        return "\n".join(out).rstrip() + "\n"

    def _service(self, file: descriptor_pb2.FileDescriptorProto, comments: Comments, index: int,
                 service: descriptor_pb2.ServiceDescriptorProto) -> list[str]:
        full = f"{file.package}.{service.name}"
        short = file.package.split(".")[1]
        field = MeshSettings.model_fields.get(f"{short}_port")
        port = field.default if field is not None else None  # the default, whatever this shell's environment says
        where = f"gRPC port {port} (`DOCUTHINKER_{short.upper()}_PORT`), " if port else ""
        out = [f"## {full}", ""]
        if text := comments.block(_FILE_SERVICE, index):
            out += [text, ""]
        out += [f"Contract: `proto/{file.name}`; served on {where}REST through the gateway.", ""]
        out += ["| RPC | REST | request | response |", "| --- | --- | --- | --- |"]
        for method in service.method:
            routes = self._routes(full, method)
            request = ("stream " if method.client_streaming else "") + self.type_link(method.input_type)
            response = ("stream " if method.server_streaming else "") + self.type_link(method.output_type)
            out.append(f"| [{method.name}](#{_anchor(full + '.' + method.name)}) | {'<br>'.join(routes)} | "
                       f"{request} | {response} |")
        out.append("")
        for m, method in enumerate(service.method):
            out += [f"### {method.name} {{#{_anchor(full + '.' + method.name)}}}", ""]
            if text := comments.block(_FILE_SERVICE, index, _SERVICE_METHOD, m):
                out += [text, ""]
            request = ("stream " if method.client_streaming else "") + method.input_type.lstrip(".")
            response = ("stream " if method.server_streaming else "") + method.output_type.lstrip(".")
            out += [f"- gRPC: `/{full}/{method.name}` (`{request}` → `{response}`)"]
            routes = self._routes(full, method)
            out += [f"- REST: {', '.join(routes)}"]
            out += [f"- Retries: {_retries(method)}", ""]
        return out

    def _routes(self, service: str, method: descriptor_pb2.MethodDescriptorProto) -> list[str]:
        if method.options.Extensions[visibility_pb2.visibility] == visibility_pb2.VISIBILITY_INTERNAL:
            return ["internal: no gateway route (404)"]
        rules = self.rules.get(f"/{service}/{method.name}", [])
        if not rules:
            return ["gRPC only"]
        return [f"`{rule.verb.upper()} {rule.template}`" + (f" (body `{rule.body}`)" if rule.body else "")
                for rule in rules]

    def _type(self, file: descriptor_pb2.FileDescriptorProto, comments: Comments, name: str,
              path: tuple[int, ...]) -> list[str]:
        proto = self._resolve(file, path)
        label = name.removeprefix(f".{file.package}.")
        out = [f"### {label} {{#{_anchor(name)}}}", ""]
        if text := comments.block(*path):
            out += [text, ""]
        if isinstance(proto, descriptor_pb2.EnumDescriptorProto):
            out += ["| value | number | meaning |", "| --- | --- | --- |"]
            for i, value in enumerate(proto.value):
                out.append(f"| `{value.name}` | {value.number} | {comments.cell(*path, _ENUM_VALUE, i)} |")
        elif proto.field:
            oneofs = [o.name for o in proto.oneof_decl]
            out += ["| field | type | meaning |", "| --- | --- | --- |"]
            for i, field in enumerate(proto.field):
                note = comments.cell(*path, _MESSAGE_FIELD, i)
                if field.HasField("oneof_index") and not field.proto3_optional:
                    note = f"(one of `{oneofs[field.oneof_index]}`) {note}".rstrip()
                out.append(f"| `{field.name}` | {self.field_type(field, proto)} | {note} |")
        else:
            out.append("No fields.")
        out.append("")
        return out

    @staticmethod
    def _resolve(file: descriptor_pb2.FileDescriptorProto, path: tuple[int, ...]):
        node = file
        for kind, index in zip(path[::2], path[1::2]):
            collection = {
                _FILE_MESSAGE: "message_type", _FILE_ENUM: "enum_type",
            } if node is file else {_MESSAGE_NESTED: "nested_type", _MESSAGE_ENUM: "enum_type"}
            node = getattr(node, collection[kind])[index]
        return node


def render(descriptor_set: pathlib.Path = DESCRIPTOR_SET) -> str:
    return Reference(descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes())).render()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true")
    action.add_argument("--check", action="store_true")
    args = parser.parse_args()
    page = render()
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != page:
            sys.exit(f"{PAGE.relative_to(ROOT)} is stale: run `python tools/api_reference.py --write`")
        return
    if not args.write:
        sys.stdout.write(page)
        return
    PAGE.write_text(page)
    print(f"updated {PAGE}", file=sys.stderr)


if __name__ == "__main__":
    main()
