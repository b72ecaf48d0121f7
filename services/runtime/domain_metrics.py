"""Domain metrics of the mesh, in one catalogue (the Grafana dashboard and the alert rules use these names).

Counters and histograms are updated where the work happens; state that lives in a store (outbox
depth, dead letters, circuit states, budget use) is read at scrape time by ``StateGauges``, so
it is never stale and costs nothing between scrapes. Labels are bounded enumerations (status,
stage, provider, model, breaker, budget): never a tenant, document or request id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from services.runtime.metrics import LATENCY_BUCKETS

log = logging.getLogger("docuthinker.metrics")

# -- ingestion (rag) ------------------------------------------------------------------------
DOCUMENTS_INGESTED = Counter(
    "docuthinker_documents_ingested_total", "Documents whose ingestion ended, by outcome.",
    ["status", "file_type"],
)
INGEST_STAGE_SECONDS = Histogram(
    "docuthinker_ingest_stage_duration_seconds", "Duration of each ingestion stage of a document.",
    ["stage"], buckets=LATENCY_BUCKETS,
)
CHUNKS_EMBEDDED = Counter("docuthinker_chunks_embedded_total", "Chunks embedded and indexed.")
CHUNKS_REUSED = Counter(
    "docuthinker_chunks_reused_total", "Chunks of a new document version whose vector an earlier version had (copied).",
)
# -- sources kept in sync (rag) ----------------------------------------------------------------
SOURCE_SYNCS = Counter(
    "docuthinker_source_syncs_total", "Source syncs that ended, by kind and outcome (ok, partial, failed).",
    ["kind", "outcome"],
)
SOURCE_ITEMS = Counter(
    "docuthinker_source_items_total", "Items of sources handled by syncs, by kind and change "
    "(new, changed, unchanged, deleted, failed).", ["kind", "change"],
)
SOURCE_SYNC_SECONDS = Histogram(
    "docuthinker_source_sync_duration_seconds", "Duration of one sync of a source, by kind.", ["kind"],
    buckets=LATENCY_BUCKETS,
)
OCR_PAGES = Counter("docuthinker_ocr_pages_total", "Pages read by OCR.")
# -- graph sync (rag) -------------------------------------------------------------------------
GRAPH_SYNC = Counter(
    "docuthinker_graph_sync_total", "Graph outbox entries processed, by operation and outcome.",
    ["operation", "outcome"],
)
GRAPH_SYNC_LAG = Histogram(
    "docuthinker_graph_sync_lag_seconds", "From queueing a document's graph work to its completion.",
    buckets=LATENCY_BUCKETS,
)
# -- retrieval and answers (rag) ----------------------------------------------------------------
RETRIEVAL_SECONDS = Histogram(
    "docuthinker_retrieval_duration_seconds", "Hybrid retrieval latency.", buckets=LATENCY_BUCKETS,
)
ANSWER_SECONDS = Histogram(
    "docuthinker_answer_duration_seconds", "Grounded answer latency (retrieval included).", buckets=LATENCY_BUCKETS,
)
ANSWERS = Counter(
    "docuthinker_answers_total", "Answers given, by support status (abstained: the corpus did not support one).",
    ["support"],
)
# -- LLM calls (every process: the provider router) ---------------------------------------------------
LLM_CALLS = Counter(
    "docuthinker_llm_calls_total", "LLM provider calls, by provider, model and outcome.",
    ["provider", "model", "outcome"],
)
LLM_TOKENS = Counter(
    "docuthinker_llm_tokens_total", "Tokens of LLM calls, by provider, model and kind (input, output, cache_read).",
    ["provider", "model", "kind"],
)
LLM_SECONDS = Histogram(
    "docuthinker_llm_call_duration_seconds", "Latency of LLM provider calls.", ["provider"], buckets=LATENCY_BUCKETS,
)
LLM_COST = Counter(
    "docuthinker_llm_cost_usd_total", "Cost of LLM calls in US dollars (orchestrator's ledger).", ["provider", "model"],
)


class StateGauges(Collector):
    """One gauge family whose samples a callable reads from a store at scrape time."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str],
                 read: Callable[[], Iterable[tuple[Sequence[str], float]]]) -> None:
        self._name, self._doc, self._labels, self._read = name, documentation, list(labels), read

    def describe(self) -> list[GaugeMetricFamily]:
        return [GaugeMetricFamily(self._name, self._doc, labels=self._labels)]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self._name, self._doc, labels=self._labels)
        try:
            for values, value in self._read():
                family.add_metric(list(values), float(value))
        except Exception:
            log.warning("metrics probe failed", exc_info=True, extra={"fields": {"metric": self._name}})
        yield family


def register_state(name: str, documentation: str, labels: Sequence[str],
                   read: Callable[[], Iterable[tuple[Sequence[str], float]]],
                   registry: CollectorRegistry = REGISTRY) -> StateGauges:
    """Registers (or replaces, for a service built twice in one process) a scrape-time gauge."""
    collector = StateGauges(name, documentation, labels, read)
    existing = _registered.pop(name, None)
    if existing is not None:
        registry.unregister(existing)
    registry.register(collector)
    _registered[name] = collector
    return collector


_registered: dict[str, StateGauges] = {}
