"""Strict JSON bodies at the gateway: unknown fields and unknown enum names are refused with a 400.

Envoy's transcoder follows the proto3 JSON mapping's lenient side: a field the request message does
not define is dropped without a word (``{"query": "x", "topk": 3}`` searches with the default
``top_k``), and it has no option to refuse one (``request_validation_options`` covers unknown
methods and query parameters only, both on). So a Lua filter ahead of the transcoder matches the
REST routes that carry a JSON body (generated here from the descriptor set's ``google.api.http``
rules) and asks this validator about the body; the validator parses it with protobuf's own JSON
parser in strict mode (``json_format.Parse(ignore_unknown_fields=False)``), the same mapping the
transcoder applies. A refusal is a 400 that the gateway's local-reply mapper renders as
``google.rpc.Status`` (reason ``BAD_REQUEST``, the parser's first line as the message).

Scope, on purpose:
- Only unknown fields and unknown enum names are refused here; any other JSON problem is left to
  the transcoder (its own 400), so the two can never disagree about a valid request. Enum *numbers*
  no enum defines are refused by every service (``services/runtime/request_validation.py``).
- Bodies over ``MAX_CHECKED_BYTES`` (by ``content-length``) or without a length are not checked:
  buffering them in Lua would cap JSON bodies at Envoy's 1 MiB buffer. Raw uploads (``HttpBody``)
  and client streams are never checked.
- The validator runs in the plain-HTTP apps process (``services/openai_api``) at ``VALIDATE_PATH``,
  which no public route reaches. If it cannot be reached the request goes on unchecked (fail open:
  a missing strictness check must not take the API down).
"""

from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass
from functools import cached_property

from aiohttp import web
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from services.runtime.contracts import http_rules_of
from services.runtime.mesh_auth import CREDENTIAL_HEADER

DESCRIPTOR_SET = pathlib.Path(__file__).resolve().parent / "docuthinker.pb"
VALIDATE_PATH = "/_gateway/validate-request"
RPC_HEADER = "x-docuthinker-rpc"
MAX_CHECKED_BYTES = 512 * 1024
LUA_FILTER = "envoy.filters.http.lua"
_HTTP_BODY = "google.api.HttpBody"
_STRICT_ERRORS = ("has no field named", "Invalid enum value", "enum value")


@dataclass(frozen=True)
class JsonRoute:
    http_method: str
    template: str
    rpc: str  # /package.Service/Method
    input_type: str
    body: str  # "*" or a top-level field name

    @property
    def lua_pattern(self) -> str:
        """The template as an anchored Lua pattern: ``{x}`` one segment, ``{x=**}`` any rest, literals escaped."""
        out, pos = [], 0
        for match in re.finditer(r"\{([^}=]+)(?:=([^}]*))?\}", self.template):
            out.append(_lua_literal(self.template[pos:match.start()]))
            sub = match.group(2) or "*"
            out.append("/".join(".+" if s == "**" else "[^/:]+" if s == "*" else _lua_literal(s)
                                for s in sub.split("/")))
            pos = match.end()
        out.append(_lua_literal(self.template[pos:]))
        return "^" + "".join(out) + "$"


def _lua_literal(text: str) -> str:
    return re.sub(r"([\^$()%.\[\]*+\-?])", r"%\1", text)


def json_routes(descriptor_set: pathlib.Path = DESCRIPTOR_SET) -> list[JsonRoute]:
    """REST routes whose body is a JSON message (not raw bytes, not a client stream), in descriptor order."""
    fds = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes())
    messages = {f".{f.package}.{m.name}": m for f in fds.file for m in f.message_type}
    routes = []
    for rule in http_rules_of(fds.file):
        if not rule.body or rule.verb == "get":
            continue
        method = rule.method
        if rule.body != "*":
            field = next(f for f in messages[method.input_type].field if f.name == rule.body)
            if field.type_name in (f".{_HTTP_BODY}", "") or field.type != field.TYPE_MESSAGE:
                continue
        routes.append(JsonRoute(rule.verb.upper(), rule.template, method.grpc_path, method.input_type.lstrip("."),
                                rule.body))
    return routes


def lua_source(routes: list[JsonRoute], cluster: str, credential: str | None = None) -> str:
    """The Lua filter: match a JSON route, send its body to the validator, answer its 400 as the gateway's own.

    The validator's HTTP app serves only the mesh, and Envoy's own ``httpCall`` gets none of the
    route's added headers, so the call carries the mesh credential itself (else it would be refused
    and the check, which fails open, would silently pass everything)."""
    proof = f', ["{CREDENTIAL_HEADER}"] = "{credential}"' if credential else ""
    table = ",\n".join(f'  {{"{r.http_method}", "{r.lua_pattern}", "{r.rpc}"}}' for r in routes)
    return f"""
local routes = {{
{table}
}}

function envoy_on_request(handle)
  local headers = handle:headers()
  local method = headers:get(":method")
  local path = string.match(headers:get(":path") or "", "^[^?]*")
  local rpc = nil
  for _, route in ipairs(routes) do
    if route[1] == method and string.match(path, route[2]) then
      rpc = route[3]
      break
    end
  end
  if rpc == nil then return end
  local length = tonumber(headers:get("content-length") or "")
  if length == nil or length == 0 or length > {MAX_CHECKED_BYTES} then return end
  local body = handle:body()
  if body == nil then return end
  local reply_headers, reply = handle:httpCall("{cluster}", {{
    [":method"] = "POST", [":path"] = "{VALIDATE_PATH}", [":authority"] = "gateway",
    ["content-type"] = "application/json", ["{RPC_HEADER}"] = rpc{proof},
  }}, body:getBytes(0, body:length()), 2000)
  if reply_headers ~= nil and reply_headers[":status"] == "400" then
    handle:respond({{[":status"] = "400", ["content-type"] = "text/plain"}}, reply)
  end
end
"""


def lua_filter(cluster: str, descriptor_set: pathlib.Path = DESCRIPTOR_SET, credential: str | None = None) -> dict:
    return {
        "name": LUA_FILTER,
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua",
            "default_source_code": {"inline_string": lua_source(json_routes(descriptor_set), cluster, credential)},
        },
    }


class BodyValidator:
    """Strict protobuf-JSON parsing of a JSON route's body, by the RPC it is for."""

    def __init__(self, descriptor_set: pathlib.Path = DESCRIPTOR_SET) -> None:
        self._descriptor_set = descriptor_set

    @cached_property
    def _routes(self) -> dict[str, JsonRoute]:
        return {r.rpc: r for r in json_routes(self._descriptor_set)}

    @cached_property
    def _pool(self) -> descriptor_pool.DescriptorPool:
        pool = descriptor_pool.DescriptorPool()
        for file in descriptor_pb2.FileDescriptorSet.FromString(self._descriptor_set.read_bytes()).file:
            pool.Add(file)
        return pool

    def problem(self, rpc: str, body: bytes) -> str | None:
        """Why the body is refused (an unknown field or enum name), or None."""
        route = self._routes.get(rpc)
        if route is None:
            return None
        message_type = self._pool.FindMessageTypeByName(route.input_type)
        if route.body != "*":
            message_type = message_type.fields_by_name[route.body].message_type
        try:
            json_format.Parse(body, message_factory.GetMessageClass(message_type)(), ignore_unknown_fields=False)
        except json_format.ParseError as exc:
            first = str(exc).splitlines()[0].strip()
            return first if any(marker in first for marker in _STRICT_ERRORS) else None
        except (ValueError, RecursionError):  # not JSON at all: the transcoder's 400 says so
            return None
        return None

    async def handle(self, request: web.Request) -> web.Response:
        problem = self.problem(request.headers.get(RPC_HEADER, ""), await request.read())
        if problem is None:
            return web.Response(status=204)
        return web.Response(status=400, text=problem, content_type="text/plain")


def add_route(app: web.Application, validator: BodyValidator | None = None) -> None:
    """Serves the validator on an HTTP app that Envoy can reach (``VALIDATE_PATH``; no public route maps it)."""
    app.router.add_post(VALIDATE_PATH, (validator or BodyValidator()).handle)
