"""The typed async client of the orchestrator, for tools (the MCP server) and other callers.

``task`` runs one intent through ``Process`` and returns the named subtask's data; a failed
subtask (or a failed stream) raises ``errors.status_error`` of its ``google.rpc.Status``,
details kept, exactly as a failed call would. The read-only views (health, costs) and ``execute_tool``
return JSON (proto field names). Failed calls raise ``errors.remote_error``'s domain error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from google.protobuf import json_format

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb
from docuthinker.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from services.runtime.clients import ServiceClient
from services.runtime.errors import Internal, status_error


class OrchestratorApi(Protocol):
    async def task(self, intent: str, task_id: str, *, message: str = "", text: str = "", audio: bytes = b"",
                   document_ids: Sequence[str] = (), options: Mapping[str, Any] | None = None,
                   timeout: float | None = None, document_id: str = "") -> dict[str, Any]: ...

    async def health(self) -> dict[str, Any]: ...

    async def costs(self, period: str = "today") -> dict[str, Any]: ...

    async def execute_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]: ...


class OrchestratorClient(ServiceClient):
    SERVICE = "orchestrator"
    STUB = pb_grpc.OrchestratorServiceStub

    async def task(self, intent: str, task_id: str, *, message: str = "", text: str = "", audio: bytes = b"",
                   document_ids: Sequence[str] = (), options: Mapping[str, Any] | None = None,
                   timeout: float | None = None, document_id: str = "") -> dict[str, Any]:
        """The data of subtask ``task_id`` of ``intent``'s plan."""
        request = pb.ProcessRequest(intent=intent, message=message, text=text, audio=audio,
                                    document_ids=document_ids, document_id=document_id)
        if options:
            request.options.update(dict(options))
        where = f"{self.SERVICE}.Process"
        async for event in self._stream("Process", request, timeout=timeout):
            kind = event.WhichOneof("event")
            if kind == "subtask" and event.subtask.task_id == task_id:
                if event.subtask.state != pb.TASK_STATE_SUCCEEDED:
                    raise status_error(event.subtask.error, f"{where} ({task_id})")
                return json_format.MessageToDict(event.subtask.data, preserving_proto_field_name=True)
            if kind == "error":
                raise status_error(event.error, where)
        raise Internal(f"{where}: {intent} produced no {task_id!r} result", reason="INCOMPLETE_STREAM")

    async def health(self) -> dict[str, Any]:
        return _json(await self._unary("GetHealth", pb.GetHealthRequest()))

    async def costs(self, period: str = "today") -> dict[str, Any]:
        return _json(await self._unary("GetCosts", pb.GetCostsRequest(period=period)))

    async def execute_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        request = pb.ExecuteToolRequest(name=name)
        request.input.update(dict(arguments))
        return _json(await self._unary("ExecuteTool", request))


def _json(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)
