"""Creating a tenant's database on a Bolt server, for ``DOCUTHINKER_NEO4J_TENANCY=database``.

Neo4j (Enterprise, Aura Business Critical) creates databases with ``CREATE DATABASE`` on the
``system`` database. ArcadeDB's Bolt endpoint has no such command; its HTTP server command
does it. With ``none`` the operator creates each tenant's database beforehand (the name is
``tenancy.database_name(tenant, prefix)``) and a missing one is reported, never invented.
"""

from __future__ import annotations

from typing import Protocol

import httpx
import neo4j

from services.graph.settings import Neo4jSettings
from services.runtime.errors import FailedPrecondition, Unavailable


class Provisioner(Protocol):
    async def ensure(self, database: str) -> None:
        """Creates ``database`` unless it exists."""
        ...


class CypherProvisioner:
    def __init__(self, driver: neo4j.AsyncDriver) -> None:
        self._driver = driver

    async def ensure(self, database: str) -> None:
        try:
            async with self._driver.session(database="system") as session:
                await (await session.run("CREATE DATABASE $name IF NOT EXISTS WAIT", name=database)).consume()
        except neo4j.exceptions.ClientError as exc:
            raise FailedPrecondition(
                f"cannot create graph database {database!r} ({exc.message}); on a server without CREATE DATABASE"
                " create tenant databases beforehand (DOCUTHINKER_NEO4J_PROVISION=none) or use tenancy=shared",
                reason="GRAPH_DATABASE_NOT_PROVISIONED",
            ) from exc


class ArcadeDbProvisioner:
    def __init__(self, settings: Neo4jSettings) -> None:
        if not settings.admin_url:
            raise ValueError("DOCUTHINKER_NEO4J_ADMIN_URL is required with DOCUTHINKER_NEO4J_PROVISION=arcadedb")
        self._url = settings.admin_url.rstrip("/") + "/api/v1/server"
        self._auth = (settings.user, settings.password.get_secret_value())
        self._timeout = settings.connect_timeout_s

    async def ensure(self, database: str) -> None:
        try:
            async with httpx.AsyncClient(timeout=self._timeout) as http:
                reply = await http.post(self._url, json={"command": f"create database {database}"}, auth=self._auth)
        except httpx.HTTPError as exc:
            raise Unavailable(
                f"graph backend admin endpoint unreachable: {exc}", reason="GRAPH_BACKEND_UNAVAILABLE"
            ) from exc
        if reply.status_code == 409 or reply.is_success:  # 409: it already exists
            return
        raise FailedPrecondition(
            f"cannot create graph database {database!r}: HTTP {reply.status_code} {reply.text[:200]}",
            reason="GRAPH_DATABASE_NOT_PROVISIONED",
        )


class ExistingDatabases:
    async def ensure(self, database: str) -> None:
        return None


def provisioner_for(settings: Neo4jSettings, driver: neo4j.AsyncDriver) -> Provisioner:
    if settings.provision == "cypher":
        return CypherProvisioner(driver)
    if settings.provision == "arcadedb":
        return ArcadeDbProvisioner(settings)
    return ExistingDatabases()
