"""gRPC transport of the Settings page's model server (``services/providers/model_server.py``): maps only."""

from __future__ import annotations

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb
from services.providers.model_server import DEFAULT_CONTEXT_WINDOW, ModelServer, ModelServerFile, check, probe
from services.providers.settings import ProviderSettings
from services.runtime.errors import DomainError, FailedPrecondition, PermissionDenied
from services.runtime.request_context import caller_is_admin


def _server_pb(server: ModelServer | None) -> pb.ModelServer | None:
    if server is None:
        return None
    return pb.ModelServer(base_url=server.base_url, model=server.model, has_api_key=bool(server.api_key),
                          context_window=server.context_window)


class ModelServerRpcs:
    """Mixed into ``OrchestratorServicer``: needs ``_model_servers`` (None: no file configured) and
    ``_providers`` (the process's provider settings, to see one configured by the environment)."""

    _model_servers: ModelServerFile | None
    _providers: ProviderSettings

    def _from_environment(self) -> ModelServer | None:
        settings = self._providers
        if settings.openai_base_url or settings.openai_api_key is not None:
            return ModelServer(settings.openai_base_url or "https://api.openai.com/v1", settings.openai_model,
                               "set" if settings.openai_api_key is not None else "")
        return None

    async def GetModelServer(self, request: pb.GetModelServerRequest, context) -> pb.GetModelServerResponse:
        environment = self._from_environment()
        if environment is not None:
            return pb.GetModelServerResponse(server=_server_pb(environment), configured=True, source="environment")
        server = self._model_servers.read() if self._model_servers is not None else None
        if server is None:
            return pb.GetModelServerResponse(configured=False)
        try:
            models, problem = await probe(server), ""
        except DomainError as exc:
            models, problem = [], exc.message
        return pb.GetModelServerResponse(server=_server_pb(server), configured=True, source="settings",
                                         models=models, problem=problem)

    async def SetModelServer(self, request: pb.SetModelServerRequest, context) -> pb.SetModelServerResponse:
        if not caller_is_admin():
            raise PermissionDenied("only an admin may choose the model server", reason="ADMIN_ROLE_REQUIRED")
        if self._from_environment() is not None:
            raise FailedPrecondition("the model server is set by the environment (OPENAI_BASE_URL or OPENAI_API_KEY):"
                                     " change it there", reason="MODEL_SERVER_FROM_ENVIRONMENT")
        if self._model_servers is None:
            raise FailedPrecondition("no settings file is configured (DOCUTHINKER_MODEL_SERVER_FILE)",
                                     reason="NO_SETTINGS_FILE")
        if not request.base_url.strip():
            self._model_servers.write(None)
            return pb.SetModelServerResponse(configured=False)
        server = check(ModelServer(request.base_url, request.model, request.api_key,
                                   request.context_window or DEFAULT_CONTEXT_WINDOW))
        models = await probe(server)  # refused (nothing saved) when the server does not answer
        self._model_servers.write(server)
        return pb.SetModelServerResponse(server=_server_pb(server), configured=True, models=models)
