"""A store on the caller's own LanceDB: their connection or their table handle, never closed by us.

``MemoryStore(connection=db, table_name=...)`` opens (or creates) the table on the caller's
connection, with the connection's own storage options; ``MemoryStore.from_table`` uses a table handle
as it is. Either way the store reports the *database's* URI, as a store opened by URI does, so its
spec (pickles, dumps of an adapter) reopens the same table. The store's own
``read_consistency_interval`` is applied by the table layer itself (``MemoryTable``): LanceDB applies
it only on connections it opens, and a caller's ``lancedb.connect()`` never looks for new versions.
The table must have the store's columns: one this library created is used as is (migrated like any
other), one that lacks columns is refused with a :class:`~memory_retrievers.ConfigError` naming them.

Fork: the caller's connection belongs to the process that opened it, and LanceDB's runtime is not
safe in a child forked from a process that used it (see ``memory_retrievers.runtime.fork``). A store
opened by URI moves to a private engine process there; a caller's connection cannot be moved, so in
such a child opening a store on it raises :class:`~memory_retrievers.ForkedStoreError` before any
LanceDB call (never a hang or a crash). Open the connection and the store after the fork, or pass a
URI instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

import memory_retrievers.runtime.fork as _fork
from memory_retrievers.errors import ConfigError, ForkedStoreError

__all__ = ["CallerTable", "database_uri", "missing_columns"]


@dataclass(frozen=True)
class CallerTable:
    """The caller's LanceDB connection or table, as given (async handles; sync ones are unwrapped).

    Attributes:
        connection: A ``lancedb.AsyncConnection`` (the table is opened or created on it), or None.
        table: A ``lancedb.AsyncTable`` used as it is, or None.
        table_name: The table's name (for ``table``: its own).
        uri: The database's URI, when known before opening (an async table's is read at :meth:`open`).
    """

    connection: Any
    table: Any
    table_name: str | None
    uri: str

    @classmethod
    def from_connection(
        cls, connection: Any, *, uri: Any = None, storage_options: Mapping[str, str] | None = None
    ) -> CallerTable:
        """The caller's connection, checked: a LanceDB ``DBConnection`` or ``AsyncConnection``.

        Raises:
            ConfigError: Not a local LanceDB connection, or given with ``uri``/``storage_options``.
        """
        if uri is not None:
            raise ConfigError("pass either uri or connection to MemoryStore, not both (the connection has its URI)")
        if storage_options:
            raise ConfigError(
                "storage_options cannot be combined with connection: set them on your connection "
                "(lancedb.connect(uri, storage_options=...)); the store uses the connection's"
            )
        import lancedb

        if isinstance(connection, lancedb.AsyncConnection):
            conn = connection
        elif isinstance(getattr(connection, "_conn", None), lancedb.AsyncConnection):
            conn = connection._conn  # a sync LanceDBConnection wraps the async one: same database, same options
        else:
            raise ConfigError(
                f"connection must be a LanceDB connection (lancedb.connect(...) or await lancedb.connect_async(...)), "
                f"got {type(connection).__name__}"
            )
        _note_lancedb()
        return cls(connection=conn, table=None, table_name=None, uri=str(conn.uri))

    @classmethod
    def from_table(cls, table: Any) -> CallerTable:
        """The caller's table handle, checked: a LanceDB ``Table`` or ``AsyncTable``.

        Raises:
            ConfigError: Not a local LanceDB table.
        """
        import lancedb.table

        if isinstance(table, lancedb.table.AsyncTable):
            handle = table
        elif isinstance(getattr(table, "_table", None), lancedb.table.AsyncTable):
            handle = table._table  # a sync LanceTable wraps the async one: the same table
        else:
            raise ConfigError(
                "table must be a LanceDB table (db.open_table(...) or await adb.open_table(...)), "
                f"got {type(table).__name__}"
            )
        _note_lancedb()
        # A sync table knows its connection (the authoritative database URI); an async one only its own URI.
        conn_uri = getattr(getattr(table, "_conn", None), "uri", None)
        return cls(connection=None, table=handle, table_name=str(handle.name), uri=str(conn_uri or ""))

    async def open(self, table_name: str, schema: pa.Schema) -> tuple[Any, pa.Schema, str]:
        """The caller's table (opened, or created with ``schema`` when the connection has none), its schema and URI.

        Raises:
            ForkedStoreError: This process was forked after LanceDB ran in its parent.
        """
        if _fork.lancedb_inherited():
            raise ForkedStoreError(
                f"LanceDB ran in process {_fork.lancedb_started_in()}, which process {os.getpid()} was forked from: "
                "a caller's LanceDB connection or table cannot be used here (LanceDB's runtime is not fork-safe). "
                "Open the connection and the store after the fork (gunicorn post_fork, Celery worker_process_init, "
                "the 'spawn' start method), or open the store by URI, which moves LanceDB to an engine process",
                opened_in=_fork.lancedb_started_in(),
            )
        if self.table is not None:
            uri = self.uri or database_uri(str(await self.table.uri()), str(self.table_name))
            return self.table, await self.table.schema(), uri
        from memory_retrievers.storage.connect import create_or_open

        table = await create_or_open(self.connection, table_name, schema)
        return table, await table.schema(), self.uri


def _note_lancedb() -> None:
    # The caller's handle means LanceDB runs in this process: a child forked from it must know.
    if not _fork.lancedb_inherited():
        _fork.note_lancedb()


def database_uri(table_uri: str, table_name: str) -> str:
    """The database of a table at ``table_uri``: ``<db>/<name>.lance`` (local or ``s3://...``) less its last part.

    A store reports its database's URI (``MemoryStore(store.uri, table_name=...)`` reopens it);
    the table's own URI would open a new table nested inside the caller's. A URI of another
    layout is kept as it is: there is no database URI to tell.
    """
    trimmed = table_uri.rstrip("/")
    suffix = f"/{table_name}.lance"
    if trimmed.endswith(suffix) and len(trimmed) > len(suffix):
        return trimmed[: -len(suffix)]
    return table_uri


def missing_columns(found: pa.Schema, expected: pa.Schema) -> list[str]:
    """The store's columns ``found`` lacks or types differently, as ``name (type)`` for a message."""
    wrong = []
    for field in expected:
        if field.name not in found.names:
            wrong.append(f"{field.name} (missing; {field.type})")
        elif not found.field(field.name).type.equals(field.type):
            wrong.append(f"{field.name} ({found.field(field.name).type}, needs {field.type})")
    return wrong
