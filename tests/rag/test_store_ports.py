"""Each storage backend's classes fit the ports of ``services.rag.store.ports``, member by member.

mypy proves the types where the runtime assigns the stores to port-typed names; this test fails on its own
(no lint needed) when a backend class loses a port member or renames, reorders or drops a parameter of one,
the way ``PostgresVectors.flush`` was missing and every PostgreSQL replica failed at shutdown.
``isinstance`` on a runtime-checkable Protocol would check names only. No database is opened: the classes
are inspected, not instantiated.
"""

from __future__ import annotations

import dis
import inspect

import pytest

from services.rag.store import BlobStore, ChunkIndex, KeywordIndex, MetadataStore, VectorStore
from services.rag.store.chroma_vectors import ChromaVectors
from services.rag.store.pg_blobs import PostgresBlobStore
from services.rag.store.pg_index import Bm25Keywords, FullTextKeywords, PostgresChunkIndex, PostgresVectors
from services.rag.store.pg_metadata import PostgresMetadataStore
from services.rag.store.ports import BlobPort, ChunkIndexPort, KeywordPort, MetadataPort, VectorsPort

IMPLEMENTATIONS = {
    MetadataPort: (MetadataStore, PostgresMetadataStore),
    VectorsPort: (VectorStore, PostgresVectors, ChromaVectors),
    KeywordPort: (KeywordIndex, Bm25Keywords, FullTextKeywords),
    ChunkIndexPort: (ChunkIndex, PostgresChunkIndex),
    BlobPort: (BlobStore, PostgresBlobStore),
}
PAIRS = [(port, cls) for port, classes in IMPLEMENTATIONS.items() for cls in classes]


def port_members(port: type) -> dict[str, object]:
    """The port's methods and properties, its own and its parent ports' (``MetadataPort`` is three)."""
    members: dict[str, object] = {}
    for base in reversed(port.__mro__):
        if not getattr(base, "_is_protocol", False) or base.__module__ == "typing":
            continue
        for name, value in vars(base).items():
            if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property)):
                members[name] = value
    return members


def _assigned_in_init(cls: type, name: str) -> bool:
    """``self.<name> = ...`` in the class's ``__init__``: an instance attribute serves a read-only port property."""
    init = cls.__init__
    return inspect.isfunction(init) and any(
        i.opname == "STORE_ATTR" and i.argval == name for i in dis.get_instructions(init))


def _parameters(function) -> list[inspect.Parameter]:
    return list(inspect.signature(function).parameters.values())[1:]  # without self


def mismatches(port: type, cls: type) -> list[str]:
    """Why ``cls`` does not fit ``port`` (empty: it does). Parameters must keep the port's names, kinds and
    order (callers pass them by keyword too) and its defaults; a class may add parameters that have defaults."""
    problems: list[str] = []
    for name, expected in port_members(port).items():
        actual = inspect.getattr_static(cls, name, None)
        if isinstance(expected, property):
            if actual is None and not _assigned_in_init(cls, name):
                problems.append(f"{name}: missing (a property or attribute set in __init__)")
            elif actual is not None and not isinstance(actual, property) and inspect.isfunction(actual):
                problems.append(f"{name}: a method, the port reads an attribute")
            continue
        if actual is None or not inspect.isfunction(actual):
            problems.append(f"{name}: missing method")
            continue
        want, have = _parameters(expected), _parameters(actual)
        for position, param in enumerate(want):
            if position >= len(have):
                problems.append(f"{name}: lacks parameter {param.name!r}")
                break
            got = have[position]
            if (got.name, got.kind) != (param.name, param.kind):
                problems.append(f"{name}: parameter {position + 1} is {got.name!r} ({got.kind.description}), "
                                f"the port's is {param.name!r} ({param.kind.description})")
            elif param.default is not inspect.Parameter.empty and got.default != param.default:
                problems.append(f"{name}: {param.name!r} defaults to {got.default!r}, the port's to {param.default!r}")
        for extra in have[len(want):]:
            if extra.default is inspect.Parameter.empty and extra.kind not in (
                    inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                problems.append(f"{name}: extra required parameter {extra.name!r}")
    return problems


@pytest.mark.parametrize(("port", "cls"), PAIRS, ids=[f"{p.__name__}-{c.__name__}" for p, c in PAIRS])
def test_backend_class_fits_its_port(port, cls):
    assert mismatches(port, cls) == []


def test_the_ports_have_the_members_their_callers_use():
    # Guards the member discovery itself: an empty port would make every class fit.
    counts = {port.__name__: len(port_members(port)) for port in IMPLEMENTATIONS}
    assert counts == {"MetadataPort": 31, "VectorsPort": 6, "KeywordPort": 1, "ChunkIndexPort": 11, "BlobPort": 3}


def test_the_check_catches_a_missing_method_a_renamed_parameter_and_a_missing_attribute():
    class Drifted:
        def __init__(self) -> None:
            self.metadata = None

        def dense_search(self, tenant, vector, k, document_ids=None):  # renamed: query_vector
            return []

        def keyword_search(self, tenant, query, k):  # lost document_ids
            return []

        def get_chunks(self, tenant, ids, limit):  # an extra required parameter
            return []

    problems = "\n".join(mismatches(ChunkIndexPort, Drifted))
    assert "metadata" not in problems  # set in __init__: fits the read-only property
    assert "vectors: missing" in problems
    assert "dense_search: parameter 2 is 'vector'" in problems
    assert "keyword_search: lacks parameter 'document_ids'" in problems
    assert "get_chunks: extra required parameter 'limit'" in problems
    assert "publish: missing method" in problems
