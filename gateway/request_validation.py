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
- Every JSON body is checked, whatever its framing (``content-length`` or chunked): the filter reads
  it whole, so a JSON body may be at most ``MAX_JSON_BYTES`` (1 MiB, the listener's buffer limit,
  which also bounds what Envoy holds of a streamed upload): over it, 413 ``REQUEST_TOO_LARGE``, at
  the headers when its ``content-length`` says so, else when the buffer fills. Longer texts are
  uploaded as documents and named by ``document_id``. Raw uploads (``HttpBody``, which Envoy streams
  on to rag in pieces) and JSON client streams (``:streamUpload``) are not checked.
- Sizes at the headers: a declared ``content-length`` over what the route may receive is refused
  with 413 before a byte of the body is read (raw uploads: ``max_upload_bytes``; JSON: ``MAX_JSON_BYTES``;
  anything else: the base64 form of the largest upload, a JSON client stream's).
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

from services.runtime.contracts import HTTP_BODY, http_rules_of

DESCRIPTOR_SET = pathlib.Path(__file__).resolve().parent / "docuthinker.pb"
VALIDATE_PATH = "/_gateway/validate-request"
RPC_HEADER = "x-docuthinker-rpc"
MAX_JSON_BYTES = 1024 * 1024
"""Largest JSON request body; also the listener's per-connection buffer limit (so a larger chunked one fills the
buffer and is refused with 413), which bounds what Envoy holds of each streamed upload too."""
LUA_FILTER = "envoy.filters.http.lua"
_STRICT_ERRORS = ("has no field named", "Invalid enum value", "enum value")


@dataclass(frozen=True)
class BodyRoute:
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


def _body_routes(descriptor_set: pathlib.Path, raw: bool) -> list[BodyRoute]:
    fds = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes())
    messages = {f".{f.package}.{m.name}": m for f in fds.file for m in f.message_type}
    routes = []
    for rule in http_rules_of(fds.file):
        if not rule.body or rule.verb == "get":
            continue
        method = rule.method
        is_raw = False
        if rule.body != "*":
            field = next(f for f in messages[method.input_type].field if f.name == rule.body)
            is_raw = field.type_name == HTTP_BODY
            if not is_raw and (field.type_name == "" or field.type != field.TYPE_MESSAGE):
                continue
        if is_raw == raw:
            routes.append(BodyRoute(rule.verb.upper(), rule.template, method.grpc_path,
                                    method.input_type.lstrip("."), rule.body))
    return routes


def json_routes(descriptor_set: pathlib.Path = DESCRIPTOR_SET) -> list[BodyRoute]:
    """REST routes whose body is a JSON message (not raw bytes, not a client stream), in descriptor order."""
    return _body_routes(descriptor_set, raw=False)


def raw_routes(descriptor_set: pathlib.Path = DESCRIPTOR_SET) -> list[BodyRoute]:
    """REST routes whose body is raw bytes (a ``google.api.HttpBody`` field: uploads, recordings)."""
    return _body_routes(descriptor_set, raw=True)


def _lua_table(routes: list[BodyRoute]) -> str:
    return ",\n".join(f'  {{"{r.http_method}", "{r.lua_pattern}", "{r.rpc}"}}' for r in routes)


def base64_limit(raw_bytes: int) -> int:
    """The largest body that carries ``raw_bytes`` as base64 JSON (a ``:streamUpload`` client stream)."""
    return (raw_bytes + 2) // 3 * 4 + 1024 * 1024


def lua_source(json: list[BodyRoute], raw: list[BodyRoute], cluster: str, max_upload_bytes: int) -> str:
    """The Lua filter: refuse a declared body larger than its route takes; for a JSON route, read the body
    (chunked or not), send it to the validator and answer its 400 as the gateway's own. On the way back, a REST
    answer loses the gRPC headers the transcoder leaves on it (gRPC callers keep theirs).

    The validator's HTTP app serves only the mesh: the mesh credential is added to the ``httpCall`` by the
    cluster's credential injector (``gateway/mesh_credentials.py``), so this source holds no secret."""
    return f"""
local json_routes = {{
{_lua_table(json)}
}}
local raw_routes = {{
{_lua_table(raw)}
}}

local function route_of(routes, method, path)
  for _, route in ipairs(routes) do
    if route[1] == method and string.match(path, route[2]) then
      return route[3]
    end
  end
  return nil
end

local function too_large(handle, what, length, limit)
  handle:respond({{[":status"] = "413", ["content-type"] = "text/plain"}},
    string.format("%s of %d bytes is larger than the %d-byte limit", what, length, limit))
end

function envoy_on_request(handle)
  local headers = handle:headers()
  local method = headers:get(":method")
  local path = string.match(headers:get(":path") or "", "^[^?]*")
  local length = tonumber(headers:get("content-length") or "")
  local rpc = route_of(json_routes, method, path)
  if rpc == nil then
    local limit = {base64_limit(max_upload_bytes)}
    if route_of(raw_routes, method, path) ~= nil then limit = {max_upload_bytes} end
    if length ~= nil and length > limit then too_large(handle, "the request body", length, limit) end
    return
  end
  if length ~= nil and length > {MAX_JSON_BYTES} then
    too_large(handle, "the JSON request body", length, {MAX_JSON_BYTES})
    return
  end
  if length == 0 then return end
  -- The whole body, however it is framed; past the buffer limit ({MAX_JSON_BYTES} bytes) Envoy answers 413.
  local body = handle:body()
  if body == nil then return end
  local reply_headers, reply = handle:httpCall("{cluster}", {{
    [":method"] = "POST", [":path"] = "{VALIDATE_PATH}", [":authority"] = "gateway",
    ["content-type"] = "application/json", ["{RPC_HEADER}"] = rpc,
  }}, body:getBytes(0, body:length()), 2000)
  if reply_headers ~= nil and reply_headers[":status"] == "400" then
    handle:respond({{[":status"] = "400", ["content-type"] = "text/plain"}}, reply)
  end
end

function envoy_on_response(handle)
  local headers = handle:headers()
  if string.sub(headers:get("content-type") or "", 1, 16) ~= "application/grpc" then
    headers:remove("grpc-status")
    headers:remove("grpc-message")
    headers:remove("grpc-accept-encoding")
  end
end
"""


def lua_filter(cluster: str, max_upload_bytes: int, descriptor_set: pathlib.Path = DESCRIPTOR_SET) -> dict:
    source = lua_source(json_routes(descriptor_set), raw_routes(descriptor_set), cluster, max_upload_bytes)
    return {
        "name": LUA_FILTER,
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua",
            "default_source_code": {"inline_string": source},
        },
    }


class BodyValidator:
    """Strict protobuf-JSON parsing of a JSON route's body, by the RPC it is for."""

    def __init__(self, descriptor_set: pathlib.Path = DESCRIPTOR_SET) -> None:
        self._descriptor_set = descriptor_set

    @cached_property
    def _routes(self) -> dict[str, BodyRoute]:
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
