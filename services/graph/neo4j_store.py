"""The production backend: a Bolt server (Neo4j; ArcadeDB in the congruence tests) via the official driver.

Tenancy (DOCUTHINKER_NEO4J_TENANCY):
- ``database`` (default): one database per tenant, created on first use (see ``neo4j_provisioning``).
  User Cypher runs in the tenant's own database, so it cannot reach another tenant's nodes, and
  ``USE`` (switching databases) is refused by the guard.
- ``shared``: one database; every node carries ``tenant`` and every statement the service runs
  filters on it. Arbitrary user Cypher cannot be confined to one tenant in a shared database
  (no views in Cypher), so QueryGraph is refused there with FAILED_PRECONDITION.
User queries run in a READ-mode transaction with a server-side timeout, always rolled back: real
Neo4j then refuses writes itself; ArcadeDB ignores the access mode, which is why the guard exists.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import neo4j
from neo4j import exceptions as neo4j_errors

from services.clients.results import DeleteResult, EntityMention, EntityView, GraphStats, RelatedDocument
from services.graph import statements as q
from services.graph.neo4j_provisioning import Provisioner, provisioner_for
from services.graph.related import RANK_SLACK, assemble
from services.graph.settings import Neo4jSettings
from services.graph.store import DocumentFacts, QueryResult
from services.graph.tenancy import database_name
from services.graph.values import node_json, path_json, relationship_json, to_json
from services.graph.write_plans import Rows, delete_plan, run_async, upsert_plan
from services.runtime.errors import (
    DeadlineExceeded,
    DomainError,
    FailedPrecondition,
    FieldViolation,
    Internal,
    InvalidArgument,
    Unavailable,
)

SCHEMA = (
    "CREATE CONSTRAINT docuthinker_document_key IF NOT EXISTS FOR (d:Document) REQUIRE (d.tenant, d.id) IS UNIQUE",
    "CREATE CONSTRAINT docuthinker_topic_key IF NOT EXISTS FOR (t:Topic) REQUIRE (t.tenant, t.key) IS UNIQUE",
    "CREATE CONSTRAINT docuthinker_entity_key IF NOT EXISTS FOR (e:Entity) REQUIRE (e.tenant, e.key) IS UNIQUE",
)
_UNREACHABLE = (
    neo4j_errors.ServiceUnavailable,
    neo4j_errors.SessionExpired,
    neo4j_errors.ConnectionPoolError,
    neo4j_errors.TransientError,
    OSError,
)


def _graph_value(value: Any) -> dict[str, Any] | None:
    if isinstance(value, neo4j.graph.Node):
        return node_json(value.labels, dict(value), _graph_value)
    if isinstance(value, neo4j.graph.Relationship):
        return relationship_json(value.type, dict(value), _graph_value)
    if isinstance(value, neo4j.graph.Path):
        nodes = [_graph_value(n) or {} for n in value.nodes]
        return path_json(nodes, [_graph_value(r) or {} for r in value.relationships])
    if isinstance(value, neo4j.spatial.Point):
        return {"srid": value.srid, "coordinates": list(value)}
    return None


def _backend_error(exc: Exception) -> DomainError:
    if isinstance(exc, DomainError):
        return exc
    if isinstance(exc, _UNREACHABLE):
        return Unavailable(f"graph backend unavailable: {exc}", reason="GRAPH_BACKEND_UNAVAILABLE")
    if isinstance(exc, neo4j_errors.AuthError):
        return FailedPrecondition("graph backend refused the credentials", reason="GRAPH_BACKEND_AUTH")
    if isinstance(exc, neo4j_errors.Neo4jError) and (exc.code or "").endswith("DatabaseNotFound"):
        return FailedPrecondition(f"graph database missing: {exc.message}", reason="GRAPH_DATABASE_NOT_PROVISIONED")
    return Internal(f"graph backend error: {type(exc).__name__}")


def _query_error(exc: Exception) -> DomainError:
    code = getattr(exc, "code", None) or ""
    message = getattr(exc, "message", None) or str(exc)
    if "TransactionTimedOut" in code or "TransactionTimeout" in code:
        return DeadlineExceeded("query exceeded its time limit", reason="QUERY_TIMEOUT")
    if "AccessMode" in code or isinstance(exc, neo4j_errors.ForbiddenOnReadOnlyDatabase):
        return InvalidArgument(
            "query refused: it writes", reason="CYPHER_NOT_READ_ONLY",
            violations=[FieldViolation("cypher", "queries are read-only")],
        )
    if isinstance(exc, neo4j_errors.ClientError) and ".Statement." in code:
        first_line = message.splitlines()[0] if message else code
        return InvalidArgument(
            f"query failed: {first_line}", reason="CYPHER_ERROR", violations=[FieldViolation("cypher", first_line)]
        )
    return _backend_error(exc)


async def _rollback(tx: neo4j.AsyncTransaction) -> None:
    try:
        await tx.rollback()
    except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError):
        pass  # a cancelled or failed transaction is already gone; never mask the original outcome


class Neo4jGraphStore:
    backend = "neo4j"

    def __init__(self, settings: Neo4jSettings, provisioner: Provisioner | None = None) -> None:
        self._settings = settings
        self._driver = neo4j.AsyncGraphDatabase.driver(
            settings.uri,
            auth=(settings.user, settings.password.get_secret_value()),
            connection_timeout=settings.connect_timeout_s,
            connection_acquisition_timeout=settings.connect_timeout_s * 2,
            max_connection_pool_size=settings.max_pool_size,
            # Managed transactions retry transient failures; an outage must surface quickly instead.
            max_transaction_retry_time=settings.connect_timeout_s,
        )
        self._provisioner = provisioner or provisioner_for(settings, self._driver)
        self._ready: set[str] = set()
        self._ready_lock = asyncio.Lock()

    # -- databases -------------------------------------------------------------------
    def _name(self, tenant: str) -> str:
        if self._settings.tenancy == "database":
            return database_name(tenant, self._settings.database_prefix)
        return self._settings.database

    async def _database(self, tenant: str) -> str:
        name = self._name(tenant)
        if name in self._ready:
            return name
        async with self._ready_lock:
            if name not in self._ready:
                try:
                    await self._create_schema(name)
                except neo4j_errors.ClientError as exc:
                    if not (exc.code or "").endswith("DatabaseNotFound"):
                        raise
                    await self._provisioner.ensure(name)  # first use of this tenant (or shared) database
                    await self._create_schema(name)
                self._ready.add(name)
        return name

    async def _create_schema(self, database: str) -> None:
        async with self._driver.session(database=database) as session:
            for ddl in SCHEMA:
                await (await session.run(ddl)).consume()

    async def _read(self, tenant: str, statements: Sequence[tuple[str, dict[str, Any]]]) -> list[Rows]:
        try:
            async with self._driver.session(database=await self._database(tenant)) as session:
                async def work(tx: neo4j.AsyncManagedTransaction) -> list[Rows]:
                    return [await (await tx.run(cypher, params)).data() for cypher, params in statements]

                return await session.execute_read(work)
        except Exception as exc:
            raise _backend_error(exc) from exc

    # -- GraphStore ------------------------------------------------------------------
    async def upsert(self, tenant: str, documents: Sequence[DocumentFacts]) -> None:
        # The plan is a generator: a retried transaction needs a fresh one, so build it inside.
        await self._write_plan(tenant, lambda: upsert_plan(tenant, documents, q.BOLT))

    async def delete_document(self, tenant: str, document_id: str) -> DeleteResult:
        return await self._write_plan(tenant, lambda: delete_plan(tenant, document_id))

    async def _write_plan(self, tenant: str, make_plan) -> Any:
        try:
            async with self._driver.session(database=await self._database(tenant)) as session:
                async def work(tx: neo4j.AsyncManagedTransaction) -> Any:
                    async def run(cypher: str, params: dict[str, Any]) -> Rows:
                        return await (await tx.run(cypher, params)).data()

                    return await run_async(make_plan(), run)

                return await session.execute_write(work)
        except Exception as exc:
            raise _backend_error(exc) from exc

    async def related(self, tenant: str, document_id: str, limit: int) -> list[RelatedDocument] | None:
        params = {"tenant": tenant, "id": document_id}
        try:
            async with self._driver.session(database=await self._database(tenant)) as session:
                async def work(tx: neo4j.AsyncManagedTransaction) -> list[RelatedDocument] | None:
                    found = await (await tx.run(q.COUNT_DOCUMENT, params)).data()
                    if not found or not found[0]["n"]:
                        return None
                    scored = await (await tx.run(q.RELATED_DOCUMENTS, {**params, "limit": limit + RANK_SLACK})).data()
                    ids = [r["id"] for r in scored]
                    shared = await (await tx.run(q.SHARED_ITEMS, {**params, "ids": ids})).data() if ids else []
                    return assemble(scored, shared, limit)

                return await session.execute_read(work)
        except Exception as exc:
            raise _backend_error(exc) from exc

    async def entity(self, tenant: str, key: str, limit: int) -> EntityView | None:
        (rows,) = await self._read(tenant, [(q.ENTITY_WITH_DOCUMENTS, {"tenant": tenant, "key": key, "limit": limit})])
        if not rows:
            return None
        mentions = tuple(EntityMention(r["id"], r["title"] or "", int(r["mentions"])) for r in rows if r["id"])
        return EntityView(rows[0]["name"], rows[0]["type"] or "", mentions)

    async def stats(self, tenant: str) -> GraphStats:
        results = await self._read(tenant, [(c, {"tenant": tenant}) for c in q.STATS.values()])
        return GraphStats(**{k: int(rows[0]["n"]) for k, rows in zip(q.STATS, results, strict=True)})

    async def query(
        self, tenant: str, cypher: str, params: Mapping[str, Any], limit: int, timeout_s: float
    ) -> QueryResult:
        if self._settings.tenancy != "database":
            raise FailedPrecondition(
                "QueryGraph needs one database per tenant (DOCUTHINKER_NEO4J_TENANCY=database): in a shared"
                " database arbitrary Cypher cannot be confined to the caller's tenant",
                reason="QUERY_NEEDS_TENANT_DATABASE",
            )
        try:
            database = await self._database(tenant)
        except Exception as exc:
            raise _backend_error(exc) from exc
        try:
            return await asyncio.wait_for(self._user_query(database, cypher, dict(params), limit, timeout_s), timeout_s)
        except TimeoutError as exc:
            raise DeadlineExceeded("query exceeded its time limit", reason="QUERY_TIMEOUT") from exc
        except DomainError:
            raise
        except Exception as exc:
            raise _query_error(exc) from exc

    async def _user_query(
        self, database: str, cypher: str, params: dict[str, Any], limit: int, timeout_s: float
    ) -> QueryResult:
        async with self._driver.session(
            database=database, default_access_mode=neo4j.READ_ACCESS, fetch_size=min(limit + 1, 1000)
        ) as session:
            tx = await session.begin_transaction(timeout=timeout_s)
            try:
                result = await tx.run(cypher, params)
                columns = tuple(result.keys())
                records = await result.fetch(limit + 1)
            finally:
                await _rollback(tx)
        rows = tuple({c: to_json(record[c], _graph_value) for c in columns} for record in records[:limit])
        return QueryResult(columns, rows, truncated=len(records) > limit)

    async def close(self) -> None:
        await self._driver.close()
