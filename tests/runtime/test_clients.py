"""The client side of the runtime: one ``remote_error``, the binding's channel pool, the typed clients.

Each typed client talks to a small fake servicer on a real port (the transport is real; only
the service behind it is a double).
"""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from docuthinker.graph.v1 import graph_service_pb2 as graph_pb
from docuthinker.graph.v1 import graph_service_pb2_grpc as graph_grpc
from docuthinker.nlp.v1 import nlp_service_pb2 as nlp_pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as nlp_grpc
from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as orch_pb
from docuthinker.orchestrator.v1 import orchestrator_service_pb2_grpc as orch_grpc
from docuthinker.rag.v1 import answers_pb2, documents_pb2
from docuthinker.rag.v1 import rag_service_pb2 as rag_pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as rag_grpc
from services.clients.graph import GraphClient
from services.clients.nlp import Entity, LlmUsage, NlpClient, Topic
from services.clients.orchestrator import OrchestratorClient
from services.clients.rag import RagClient
from services.runtime import ChannelPool, MeshSettings, ServiceBinding, create_server, request_context
from services.runtime.errors import (
    Aborted,
    FieldViolation,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    RemoteError,
    Unauthenticated,
    Unavailable,
    status_error,
)


def _packed(message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


RICH_STATUS = status_pb2.Status(
    code=code_pb2.INVALID_ARGUMENT,
    message="labels: unknown label 'X'",
    details=[
        _packed(error_details_pb2.ErrorInfo(reason="BAD_LABELS", domain="nlp.example", metadata={"label": "X"})),
        _packed(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field="labels", description="unknown label 'X'")])),
        _packed(error_details_pb2.Help(links=[error_details_pb2.Help.Link(description="labels", url="https://x")])),
    ],
)


class FakeNlp(nlp_grpc.NlpServiceServicer):
    """Answers from fixed data, records the tenant it was called for, fails on request."""

    def __init__(self) -> None:
        self.tenants: list[str] = []

    async def ExtractTopics(self, request, context):
        self.tenants.append(dict(context.invocation_metadata()).get("x-tenant-id", ""))
        return nlp_pb.ExtractTopicsResponse(topics=[nlp_pb.Topic(name="radium", weight=0.9)][: request.max_topics or 9])

    async def ExtractEntities(self, request, context):
        if list(request.labels) == ["X"]:
            await context.abort_with_status(rpc_status.to_status(RICH_STATUS))
        return nlp_pb.ExtractEntitiesResponse(entities=[nlp_pb.Entity(text="Marie Curie", label="PERSON", count=2)])

    async def Summarize(self, request, context):
        return nlp_pb.SummarizeResponse(
            summary="Curie found radium.", bullets=["found radium"] if request.style == nlp_pb.SUMMARY_STYLE_BULLETS
            else [], sentences=[nlp_pb.SummarySentence(text="Curie found radium.")],
            engine=nlp_pb.Engine(provider="local", model="extractive"),
            llm_usage=[nlp_pb.LlmUsage(provider="openai", model="gpt", input_tokens=10, output_tokens=2,
                                       cost_usd=0.5)])

    async def AnalyzeSentiment(self, request, context):
        return nlp_pb.AnalyzeSentimentResponse(
            overall=nlp_pb.Sentiment(label=nlp_pb.SENTIMENT_LABEL_POSITIVE, score=0.8, confidence=0.9))

    async def TranslateText(self, request, context):
        raise Unavailable("no translation engine", reason="TRANSLATION_DISABLED", metadata={"setting": "S"})


class FakeRag(rag_grpc.RagServiceServicer):
    async def GetDocumentText(self, request, context):
        if request.document_id != "doc-1":
            raise NotFound(f"document {request.document_id!r} not found", reason="DOCUMENT_NOT_FOUND",
                           metadata={"document_id": request.document_id})
        return rag_pb.GetDocumentTextResponse(
            document=documents_pb2.Document(document_id="doc-1", filename="curie.txt", title="Curie"),
            sections=[rag_pb.GetDocumentTextResponse.Section(text="Page one."),
                      rag_pb.GetDocumentTextResponse.Section(text="Page two.")])

    async def Query(self, request, context):
        return rag_pb.QueryResponse(answer=answers_pb2.Answer(
            question=request.question, answer="In 1898.", engine=answers_pb2.Engine(provider="anthropic", model="c"),
            usage=answers_pb2.Usage(input_tokens=100, output_tokens=5, cost_usd=0.01)))

    async def Search(self, request, context):
        return rag_pb.SearchResponse(results=[answers_pb2.ScoredChunk(chunk_id="c1", text="radium", score=0.5)])


class FakeGraph(graph_grpc.GraphServiceServicer):
    async def QueryGraph(self, request, context):
        row = graph_pb.QueryGraphResponse().rows.add()
        row.update({"name": "Curie", "given": dict(request.params)})
        return graph_pb.QueryGraphResponse(columns=["name", "given"], rows=[row], truncated=True)


class FakeOrchestrator(orch_grpc.OrchestratorServiceServicer):
    async def Process(self, request, context):
        yield orch_pb.ProcessResponse(classification=orch_pb.Classification(intent=request.intent))
        if request.intent == "chat.general":
            result = orch_pb.SubtaskResult(task_id="chat", state=orch_pb.TASK_STATE_SUCCEEDED)
            result.data.update({"response": f"echo: {request.message}"})
        else:
            result = orch_pb.SubtaskResult(task_id="chat", state=orch_pb.TASK_STATE_FAILED, error=RICH_STATUS)
        yield orch_pb.ProcessResponse(subtask=result)


def _binding(name: str, register, channels: ChannelPool | None = None) -> ServiceBinding:
    return ServiceBinding(name=name, full_names=[f"docuthinker.{name}.v1.Fake"], register=register,
                          channels=channels)


@pytest.fixture
async def peers():
    """The four fakes on free ports, and a pool pointed at them."""
    nlp = FakeNlp()
    base = MeshSettings(downstream_timeout_s=10)
    registrations = {
        "nlp": lambda server: nlp_grpc.add_NlpServiceServicer_to_server(nlp, server),
        "rag": lambda server: rag_grpc.add_RagServiceServicer_to_server(FakeRag(), server),
        "graph": lambda server: graph_grpc.add_GraphServiceServicer_to_server(FakeGraph(), server),
        "orchestrator": lambda server: orch_grpc.add_OrchestratorServiceServicer_to_server(
            FakeOrchestrator(), server),
    }
    running = {name: await create_server(_binding(name, register), base, port=0)
               for name, register in registrations.items()}
    settings = MeshSettings(downstream_timeout_s=10, **{f"{name}_port": r.port for name, r in running.items()})
    pool = ChannelPool(settings)
    yield pool, nlp, settings
    await pool.close()
    for server in running.values():
        await server.stop(0)


async def test_remote_error_keeps_the_whole_status(peers):
    pool, _, _ = peers
    with pytest.raises(InvalidArgument) as caught:
        await NlpClient(pool).entities("Marie Curie", ["X"])
    error = caught.value
    assert isinstance(error, RemoteError) and error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.reason, dict(error.metadata)) == ("BAD_LABELS", {"label": "X"})
    assert list(error.violations) == [FieldViolation("labels", "unknown label 'X'")]
    assert error.message == "nlp.ExtractEntities: labels: unknown label 'X'"
    # Re-raised by a servicer, every detail (the Help link too, and the remote domain) goes on unchanged.
    forwarded = error.to_status_proto()
    assert list(forwarded.details) == list(RICH_STATUS.details) and forwarded.code == RICH_STATUS.code
    info = error_details_pb2.ErrorInfo()
    forwarded.details[0].Unpack(info)
    assert info.domain == "nlp.example"


async def test_a_servers_domain_error_arrives_as_the_same_kind(peers):
    pool, _, _ = peers
    with pytest.raises(Unavailable) as caught:
        await NlpClient(pool).translate("Bonjour", "en")
    assert (caught.value.reason, dict(caught.value.metadata)) == ("TRANSLATION_DISABLED", {"setting": "S"})
    with pytest.raises(NotFound) as missing:
        await RagClient(pool).document_text("doc-2")
    assert missing.value.reason == "DOCUMENT_NOT_FOUND" and missing.value.metadata["document_id"] == "doc-2"


@pytest.mark.parametrize("kind", [Aborted, Unauthenticated, PermissionDenied, InvalidArgument, Unavailable])
def test_a_peers_status_is_an_instance_of_its_codes_kind(kind):
    status = status_pb2.Status(code=kind("x").code.value[0], message="refused")
    error = status_error(status, "graph")
    assert isinstance(error, kind) and isinstance(error, RemoteError)
    assert (error.code, error.reason, error.message) == (kind("x").code, kind("x").code.name, "graph: refused")


async def test_an_unreachable_peer_is_unavailable():
    pool = ChannelPool(MeshSettings(graph_port=1, downstream_timeout_s=2))  # nobody listens on port 1
    try:
        with pytest.raises(Unavailable) as caught:
            await GraphClient(pool).query("RETURN 1")
        assert isinstance(caught.value, RemoteError) and caught.value.message.startswith("graph.QueryGraph: ")
        with pytest.raises(Unavailable):
            await pool.serving_status("graph", 1.0)
    finally:
        await pool.close()


async def test_the_pool_reuses_a_channel_and_the_server_closes_it_on_stop(peers):
    _, _, settings = peers
    pool = ChannelPool(settings)
    running = await create_server(_binding("probe", lambda server: None, channels=pool), MeshSettings(), port=0)
    channel = pool.channel("nlp")
    assert await NlpClient(pool).topics("radium") == [Topic("radium", 0.9)]
    assert pool.channel("nlp") is channel and pool.channel("nlp", retries=False) is not channel
    assert pool.open == 2
    await running.stop(0)
    assert pool.open == 0
    with pytest.raises(Exception, match="(?i)closed"):
        await nlp_grpc.NlpServiceStub(channel).ExtractTopics(nlp_pb.ExtractTopicsRequest(text="x"))


async def test_nlp_client_typed_calls_and_analysis(peers):
    pool, fake, _ = peers
    nlp = NlpClient(pool)
    token = request_context.bind(request_context.RequestContext("req-1", "acme"))
    try:
        assert await nlp.topics("Curie found radium", 1) == [Topic("radium", 0.9)]
    finally:
        request_context.unbind(token)
    assert fake.tenants == ["acme"]
    assert await nlp.entities("Marie Curie") == [Entity("Marie Curie", "PERSON", 2)]
    summary = await nlp.summarize("Curie found radium.", style="bullets")
    assert (summary.text, summary.bullets, summary.engine.model) == ("Curie found radium.", ("found radium",),
                                                                     "extractive")
    assert (await nlp.sentiment("good")).label == "positive"
    analysis = await nlp.analysis("summarize", {"text": "Curie found radium."}, style="narrative")
    assert analysis.data["summary"] == "Curie found radium." and "bullets" not in analysis.data
    assert analysis.usage == (LlmUsage("openai", "gpt", 10, 2, 0, 0, 0.5),)


async def test_rag_client(peers):
    pool, _, _ = peers
    rag = RagClient(pool)
    document = await rag.document_text("doc-1")
    assert (document.filename, document.title, document.sections) == ("curie.txt", "Curie", ("Page one.", "Page two."))
    answered = await rag.query("When?")
    assert answered.data["answer"] == "In 1898."
    assert (answered.usage.provider, answered.usage.input_tokens, answered.usage.cost_usd) == ("anthropic", 100, 0.01)
    assert [r["chunk_id"] for r in (await rag.search("radium"))["results"]] == ["c1"]


async def test_graph_client_query(peers):
    pool, _, _ = peers
    result = await GraphClient(pool).query("MATCH (n) RETURN n.name AS name", {"id": "d1"})
    assert result.columns == ("name", "given") and result.truncated
    assert result.rows == ({"name": "Curie", "given": {"id": "d1"}},)


async def test_orchestrator_client_task(peers):
    pool, _, _ = peers
    orchestrator = OrchestratorClient(pool)
    assert await orchestrator.task("chat.general", "chat", message="hi") == {"response": "echo: hi"}
    with pytest.raises(InvalidArgument) as failed:
        await orchestrator.task("chat.document", "chat", message="hi")
    assert failed.value.reason == "BAD_LABELS" and list(failed.value.to_status_proto().details) == list(
        RICH_STATUS.details)
