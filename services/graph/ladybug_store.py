"""The embedded backend: LadybugDB (PyPI ``ladybug``), one database per tenant under the data dir.

One database per tenant makes tenant isolation structural: a user's Cypher runs against a
database that holds nothing but that tenant's graph, whatever the query says. LadybugDB allows
one read-write process per database, so the graph service owns these files. Within the process:
- writes go through one connection per database, serialised by a thread lock, each batch in one
  transaction (the lock is taken in the worker thread, so a cancelled RPC cannot let a second
  write transaction start while the first still runs: LadybugDB refuses that, and a connection
  whose BEGIN failed that way was seen to crash the process);
- reads open a fresh connection each (cheap, ~0.1 ms) and see the last committed state;
- user queries run in ``BEGIN TRANSACTION READ ONLY`` with the engine's query timeout, then roll back;
  at most ``query_concurrency`` at once, each on ``query_threads`` engine threads, and interrupted
  from the event loop if the engine has not stopped one by its deadline (the caller gets
  DEADLINE_EXCEEDED on time either way; the slot is freed only once the engine has let go);
- a query that fills the buffer pool (the engine's bound on query memory) fails alone, as
  INVALID_ARGUMENT ``QUERY_TOO_LARGE``; ``range()``, which the pool does not bound, is limited
  before the query runs (``query_cost``).
Blocking engine calls run on a small thread pool, never on the event loop.
"""

from __future__ import annotations

import asyncio
import collections
import pathlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import ladybug
import psutil

from services.clients.results import DeleteResult, EntityMention, EntityView, GraphStats, RelatedDocument
from services.graph import statements as q
from services.graph.related import RANK_SLACK, assemble
from services.graph.settings import GraphSettings
from services.graph.store import DocumentFacts, QueryResult
from services.graph.tenancy import database_name
from services.graph.values import node_json, path_json, relationship_json, to_json
from services.graph.write_plans import Rows, delete_plan, run_sync, upsert_plan
from services.runtime.errors import DeadlineExceeded, FieldViolation, Internal, InvalidArgument

# How long past its deadline a user query may take to stop before the caller is answered anyway.
_INTERRUPT_GRACE_S = 0.25

T = TypeVar("T")

SCHEMA = (
    "CREATE NODE TABLE IF NOT EXISTS Document(id STRING PRIMARY KEY, tenant STRING, title STRING, file_type STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Topic(key STRING PRIMARY KEY, tenant STRING, name STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Entity(key STRING PRIMARY KEY, tenant STRING, name STRING, type STRING)",
    "CREATE REL TABLE IF NOT EXISTS COVERS(FROM Document TO Topic, weight DOUBLE)",
    "CREATE REL TABLE IF NOT EXISTS MENTIONS(FROM Document TO Entity, count INT64)",
)
_INTERNAL_KEYS = frozenset({"_ID", "_LABEL", "_SRC", "_DST"})
# Engine messages that mean the query itself is wrong (the caller's to fix), not the engine.
_USER_ERRORS = ("Parser exception", "Binder exception", "Catalog exception", "Runtime exception")


def _rows(result: Any) -> Rows:
    columns = result.get_column_names()
    rows = []
    while result.has_next():
        rows.append(dict(zip(columns, result.get_next(), strict=True)))
    result.close()
    return rows


def _graph_value(value: Any) -> dict[str, Any] | None:
    """LadybugDB returns nodes, relationships and paths as dicts with reserved keys."""
    if not isinstance(value, dict):
        return None
    if "_NODES" in value and "_RELS" in value:
        nodes = [_graph_value(n) or {} for n in value["_NODES"]]
        return path_json(nodes, [_graph_value(r) or {} for r in value["_RELS"]])
    if "_LABEL" in value and "_ID" in value:
        properties = {k: v for k, v in value.items() if k not in _INTERNAL_KEYS}
        if "_SRC" in value and "_DST" in value:
            return relationship_json(value["_LABEL"], properties, _graph_value)
        return node_json([value["_LABEL"]], properties, _graph_value)
    return None


class _TenantDatabase:
    def __init__(self, path: pathlib.Path, settings: GraphSettings) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.db = ladybug.Database(
            str(path / "graph.lbug"),
            buffer_pool_size=settings.ladybug_buffer_pool_mb * 1024 * 1024,
            max_db_size=settings.ladybug_max_db_gb * 1024**3,
        )
        self.write_lock = threading.Lock()
        self.writer = ladybug.Connection(self.db)
        self.users = 0
        for ddl in SCHEMA:
            self.writer.execute(ddl)

    def read(self, cypher: str, params: Mapping[str, Any]) -> Rows:
        connection = ladybug.Connection(self.db)
        try:
            return _rows(connection.execute(cypher, dict(params)))
        finally:
            connection.close()

    def write(self, work: Callable[[Callable[[str, dict[str, Any]], Rows]], T]) -> T:
        with self.write_lock:
            conn = self.writer
            conn.execute("BEGIN TRANSACTION")
            try:
                result = work(lambda cypher, params: _rows(conn.execute(cypher, params)))
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
            return result

    def close(self) -> None:
        self.writer.close()
        self.db.close()


def _rollback(conn: ladybug.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except RuntimeError:
        pass  # the engine already ended the failed transaction


class LadybugGraphStore:
    """GraphStore over LadybugDB; ``root`` holds one directory per tenant."""

    backend = "ladybug"

    def __init__(self, root: pathlib.Path, settings: GraphSettings) -> None:
        self._root = pathlib.Path(root)
        self._settings = settings
        self._open: collections.OrderedDict[str, _TenantDatabase] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ladybug")
        # Fewer slots than executor threads, so running user queries never hold up upserts and reads.
        self._query_slots = asyncio.Semaphore(min(settings.query_concurrency, 6))
        self._memory = _MemoryWatch(settings.query_memory_mb)

    # -- tenant databases ------------------------------------------------------------
    def _acquire(self, tenant: str) -> _TenantDatabase:
        with self._lock:
            tdb = self._open.get(tenant)
            if tdb is None:
                tdb = _TenantDatabase(self._root / database_name(tenant), self._settings)
                self._open[tenant] = tdb
            self._open.move_to_end(tenant)
            tdb.users += 1
            self._evict_idle()
            return tdb

    def _release(self, tdb: _TenantDatabase) -> None:
        with self._lock:
            tdb.users -= 1
            self._evict_idle()

    def _evict_idle(self) -> None:
        excess = len(self._open) - self._settings.ladybug_max_open
        for tenant in [t for t, d in self._open.items() if d.users == 0][: max(0, excess)]:
            self._open.pop(tenant).close()

    async def _run(self, tenant: str, work: Callable[[_TenantDatabase], T]) -> T:
        def call() -> T:
            tdb = self._acquire(tenant)
            try:
                return work(tdb)
            finally:
                self._release(tdb)

        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    # -- GraphStore ------------------------------------------------------------------
    async def upsert(self, tenant: str, documents: Sequence[DocumentFacts]) -> None:
        await self._run(
            tenant, lambda tdb: tdb.write(lambda run: run_sync(upsert_plan(tenant, documents, q.EMBEDDED), run))
        )

    async def delete_document(self, tenant: str, document_id: str) -> DeleteResult:
        return await self._run(
            tenant, lambda tdb: tdb.write(lambda run: run_sync(delete_plan(tenant, document_id), run))
        )

    async def related(self, tenant: str, document_id: str, limit: int) -> list[RelatedDocument] | None:
        def work(tdb: _TenantDatabase) -> list[RelatedDocument] | None:
            params = {"tenant": tenant, "id": document_id}
            if not tdb.read(q.COUNT_DOCUMENT, params)[0]["n"]:
                return None
            scored = tdb.read(q.RELATED_DOCUMENTS, {**params, "limit": limit + RANK_SLACK})
            shared = tdb.read(q.SHARED_ITEMS, {**params, "ids": [r["id"] for r in scored]}) if scored else []
            return assemble(scored, shared, limit)

        return await self._run(tenant, work)

    async def entity(self, tenant: str, key: str, limit: int) -> EntityView | None:
        rows = await self._run(
            tenant, lambda tdb: tdb.read(q.ENTITY_WITH_DOCUMENTS, {"tenant": tenant, "key": key, "limit": limit})
        )
        if not rows:
            return None
        mentions = tuple(EntityMention(r["id"], r["title"] or "", int(r["mentions"])) for r in rows if r["id"])
        return EntityView(rows[0]["name"], rows[0]["type"] or "", mentions)

    async def stats(self, tenant: str) -> GraphStats:
        def work(tdb: _TenantDatabase) -> GraphStats:
            return GraphStats(**{k: int(tdb.read(c, {"tenant": tenant})[0]["n"]) for k, c in q.STATS.items()})

        return await self._run(tenant, work)

    async def query(
        self, tenant: str, cypher: str, params: Mapping[str, Any], limit: int, timeout_s: float
    ) -> QueryResult:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        try:
            await asyncio.wait_for(self._query_slots.acquire(), timeout_s)
        except TimeoutError:
            raise DeadlineExceeded(
                "the graph was busy with other queries until the deadline", reason="QUERY_TIMEOUT"
            ) from None
        remaining = max(deadline - loop.time(), 0.001)
        handle = _Interruptible(self._memory)
        threads = self._settings.query_threads
        task = asyncio.ensure_future(
            self._run(tenant, lambda tdb: _user_query(tdb, cypher, dict(params), limit, remaining, handle, threads))
        )
        task.add_done_callback(self._free_slot)
        try:
            return await asyncio.wait_for(asyncio.shield(task), remaining + _INTERRUPT_GRACE_S)
        except TimeoutError:
            handle.interrupt()
            raise DeadlineExceeded("query exceeded its time limit", reason="QUERY_TIMEOUT") from None
        except asyncio.CancelledError:
            handle.interrupt()
            raise

    def _free_slot(self, task: asyncio.Future[Any]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved here, so an abandoned query's error is not reported as unhandled
        self._query_slots.release()

    async def close(self) -> None:
        self._memory.stop()
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close_all)
        self._executor.shutdown(wait=False)

    def _close_all(self) -> None:
        with self._lock:
            while self._open:
                self._open.popitem()[1].close()


class _MemoryWatch:
    """Interrupts the running user queries when the process has grown ``limit_mb`` past its resident memory
    when the store opened.

    The last line behind ``query_sizes``: that bounds each value a query builds, this the sum of what its
    rows and operators hold outside the buffer pool (sampled every 20 ms while a user query runs). Growth,
    not the absolute size: the store may share its process (tests, an embedding application) with models
    that hold far more than the graph ever should."""

    def __init__(self, limit_mb: int) -> None:
        self._process = psutil.Process()
        self.limit = limit_mb * 1024 * 1024 + self._process.memory_info().rss if limit_mb else 0
        self._running: set[_Interruptible] = set()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._stopped = False
        if self.limit:
            threading.Thread(target=self._watch, name="ladybug-memory", daemon=True).start()

    def add(self, handle: _Interruptible) -> None:
        with self._lock:
            self._running.add(handle)
            self._wake.notify()

    def discard(self, handle: _Interruptible) -> None:
        with self._lock:
            self._running.discard(handle)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._wake.notify()

    def _watch(self) -> None:
        while True:
            with self._lock:
                while not self._running and not self._stopped:
                    self._wake.wait()
                if self._stopped:
                    return
            if self._process.memory_info().rss > self.limit:
                with self._lock:
                    running = list(self._running)
                for handle in running:
                    handle.interrupt(memory=True)
            time.sleep(0.02)


class _Interruptible:
    """The connection a user query runs on, so the event loop can interrupt it at its deadline (and the
    memory watch when the process grows past its ceiling)."""

    def __init__(self, memory: _MemoryWatch | None = None) -> None:
        self._lock = threading.Lock()
        self._conn: ladybug.Connection | None = None
        self._memory = memory
        self.interrupted = False
        self.over_memory = False

    def attach(self, conn: ladybug.Connection | None) -> None:
        with self._lock:
            self._conn = conn
            if conn is not None and self.interrupted:
                raise DeadlineExceeded("query exceeded its time limit", reason="QUERY_TIMEOUT")
        if self._memory is not None:
            (self._memory.add if conn is not None else self._memory.discard)(self)

    def interrupt(self, memory: bool = False) -> None:
        with self._lock:
            self.interrupted = True
            self.over_memory = self.over_memory or memory
            if self._conn is not None:
                self._conn.interrupt()


def _user_query(
    tdb: _TenantDatabase, cypher: str, params: dict[str, Any], limit: int, timeout_s: float,
    handle: _Interruptible, threads: int,
) -> QueryResult:
    conn = ladybug.Connection(tdb.db)
    try:
        handle.attach(conn)
        conn.set_max_threads_for_exec(threads)
        conn.set_query_timeout(max(1, int(timeout_s * 1000)))
        conn.execute("BEGIN TRANSACTION READ ONLY")
        try:
            result = conn.execute(cypher, params)
            assert not isinstance(result, list)  # one statement, one result
            columns = tuple(result.get_column_names())
            rows: list[dict] = []
            while result.has_next() and len(rows) <= limit:
                rows.append({c: to_json(v, _graph_value) for c, v in zip(columns, result.get_next(), strict=True)})
            result.close()
        finally:
            _rollback(conn)
    except RuntimeError as exc:
        if handle.over_memory:
            raise InvalidArgument(
                "query refused: the graph process passed its memory ceiling while it ran", reason="QUERY_TOO_LARGE",
                metadata={"setting": "DOCUTHINKER_GRAPH_QUERY_MEMORY_MB"},
                violations=[FieldViolation("cypher", "add LIMIT, aggregate earlier or build smaller lists")],
            ) from exc
        raise _query_error(exc) from exc
    except (TypeError, ValueError) as exc:  # a parameter value the engine cannot type (e.g. [1, "a"])
        raise InvalidArgument(
            f"a parameter value is not supported: {exc}", reason="INVALID_PARAMS",
            violations=[FieldViolation("params", "lists must hold one type; maps in a list the same keys")],
        ) from exc
    finally:
        handle.attach(None)
        conn.close()
    return QueryResult(columns, tuple(rows[:limit]), truncated=len(rows) > limit)


def _query_error(exc: RuntimeError) -> Exception:
    message = str(exc)
    if message.strip().rstrip(".") == "Interrupted":
        return DeadlineExceeded("query exceeded its time limit", reason="QUERY_TIMEOUT")
    if "Buffer manager exception" in message:
        return InvalidArgument(
            "query refused: it needs more memory than one query may use", reason="QUERY_TOO_LARGE",
            violations=[FieldViolation("cypher", "add LIMIT, aggregate earlier or narrow the MATCH")],
        )
    if "read-only transaction" in message:
        return InvalidArgument(
            "query refused: it writes", reason="CYPHER_NOT_READ_ONLY",
            violations=[FieldViolation("cypher", "queries are read-only")],
        )
    if any(kind in message for kind in _USER_ERRORS):
        first_line = message.splitlines()[0]
        return InvalidArgument(
            f"query failed: {first_line}", reason="CYPHER_ERROR", violations=[FieldViolation("cypher", first_line)]
        )
    return Internal(f"graph engine error: {message.splitlines()[0] if message else type(exc).__name__}")
