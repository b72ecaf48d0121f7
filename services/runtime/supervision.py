"""The supervision state the launcher publishes: its view of each child it supervises (state, restarts, last exit).

The launcher's supervisor (``services/launcher/supervisor.py``) writes it, whole and atomically, to
``<data_dir>/supervisor.json`` whenever a child changes state, and removes it when it stops; any process of the mesh
reads it here (the orchestrator's ``/v1/health`` shows it beside each service's own gRPC health). Without a
supervisor (tests, Kubernetes, a service started by hand) there is none, and readers see no entries.
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Mapping
from typing import Any

STATE_FILE = "supervisor.json"


def state_path(data_dir: pathlib.Path) -> pathlib.Path:
    return pathlib.Path(data_dir) / STATE_FILE


def publish(data_dir: pathlib.Path, updated: float, children: Mapping[str, Mapping[str, Any]]) -> None:
    """Replaces the published state in one rename, so a reader sees the old state or the new, never half of one."""
    path = state_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps({"updated": updated, "children": children}, indent=1))
    os.replace(temporary, path)


def withdraw(data_dir: pathlib.Path) -> None:
    """No supervisor runs any more: readers see no entries."""
    state_path(data_dir).unlink(missing_ok=True)


def read_state(data_dir: pathlib.Path) -> dict[str, dict[str, Any]]:
    """The supervisor's view of each child, or {} when no supervisor runs."""
    try:
        return dict(json.loads(state_path(data_dir).read_text()).get("children", {}))
    except (OSError, ValueError, AttributeError):
        return {}
