"""The table layer: the one owner of the LanceDB table.

Reads go through it (every LanceDB error becomes a :class:`StorageError` that names the action),
and so does every commit. A commit tells the layer's subscribers what it changed, in a
:class:`CommitEvent`: the view cache and maintenance subscribe, instead of every write calling
their bookkeeping by hand (Lucene's writer/reader split: the writer knows what it committed).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import pyarrow as pa

from memory_retrievers.errors import MemoryRetrieversError, StorageError
from memory_retrievers.filters import MemoryFilter, build_where
from memory_retrievers.storage.backend import LanceBackend, Merge, Request
from memory_retrievers.storage.caller import CallerTable
from memory_retrievers.storage.connect import CacheSizes, CloudAccess, is_uri
from memory_retrievers.storage.events import CommitAction, CommitEvent, CommitListener, notify
from memory_retrievers.storage.keys import KEY, ensure_primary_key, key_not_null, whole_rows
from memory_retrievers.storage.migrations import add_missing_columns, check_schema, storage_error
from memory_retrievers.storage.opening import connect_table, make_folder, open_caller, within
from memory_retrievers.storage.remote import RemoteTable

__all__ = ["CommitEvent", "CommitListener", "MemoryTable", "is_uri", "storage_error"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: The condition of every rewrite: the stored row is still the one the writer read.
_UNCHANGED = "target.revision = source.revision - 1"
_REWRITE = Merge(update_where=_UNCHANGED)
_ID_CHUNK = 1000  # ids per IN list: keeps filters short


class MemoryTable:
    """One LanceDB table of memories: open or create it, read it, commit to it.

    Args:
        uri: Local folder or LanceDB URI.
        table_name: The table.
        schema: The expected schema; its metadata (version, embedder, dimension) must match the table's.
        storage_options: LanceDB storage options (object stores).
        read_consistency_interval: How often the handle looks for other processes' commits (see :meth:`_follow`).
        caches: Ceilings of LanceDB's index and metadata caches for this handle.
        timeout: Deadline of each LanceDB call (``StoreConfig.storage_timeout``; ``None``: none).
        maintenance_timeout: Deadline of each long maintenance step (``StoreConfig.maintenance_timeout``).
        caller: The caller's connection or table, instead of ``uri`` (with its own options; never closed).
        cloud: API key, region and host of LanceDB Cloud or Enterprise (``db://`` URIs, ``connect.CloudAccess``).
    """

    def __init__(
        self,
        *,
        uri: str,
        table_name: str,
        schema: pa.Schema,
        storage_options: Mapping[str, str] | None,
        read_consistency_interval: timedelta | None,
        caches: CacheSizes | None = None,
        timeout: timedelta | None = None,
        maintenance_timeout: timedelta | None = None,
        caller: CallerTable | None = None,
        cloud: CloudAccess | None = None,
    ) -> None:
        self.uri = uri
        self.reopen_uri = uri if is_uri(uri) else os.path.abspath(uri)  # for a child process: cwds change
        self._caller, self._cloud = caller, cloud
        self._timeout_s = timeout.total_seconds() if timeout is not None else None
        self._maintenance_s = maintenance_timeout.total_seconds() if maintenance_timeout is not None else None
        self.table_name = table_name
        self.schema = schema
        self._storage_options = dict(storage_options) if storage_options else None
        self._consistency = read_consistency_interval
        self._checked_at: float | None = None  # monotonic time of the last move to the latest version
        self._caches = caches
        self._table: Any = None
        self._listeners: list[CommitListener] = []
        self.indexed: set[str] = set()
        """Indexes present, as ``"<IndexType>:<column>"`` (refreshed by :meth:`refresh_indexes`)."""
        self._indexed_version: int | None = None

    @property
    def where(self) -> str:
        """Names the table in messages."""
        return f"table {self.table_name!r} at {self.uri!r}"

    @property
    def handle(self) -> Any:
        """The LanceDB ``AsyncTable`` (tests and diagnostics; the store goes through :attr:`backend`)."""
        return self._table

    @property
    def backend(self) -> LanceBackend:
        """The table's operations beyond commits: reads, indexes, optimize, versions (see ``backend.py``)."""
        return LanceBackend(self._table)

    @property
    def is_open(self) -> bool:
        """Whether :meth:`open` succeeded."""
        return self._table is not None

    # ------------------------------------------------------------------ open
    async def open(self) -> None:
        """Open the table, creating it (and a local folder) when missing; check its schema.

        Raises:
            StorageError: The folder or table could not be opened or created.
            SchemaMismatchError: The table belongs to another schema version or embedder.
            ConfigError: The caller's table lacks the store's columns.
        """
        try:
            if self._caller is not None:
                table, found, self.uri = await self.bounded(
                    open_caller(self._caller, self.table_name, self.schema), f"open {self.where}"
                )
            else:
                make_folder(self.uri)
                args = (self.uri, self.table_name, self.schema, self._storage_options, self._consistency, self._caches)
                table, found = await self.bounded(connect_table(*args, self._cloud), f"open {self.where}")
        except MemoryRetrieversError:
            raise
        except Exception as exc:
            raise storage_error(f"open {self.where}", exc) from exc
        check_schema(found, self.schema, self.where)
        self._table = table
        await self.bounded(add_missing_columns(table, found, self.where), f"migrate {self.where}")
        await self.bounded(ensure_primary_key(table, found, self.where), f"migrate {self.where}")
        await self.refresh_indexes()

    async def bounded(self, awaitable: Awaitable[T], action: str) -> T:
        """Await one LanceDB call within the store's deadline (see :func:`.opening.within`)."""
        return await within(awaitable, self._timeout_s, action, self.uri)

    async def maintain(self, awaitable: Awaitable[T], action: str) -> T:
        """Await one long maintenance step (an index build, a compaction) within ``maintenance_timeout``."""
        return await within(awaitable, self._maintenance_s, action, self.uri, setting="maintenance_timeout")

    def close(self) -> None:
        """Release what the table holds outside this process (the engine process of a forked child)."""
        if isinstance(self._table, RemoteTable):
            self._table.close()

    async def refresh_indexes(self) -> set[str]:
        """Re-read which indexes exist (another writer may have built some)."""
        indexed = await self.bounded(self.backend.index_keys(), f"list the indexes of {self.where}")
        self.indexed = indexed
        self._indexed_version = await self.version()
        return indexed

    async def has_index(self, key: str) -> bool:
        """Whether index ``key`` exists, re-listed if the table moved (another process built it?)."""
        if key in self.indexed:
            return True
        if await self.version() != self._indexed_version:
            await self.refresh_indexes()
        return key in self.indexed

    # ------------------------------------------------------------------ reads
    async def _follow(self) -> None:
        """On a caller's handle, look for other writers' commits as ``read_consistency_interval`` says.

        LanceDB applies the interval only on connections it opens (a caller's ``lancedb.connect()``
        never checks), so it is honoured here, as LanceDB would: ``0`` before every read, else at
        most once per interval, ``None`` never. A store opened by URI leaves this to LanceDB.
        """
        interval = None if self._caller is None else self._consistency
        last = self._checked_at
        if interval is not None and (last is None or time.monotonic() - last >= interval.total_seconds()):
            await self.refresh()

    async def _read(self, call: Callable[[], Awaitable[T]], action: str) -> T:
        """One read after :meth:`_follow`, within the deadline; a failure is a StorageError naming ``action``."""
        try:
            await self._follow()
            return await self.bounded(call(), action)
        except StorageError:
            raise
        except Exception as exc:
            raise storage_error(action, exc) from exc

    async def search(self, request: Request, action: str) -> pa.Table:
        """Run one read (see :class:`.backend.Request`); a failure is a StorageError naming ``action``."""
        return await self._read(lambda: self.backend.search(request), action)

    async def rows(
        self,
        where: str,
        columns: Sequence[str],
        *,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool | None = None,
        by: str = "created_at",
        action: str = "read the table",
    ) -> pa.Table:
        """Rows matching ``where``; ordered by ``by`` (a time column) when ``newest_first`` is not ``None``.

        Equal timestamps (a frozen clock, imported history) are ordered by id, so pages never skip or
        repeat a row and the same read gives the same order.
        """
        order = ((by, not newest_first), ("id", True)) if newest_first is not None else ()
        return await self.search(Request(where, columns, limit=limit, offset=offset, order=order), action)

    async def rows_by_id(
        self, namespace: str, ids: Sequence[str], *, columns: Sequence[str] | None = None, only: str | None = None
    ) -> dict[str, dict[str, Any]]:
        """Stored rows of ``ids`` in ``namespace`` (superseded ones included), by id.

        ``only``: a SQL predicate the rows must also satisfy (see :meth:`delete`).
        """
        if not ids:
            return {}
        cols = list(columns) if columns is not None else [f.name for f in self.schema]
        out: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), _ID_CHUNK):
            chunk = unique[start : start + _ID_CHUNK]
            where = _also(build_where(namespace, MemoryFilter(include_superseded=True), ids=chunk), only)
            table = await self.rows(where, cols)
            for row in table.to_pylist():
                out[row["id"]] = row
        return out

    async def count(self, where: str | None = None, *, action: str = "count rows") -> int:
        """Rows matching ``where`` (every row for ``None``)."""
        return await self._read(lambda: self.backend.count(where), action)

    async def count_namespace(self, namespace: str) -> int:
        """Rows of a namespace, superseded ones included."""
        return await self.count(build_where(namespace, MemoryFilter(include_superseded=True)))

    async def refresh(self) -> None:
        """Move this handle to the latest version, other processes' commits included.

        Every write starts here, whatever ``read_consistency_interval`` says about reads: a delete
        or a merge on a stale handle would miss rows another process added since (a ``forget``
        that leaves memories behind). About 0.2-0.4 ms on a local folder.
        """
        try:
            await self.bounded(self.backend.checkout_latest(), "read the latest table version")
            self._checked_at = time.monotonic()
        except StorageError:
            raise
        except Exception as exc:
            raise storage_error("read the latest table version", exc) from exc

    async def version(self) -> int:
        """The version this handle sees (after ``read_consistency_interval``, others' commits too)."""
        return await self._read(self.backend.version, "read the table version")

    # ------------------------------------------------------------------ commits
    def subscribe(self, listener: CommitListener) -> None:
        """Call ``listener`` after every commit, in subscription order (failed commits included)."""
        self._listeners.append(listener)

    async def add(self, data: pa.Table) -> CommitEvent:
        """Append new rows in one commit."""
        return await self._commit("add", _namespaces(data), lambda: self.backend.append(data), rows=data)

    async def upsert(self, data: pa.Table) -> CommitEvent:
        """Insert new rows and rewrite existing ones (matched by namespace and id) in one commit.

        Conditional: a row lands only if the stored row still has the revision it was read at
        (``source.revision - 1``); a new row (revision 0) only if its id does not exist yet. See
        :attr:`CommitEvent.landed`.
        """
        self._whole(data)
        merge = Merge(update_where=_UNCHANGED, insert=True)
        return await self._commit("upsert", _namespaces(data), lambda: self.backend.merge(data, KEY, merge), rows=data)

    async def rewrite(self, data: pa.Table, *, merge: Merge = _REWRITE) -> CommitEvent:
        """Rewrite existing rows (whole), conditionally as in :meth:`upsert` (or as ``merge`` says); never inserts.

        A row deleted or changed since it was read is left alone (a stale copy never brings a
        deleted memory back).
        """
        self._whole(data)
        return await self._commit("update", _namespaces(data), lambda: self.backend.merge(data, KEY, merge), rows=data)

    def whole_rows(self, stored: Sequence[dict[str, Any]]) -> pa.Table:
        """Stored rows (read whole, vector included) as the data of a conditional rewrite.

        Each at its stored revision + 1, its search text derived from its (possibly new) context.
        """
        return whole_rows(stored, self.schema)

    def _whole(self, data: pa.Table) -> None:
        """Conditional merges take whole rows.

        LanceDB 0.40 panics ("Incorrect number of arrays for StructArray fields") on a conditional
        merge of a subset of the columns once the join can use the ``id`` index; whole rows work
        (see tests/unit/storage/test_table_layer.py).
        """
        if data.column_names != self.schema.names:
            raise ValueError(f"a conditional merge needs every column in schema order; got {data.column_names}")

    async def update(self, data: pa.Table) -> CommitEvent:
        """Set the given columns of existing rows unconditionally (access statistics); never inserts."""
        data = key_not_null(data)
        return await self._commit(
            "update", _namespaces(data), lambda: self.backend.merge(data, KEY, Merge()), rows=data
        )

    async def delete(self, namespace: str, ids: Sequence[str] | None, *, only: str | None = None) -> CommitEvent:
        """Delete ``ids`` of a namespace, or the whole namespace for ``None``, in one commit.

        ``only``: a SQL predicate each row must still satisfy when the delete runs (``expires_at <=
        ...`` for an expiry sweep), so a row rewritten since it was read is kept.
        """
        where = _also(build_where(namespace, MemoryFilter(include_superseded=True), ids=ids), only)
        deleted = {namespace: tuple(ids)} if ids is not None else {}
        return await self._commit("delete", frozenset({namespace}), lambda: self.backend.delete(where), deleted=deleted)

    async def replace_rows(self, namespace: str, ids: Sequence[str], data: pa.Table) -> CommitEvent:
        """Write ``data`` (as :meth:`upsert`) and delete ``ids`` of ``namespace``, in one commit.

        The rows take the deleted ones' place at once: readers see the old set or the new one,
        never neither (a chat session replaced whole).
        """
        self._whole(data)
        where = build_where(namespace, MemoryFilter(include_superseded=True), ids=ids) if ids else None
        merge = Merge(update_where=_UNCHANGED, insert=True, delete_where=where)
        namespaces = _namespaces(data) | {namespace}
        deleted = {namespace: tuple(ids)}
        run = functools.partial(self.backend.merge, data, KEY, merge)
        return await self._commit("upsert", namespaces, run, rows=data, deleted=deleted)

    async def delete_and_rewrite(
        self, namespace: str, ids: Sequence[str], rewrites: pa.Table, *, only: str | None = None
    ) -> CommitEvent:
        """Delete ``ids`` and rewrite other rows (conditionally, as :meth:`rewrite`), in one commit.

        Deleting a successor and making its predecessor live again, or deleting a chat turn and
        taking its text out of its neighbours' context, must not be two commits: a crash between
        them would hide the predecessor for good, or keep the deleted words searchable. ``only``
        narrows the delete as in :meth:`delete`.
        """
        self._whole(rewrites)
        where = _also(build_where(namespace, MemoryFilter(include_superseded=True), ids=ids), only)
        merge = Merge(update_where=_UNCHANGED, delete_where=where)
        return await self._commit(
            "delete",
            frozenset({namespace}),
            functools.partial(self.backend.merge, rewrites, KEY, merge),
            rows=rewrites,
            deleted={namespace: tuple(ids)},
        )

    async def _commit(
        self,
        action: CommitAction,
        namespaces: frozenset[str],
        run: Callable[[], Awaitable[Any]],
        *,
        rows: pa.Table | None = None,
        deleted: Mapping[str, tuple[str, ...]] | None = None,
    ) -> CommitEvent:
        try:
            result = await self.bounded(run(), _ACTIONS[action])
        except Exception as exc:
            await notify(self._listeners, CommitEvent(action, namespaces, None, rows, deleted))
            if isinstance(exc, StorageError):
                raise
            raise storage_error(_ACTIONS[action], exc) from exc
        version = getattr(result, "version", None)
        updated, inserted = getattr(result, "num_updated_rows", None), getattr(result, "num_inserted_rows", None)
        event = CommitEvent(
            action,
            namespaces,
            int(version) if version is not None else None,
            rows,
            deleted,
            None if inserted is None else int(inserted),
            None if updated is None else int(updated),
        )
        await notify(self._listeners, event)
        return event


_ACTIONS: dict[CommitAction, str] = {"add": "write memories", "upsert": "write memories"}
_ACTIONS |= {"update": "update memories", "delete": "delete memories"}


def _also(where: str, only: str | None) -> str:
    """``where`` narrowed by the extra predicate ``only`` (none: unchanged)."""
    return where if only is None else f"({where}) AND ({only})"


def _namespaces(data: pa.Table) -> frozenset[str]:
    return frozenset(str(v) for v in data.column("namespace").unique().to_pylist())
