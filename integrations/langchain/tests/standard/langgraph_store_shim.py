"""A pytest plugin that runs LangGraph's own ``BaseStore`` tests against ``MemoryStoreLangGraph``.

LangGraph ships its store tests only in the source distribution of ``langgraph-checkpoint-sqlite``
(``tests/test_store.py``, ``tests/test_async_store.py``, and the TTL tests ``tests/test_ttl.py``),
written for ``SqliteStore``. Loaded with ``-p langgraph_store_shim``, this plugin changes their
*construction* and nothing else: the name ``SqliteStore`` / ``AsyncSqliteStore`` those modules
import resolves to a :class:`MemoryStoreLangGraph` subclass whose
``from_conn_string(conn, index=..., ttl=...)`` opens a memory store in a temporary folder, with the
test's embeddings (wrapped by ``LangChainEmbedder``), its ``text_fields`` as ``index_fields`` and
its TTL config. The tests themselves run unchanged; those that inspect
SQLite itself (its tables, migrations, SQL helpers) are skipped with the reason listed in
:data:`SKIPPED`. ``MEMORY_RETRIEVERS_LANGGRAPH_RANKING`` chooses the store's ranking.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from langchain_memory_retrievers import LangChainEmbedder, MemoryStoreLangGraph
from memory_retrievers import HashEmbedder, MemoryStore

RANKING = os.environ.get("MEMORY_RETRIEVERS_LANGGRAPH_RANKING", "recall")

#: Tests that read SQLite's own internals or a behaviour only SqliteStore has, by name, with the reason
#: they do not apply.
SKIPPED = {
    "test_ttl_override_default": "expects a get not to restart an item's TTL when the ttl config leaves out "
    "refresh_on_read: SqliteStore reads it as False there, while LangGraph's TTLConfig documents True (and "
    "BaseStore and PostgresStore apply True), as this store does; tests/unit_tests/test_lc_ttl.py checks both",
    "test_vector_store_initialization": "inspects SqliteStore's sqlite tables (store.conn)",
    "test_nonnull_migrations": "checks SqliteStore.MIGRATIONS (SQL statements)",
    "test_escape_glob_literal": "unit test of a SQLite GLOB helper",
    "test_namespace_match_pattern": "unit test of a SQLite regex helper",
    "test_list_namespaces_prefix_uses_indexable_condition": "checks the SQL that SqliteStore generates",
    "test_no_running_loop": "checks that AsyncSqliteStore's sync methods refuse to run on its loop; ours run anywhere",
    "test_sql_injection_vulnerability": "checks SqliteStore's refusal of filter keys that could break its SQL; "
    "filters never reach SQL here (they match values in Python)",
}


def _open(
    cls: type[MemoryStoreLangGraph], index: dict[str, Any] | None, ttl: dict[str, Any] | None = None
) -> tuple[MemoryStoreLangGraph, MemoryStore, str]:
    folder = tempfile.mkdtemp(prefix="langgraph-standard-")
    if index is not None:
        embedder: Any = LangChainEmbedder(index["embed"], name="langgraph-test-embeddings", dimension=index["dims"])
        fields = index.get("text_fields") or index.get("fields")
    else:
        embedder, fields = HashEmbedder(64), None
    store = MemoryStore(folder, embedder=embedder)
    lg = cls(store, index_fields=fields, ranking=RANKING, ttl=ttl)  # type: ignore[arg-type]
    # What the tests read of SqliteStore's configuration.
    lg.index_config = index  # type: ignore[attr-defined]
    lg.embeddings = index["embed"] if index is not None else None  # type: ignore[attr-defined]
    return lg, store, folder


class ShimStore(MemoryStoreLangGraph):
    """``MemoryStoreLangGraph`` under the constructor names of LangGraph's SQLite stores."""

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None, **_: Any
    ) -> Iterator[Any]:
        lg, store, folder = _open(cls, index, ttl)
        try:
            yield lg
        finally:
            store.close()
            shutil.rmtree(folder, ignore_errors=True)

    def setup(self) -> None:
        """Nothing to migrate: the memory store creates its table itself."""


class AsyncShimStore(MemoryStoreLangGraph):
    """The same, under ``AsyncSqliteStore``'s async constructor."""

    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None, **_: Any
    ) -> AsyncIterator[Any]:
        lg, store, folder = _open(cls, index, ttl)
        try:
            yield lg
        finally:
            await store.aclose()
            shutil.rmtree(folder, ignore_errors=True)

    async def setup(self) -> None:  # type: ignore[override]
        """Nothing to migrate."""


def pytest_configure(config: pytest.Config) -> None:
    """Point the names the upstream modules import at the shims (before they are collected)."""
    import langgraph.store.sqlite as sqlite_store
    import langgraph.store.sqlite.aio as sqlite_aio

    sqlite_store.SqliteStore = ShimStore  # type: ignore[misc,assignment]
    sqlite_store.AsyncSqliteStore = AsyncShimStore  # type: ignore[misc,assignment]
    sqlite_aio.AsyncSqliteStore = AsyncShimStore  # type: ignore[misc,assignment]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the tests of SQLite internals and SqliteStore-only behaviour, naming why."""
    for item in items:
        reason = SKIPPED.get(getattr(item, "originalname", item.name))
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"SqliteStore only: {reason}"))
