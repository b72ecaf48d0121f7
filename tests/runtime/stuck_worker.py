"""A service process whose start leaves a worker thread busy for an hour (as a model warm-up can be), for the
shutdown test: ``python -m tests.runtime.stuck_worker PORT DATA_DIR``."""

from __future__ import annotations

import asyncio
import sys
import threading

from services.runtime import MeshSettings, ServiceBinding
from services.runtime.server import serve

_tasks: set[asyncio.Task] = set()


async def _start() -> None:
    _tasks.add(asyncio.create_task(asyncio.to_thread(threading.Event().wait, 3600)))


if __name__ == "__main__":
    port, data_dir = int(sys.argv[1]), sys.argv[2]
    settings = MeshSettings(nlp_port=port, data_dir=data_dir, metrics_enabled=False, shutdown_grace_s=0.5)
    serve(lambda _: ServiceBinding(name="nlp", full_names=[], register=lambda server: None, on_start=_start),
          settings)
