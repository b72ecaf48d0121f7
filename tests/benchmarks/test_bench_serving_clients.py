"""The serving benchmark's in-process and gRPC paths return the same rankings from the same stores.

A corpus is written with the benchmark's own writer; the real rag service (real MiniLM, stores
opened from that directory, as a restarted service would) serves it in process on a free
port; the in-process path is the domain call built the way the service builds it.
"""

from __future__ import annotations

import pytest

from bench.serving_bench import goals
from bench.serving_clients import EmptyReply, GrpcClient, inprocess
from bench.synthetic_corpus import BasePool, CorpusWriter, synthetic_chunks
from services.models.embedder import get_embedder
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.rag.answers.settings import AnswerSettings
from services.rag.answers.setup import build_answering
from services.rag.service import RagService
from services.runtime import MeshSettings, create_server

pytestmark = pytest.mark.models  # the real embedder / local model

TOPICS = ["insulin resistance in muscle", "tumour suppressor genes", "antibody response to vaccines",
          "mitochondrial DNA mutations", "neuron firing in the hippocampus", "kinase inhibitors in leukaemia"]
QUESTIONS = ["Does insulin resistance start in muscle?", "Which genes suppress tumours?",
             "How do antibodies respond to vaccines?"]


@pytest.fixture(scope="module")
async def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serving-clients")
    texts = tuple(f"This study of {t} followed {i + 20} patients. The {t} results were significant. "
                  f"Further work on {t} is planned." for i, t in enumerate(TOPICS))
    pool = BasePool(texts, get_embedder().encode(list(texts)), filler=("Zebrafish embryos glow.",))
    writer = CorpusWriter(root)
    corpus_texts, vectors = synthetic_chunks(pool, 60, seed=2, max_chars=900)
    writer.write("bench-a", corpus_texts, vectors)
    answers, _ = build_answering(writer.index, writer.metadata, get_embedder(), AnswerSettings(),
                                 Router.from_settings(ProviderSettings()))
    settings = MeshSettings(data_dir=root)
    running = await create_server(RagService(settings).binding(), settings, port=0)
    client = GrpcClient(f"127.0.0.1:{running.port}")
    yield inprocess(answers), client.factory
    await client.close()
    await running.stop(0)
    writer.close()


@pytest.mark.parametrize("operation", ["search", "query"])
async def test_inprocess_and_grpc_rank_the_same_chunks(served, operation):
    local, remote = served
    for question in QUESTIONS:
        ours = await local(operation, "bench-a")(question)
        theirs = await remote(operation, "bench-a")(question)
        assert ours == theirs and len(ours) == 6  # the default top_k


async def test_a_tenant_without_chunks_is_an_error_not_a_fast_success(served):
    local, remote = served
    with pytest.raises(EmptyReply):
        await remote("search", "bench-empty")(QUESTIONS[0])
    with pytest.raises(EmptyReply):
        await local("search", "bench-empty")(QUESTIONS[0])


def test_goals_check_overhead_at_concurrency_one_and_p95_at_the_largest_size():
    def size(p95: float, diff: float) -> dict:
        return {"search": {"overhead": {"rest_vs_inprocess": {1: {"p50_diff_ms": diff}}},
                           "ways": {"inprocess": {"by_concurrency": {1: {"p95_ms": p95}}}}}}

    result = goals({1000: size(10.0, 3.0), 100_000: size(49.0, 7.5)})
    assert result == {"search 1000: REST p50 - in-process p50 <= 5.0 ms (c=1)": True,
                      "search 100000: REST p50 - in-process p50 <= 5.0 ms (c=1)": False,
                      "search 100000: in-process p95 <= 50.0 ms (c=1)": True}
    smaller = goals({10_000: size(60.0, 1.0)})
    assert smaller["search 10000: in-process p95 <= 50.0 ms (c=1) [goal is at 100000; largest run: 10000]"] is False
