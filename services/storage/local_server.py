"""A private PostgreSQL server (PyPI ``pgserver``: PostgreSQL 16 with pgvector) for tests and ``make run``.

``pgserver`` runs the bundled binaries on a data directory and listens on a unix socket in it
only (no TCP port), so two runs never collide. A server already running on the directory is
reused; ``stop()`` stops it only if this process started it. For production, point
``DOCUTHINKER_POSTGRES_DSN`` at any PostgreSQL 15+ with pgvector (managed services included).
"""

from __future__ import annotations

import pathlib
import re
from typing import Self

DATABASE = "docuthinker"


class LocalPostgres:
    def __init__(self, data_dir: pathlib.Path, durable: bool = True) -> None:
        """``durable=False`` (tests) turns fsync off: a power cut could lose the data, a crash of
        the server could not, and creating a database per test no longer waits on the disk."""
        import pgserver  # a dependency of the postgres backend only

        self.data_dir = pathlib.Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # "stop": stop the server when this process is done with it (the data stays).
        self._server = pgserver.get_server(self.data_dir, cleanup_mode="stop")
        exists = self._server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}';")
        if "1 row" not in exists:
            self._server.psql(f"CREATE DATABASE {DATABASE};")
        if not durable:
            self._server.psql("ALTER SYSTEM SET fsync = off;")
            self._server.psql("SELECT pg_reload_conf();")

    @property
    def dsn(self) -> str:
        return self._server.get_uri(DATABASE)

    def create_database(self, name: str, sql_ascii: bool = False) -> str:
        """A new empty database on this server (tests take one each); returns its DSN. ``sql_ascii``: one
        in the byte-for-byte encoding of databases an old ``initdb`` made under the C locale."""
        _check_name(name)
        shape = " ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'" if sql_ascii else ""
        self._server.psql(f"CREATE DATABASE {name}{shape};")
        return self._server.get_uri(name)

    def drop_database(self, name: str) -> None:
        _check_name(name)
        self._server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")

    def stop(self) -> None:
        self._server.cleanup()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_for_mesh(env: dict[str, str], data_dir: pathlib.Path) -> LocalPostgres | None:
    """The launcher's one-command run on the postgres backend: with ``DOCUTHINKER_STORE_BACKEND=postgres``
    and no ``DOCUTHINKER_POSTGRES_DSN``, starts a local server under ``<data_dir>/postgres`` and puts
    its DSN in ``env`` for the services. None: nothing to start (embedded, or a DSN was given)."""
    if env.get("DOCUTHINKER_STORE_BACKEND", "embedded") != "postgres" or env.get("DOCUTHINKER_POSTGRES_DSN"):
        return None
    server = LocalPostgres(pathlib.Path(data_dir) / "postgres")
    env["DOCUTHINKER_POSTGRES_DSN"] = server.dsn
    return server


def _check_name(name: str) -> None:
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        raise ValueError(f"not a plain database name: {name!r}")


def main() -> None:
    """``python -m services.storage.local_server DIR``: starts (or finds) the server, prints its DSN."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=pathlib.Path)
    args = parser.parse_args()
    server = LocalPostgres(args.data_dir)
    print(server.dsn, flush=True)
    signal.sigwait({signal.SIGINT, signal.SIGTERM})
    server.stop()


if __name__ == "__main__":
    main()
