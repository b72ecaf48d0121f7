"""What only the PostgreSQL backend has: versioned migrations raced by replicas, and the shared graph
outbox's claims and leases (several workers, one of which dies)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from services.rag.documents import GraphSyncState, Section
from services.rag.graph_sync.pg_outbox import PostgresGraphOutbox
from services.rag.store.pg_metadata import PostgresMetadataStore
from services.storage.postgres import ACQUIRE_TIMEOUT_S, Postgres, migrate, migrations
from tests.support import records


def test_replicas_starting_together_apply_each_migration_once(postgres_dsn) -> None:
    barrier = threading.Barrier(4)

    def start() -> list[int]:
        barrier.wait()
        return migrate(postgres_dsn)

    with ThreadPoolExecutor(4) as pool:
        applied = [v for result in pool.map(lambda _: start(), range(4)) for v in result]
    expected = [m.version for m in migrations()]
    assert sorted(applied) == expected  # each applied by exactly one of the four
    with psycopg.connect(postgres_dsn) as conn:
        recorded = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert recorded == expected
        assert conn.execute("SELECT extname FROM pg_extension WHERE extname = 'vector'").fetchone() == ("vector",)
    assert migrate(postgres_dsn) == []  # a later start finds nothing to do


def test_migrations_are_numbered_uniquely_and_in_order() -> None:
    versions = [m.version for m in migrations()]
    assert versions == sorted(set(versions)) and versions[0] == 1


@pytest.fixture
def db(postgres_dsn):
    database = Postgres(postgres_dsn, pool_size=8)
    yield database
    database.close()


def _ready(metadata: PostgresMetadataStore, tenant: str, document_id: str) -> None:
    record = records.document("text", tenant=tenant, document_id=document_id, filename=f"{document_id}.txt",
                              content_sha256=document_id * 2, graph_sync=GraphSyncState.PENDING)
    metadata.upsert_document(record)
    metadata.publish(record, [Section(text="text")], [], GraphSyncState.PENDING)


def test_two_workers_never_claim_the_same_entry(db) -> None:
    one, two = PostgresGraphOutbox(db, lease_s=60, owner="one"), PostgresGraphOutbox(db, lease_s=60, owner="two")
    one.enqueue_upsert("t1", "a")
    one.enqueue_upsert("t1", "b")
    first, second = one.next_due(), two.next_due()
    assert {first.document_id, second.document_id} == {"a", "b"}
    assert two.next_due() is not None and two.next_due().document_id == second.document_id  # its own, again
    assert one.complete(second, mark_synced=False) is False  # not one's claim
    assert two.complete(second, mark_synced=False) is True


def test_many_concurrent_claims_share_out_the_entries_exactly(db) -> None:
    workers = [PostgresGraphOutbox(db, lease_s=60, owner=f"w{i}") for i in range(6)]
    for i in range(30):
        workers[0].enqueue_upsert("t1", f"doc-{i}")
    barrier = threading.Barrier(len(workers))

    def drain(worker: PostgresGraphOutbox) -> list[str]:
        barrier.wait()
        done = []
        while (entry := worker.next_due()) is not None:
            assert worker.complete(entry, mark_synced=False)
            done.append(entry.document_id)
        return done

    with ThreadPoolExecutor(len(workers)) as pool:
        drained = [d for result in pool.map(drain, workers) for d in result]
    assert sorted(drained) == sorted(f"doc-{i}" for i in range(30))  # each once, none lost
    assert workers[0].entries() == []


def test_a_dead_workers_entry_is_taken_over_after_its_lease_and_its_late_writes_change_nothing(db) -> None:
    metadata = PostgresMetadataStore(db)
    _ready(metadata, "t1", "doc")
    dead, alive = PostgresGraphOutbox(db, lease_s=30, owner="dead"), PostgresGraphOutbox(db, lease_s=30, owner="alive")
    dead.enqueue_upsert("t1", "doc")
    claimed = dead.next_due()
    assert alive.next_due() is None  # leased
    assert alive.next_attempt_time() >= claimed.next_attempt_time + 29  # wakes when the lease ends

    taken = alive.next_due(now=time.time() + 31)
    assert taken is not None and taken.sequence == claimed.sequence
    assert dead.save_facts(claimed, "{}") is False and dead.complete(claimed, mark_synced=True) is False
    assert metadata.get_document("t1", "doc").graph_sync is GraphSyncState.PENDING
    assert alive.complete(taken, mark_synced=True) is True
    assert metadata.get_document("t1", "doc").graph_sync is GraphSyncState.SYNCED
    assert alive.entries() == []


def test_a_new_intent_ends_the_claim_on_the_old_one(db) -> None:
    worker, other = PostgresGraphOutbox(db, lease_s=60, owner="w"), PostgresGraphOutbox(db, lease_s=60, owner="o")
    worker.enqueue_upsert("t1", "doc")
    read = worker.next_due()
    other.enqueue_delete("t1", "doc")  # the user deleted it, through another replica
    newer = other.next_due()
    assert newer is not None and newer.operation.value == "delete" and newer.sequence > read.sequence
    assert worker.complete(read, mark_synced=True) is False


def test_a_database_gone_away_is_unavailable_without_its_socket_and_serves_again_when_back() -> None:
    import shutil
    import tempfile

    from services.runtime.errors import Unavailable
    from services.storage.local_server import LocalPostgres

    root = tempfile.mkdtemp(prefix="pg-outage-")  # short: the server's socket lives in it
    server = LocalPostgres(root, durable=False)
    try:
        db = Postgres(server.create_database("outage"), pool_size=2)
        with db.connection() as conn:
            conn.execute("CREATE TABLE notes (body TEXT)")
        server.stop()
        outcome: dict[str, BaseException | None] = {}

        def query() -> None:
            try:
                with db.connection() as conn:
                    conn.execute("SELECT count(*) FROM notes")
                outcome["error"] = None
            except BaseException as exc:  # noqa: BLE001 - the test reads what came out
                outcome["error"] = exc

        caller = threading.Thread(target=query, daemon=True)
        started = time.monotonic()
        caller.start()
        caller.join(120)  # a guard against a hang, not a measure of speed
        assert not caller.is_alive(), "a query on a stopped database hung"
        told_after = time.monotonic() - started
        error = outcome["error"]
        assert isinstance(error, Unavailable) and error.reason == "DATABASE_UNAVAILABLE", repr(error)
        # A stopped server refuses at once: the caller hears so without waiting out the pool's acquire timeout
        # (a behaviour, not a speed: with the wait it took ACQUIRE_TIMEOUT_S, 30 s through Envoy's retries).
        assert told_after < ACQUIRE_TIMEOUT_S / 2, told_after
        assert root not in error.message and ".s.PGSQL" not in error.message
        server = LocalPostgres(root, durable=False)  # the same data directory, started again
        for _ in range(60):  # the pool's connections are checked as they leave it: one reconnect
            try:
                with db.connection() as conn:
                    assert conn.execute("SELECT count(*) AS n FROM notes").fetchone()["n"] == 0
                break
            except Unavailable:
                time.sleep(0.5)
        else:
            raise AssertionError("the database came back but the pool never served again")
        db.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_text_comes_back_as_text_from_a_sql_ascii_database(postgres_server) -> None:
    import uuid

    name = f"ascii_{uuid.uuid4().hex[:10]}"
    db = Postgres(postgres_server.create_database(name, sql_ascii=True), pool_size=1)
    try:
        with db.connection() as conn:
            conn.execute("CREATE TABLE notes (body TEXT)")
            conn.execute("INSERT INTO notes VALUES (%s)", ("Café crème, 12 €",))
            assert conn.execute("SELECT body FROM notes").fetchone()["body"] == "Café crème, 12 €"
    finally:
        db.close()
        postgres_server.drop_database(name)
