"""gRPC transport of sources (a mixin of ``RagServicer``): protobuf <-> ``SourceService`` calls, nothing more."""

from __future__ import annotations

from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag.sources import messages
from services.rag.sources.service import SourceService
from services.runtime.request_context import current_tenant


class SourceRpcs:
    sources: SourceService

    async def CreateSource(self, request: pb.CreateSourceRequest, context) -> pb.CreateSourceResponse:
        view = await self.sources.create(current_tenant(), messages.draft_from_pb(request.source))
        return pb.CreateSourceResponse(source=messages.source_pb(view))

    async def ListSources(self, request: pb.ListSourcesRequest, context) -> pb.ListSourcesResponse:
        views, token = await self.sources.page(current_tenant(), request.page_size, request.page_token)
        return pb.ListSourcesResponse(sources=[messages.source_pb(v) for v in views], next_page_token=token)

    async def GetSource(self, request: pb.GetSourceRequest, context) -> pb.GetSourceResponse:
        return pb.GetSourceResponse(source=messages.source_pb(await self.sources.get(current_tenant(),
                                                                                       request.source_id)))

    async def UpdateSource(self, request: pb.UpdateSourceRequest, context) -> pb.UpdateSourceResponse:
        view = await self.sources.update(current_tenant(), request.source_id, messages.draft_from_pb(request.source),
                                         list(request.update_mask.paths))
        return pb.UpdateSourceResponse(source=messages.source_pb(view))

    async def DeleteSource(self, request: pb.DeleteSourceRequest, context) -> pb.DeleteSourceResponse:
        deleted = await self.sources.delete(current_tenant(), request.source_id, request.keep_documents)
        return pb.DeleteSourceResponse(source_id=request.source_id, documents_deleted=deleted)

    async def SyncSource(self, request: pb.SyncSourceRequest, context) -> pb.SyncSourceResponse:
        return pb.SyncSourceResponse(source=messages.source_pb(await self.sources.sync(current_tenant(),
                                                                                         request.source_id)))
