"""Settings of the local launcher (``make run``): supervision of its children and their memory ceilings."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


def parse_replicas(value: str) -> dict[str, int]:
    """``rag=2,nlp=2`` as {"rag": 2, "nlp": 2}."""
    replicas = {}
    for part in filter(None, (p.strip() for p in value.split(","))):
        service, sep, count = part.partition("=")
        if not sep or not count.strip().isdigit():
            raise ValueError(f"replicas: {part!r} is not SERVICE=COUNT")
        replicas[service.strip()] = int(count)
    return replicas


class LauncherSettings(BaseSettings):
    """How the launcher restarts a child that died and how much memory each child may use."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_LAUNCHER_", frozen=True, extra="ignore")

    supervise: bool = True
    """Restart a service or Envoy that dies (``make run``); ``false`` stops the whole mesh instead, as before."""
    restart_initial_s: float = Field(default=0.5, ge=0)
    """Wait before the first restart of a child that died; doubled for each further death in the window."""
    restart_max_s: float = Field(default=30.0, gt=0)
    """Longest wait between two restarts of one child."""
    restart_budget: int = Field(default=5, ge=0)
    """Restarts one child may have within ``restart_window_s``; past it the child stays down (and is reported)."""
    restart_window_s: float = Field(default=600.0, gt=0)
    """The window the restart budget counts over; a child that has lived this long starts afresh."""
    replicas: Annotated[dict[str, int], NoDecode] = Field(default_factory=dict)
    """Processes per service, e.g. ``rag=2,nlp=2,orchestrator=2`` (the rest: one), each on its own ports, all
    behind Envoy and every peer's target. Above one, rag and orchestrator need ``DOCUTHINKER_STORE_BACKEND=postgres``
    and graph ``DOCUTHINKER_GRAPH_BACKEND=neo4j`` (embedded stores are one process's)."""
    memory_max_mb: int = Field(default=8192, ge=0)
    """Memory ceiling of each service process (a cgroup when the machine lets the launcher make one); the kernel
    stops a runaway service at it, the host lives on, and the supervisor restarts the service. 0: no ceiling."""
    gateway_memory_max_mb: int = Field(default=512, ge=0)
    """Memory ceiling of Envoy, in its own cgroup as each service is (its heap is held lower by its overload
    manager, ``DOCUTHINKER_GATEWAY_MAX_HEAP_MB``). 0: no ceiling for Envoy."""

    @field_validator("replicas", mode="before")
    @classmethod
    def _replicas(cls, value: object) -> object:
        return parse_replicas(value) if isinstance(value, str) else value


def offset_ports(env: dict[str, str], offset: int) -> dict[str, str]:
    """Every port setting of the mesh (``DOCUTHINKER_*_PORT``: the gateway, its admin, each service, its metrics,
    the chat API) moved by ``offset`` from its configured value, so a second mesh on this machine needs one
    number (``--port-offset``) instead of a variable per port. Ports set to 0 (off) stay off."""
    from services.runtime.config import MeshSettings, settings_from_env

    if offset == 0:
        return {}
    configured = settings_from_env(MeshSettings, env)
    moved = {}
    for name in MeshSettings.model_fields:
        if not name.endswith("_port"):
            continue
        port = int(getattr(configured, name))
        if port:
            if not 0 < port + offset < 65536:
                raise ValueError(f"--port-offset {offset} moves DOCUTHINKER_{name.upper()} ({port}) out of range")
            moved[f"DOCUTHINKER_{name.upper()}"] = str(port + offset)
    return moved
