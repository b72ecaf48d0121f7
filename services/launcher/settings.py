"""Settings of the local launcher (``make run``): supervision of its children and their memory ceilings."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


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
    memory_max_mb: int = Field(default=8192, ge=0)
    """Memory ceiling of each service process (a cgroup when the machine lets the launcher make one); the kernel
    stops a runaway service at it, the host lives on, and the supervisor restarts the service. 0: no ceiling."""
