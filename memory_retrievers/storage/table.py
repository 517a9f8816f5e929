"""The table layer: the one owner of the LanceDB table.

Reads go through it (every LanceDB error becomes a :class:`StorageError` that names the action),
and so does every commit. A commit tells the layer's subscribers what it changed, in a
:class:`CommitEvent`: the view cache and maintenance subscribe, instead of every write calling
their bookkeeping by hand (Lucene's writer/reader split: the writer knows what it committed).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import lancedb
import pyarrow as pa
from lancedb.query import ColumnOrdering

from ..errors import EmbedderMismatchError, MemoryRetrieversError, SchemaMismatchError, StorageError
from ..filters import MemoryFilter, build_where
from ..schema import META_DIMENSION, META_EMBEDDER, META_SCHEMA_VERSION, SCHEMA_VERSION

__all__ = ["CommitEvent", "CommitListener", "MemoryTable", "check_schema", "is_uri", "storage_error"]

logger = logging.getLogger(__name__)

_KEY = ["namespace", "id"]
_ID_CHUNK = 1000  # ids per IN list: keeps filters short

CommitAction = Literal["add", "upsert", "update", "delete"]


def is_uri(value: str) -> bool:
    """Whether a store location is a URI (``s3://…``, ``memory://``) rather than a local folder."""
    return "://" in value


def storage_error(action: str, exc: BaseException) -> StorageError:
    """The error for a failed LanceDB call, naming what the store was doing."""
    return StorageError(f"LanceDB could not {action}: {exc}")


@dataclass(frozen=True, slots=True)
class CommitEvent:
    """What one commit changed, or may have changed when it failed.

    Attributes:
        action: ``add`` (new rows), ``upsert`` (rows inserted or replaced whole), ``update``
            (some columns of existing rows, e.g. access statistics) or ``delete``.
        namespaces: Every namespace the commit touched.
        version: The table version it produced; ``None`` when it failed (it may or may not have
            landed, so subscribers must assume the namespaces changed).
        rows: The rows written (every column given, vectors included) for add/upsert/update; for a
            delete, the rows it changed besides (predecessors made live again), if any.
        deleted: Ids deleted per namespace; a namespace listed in ``namespaces`` but absent here
            was deleted whole (``forget``).
    """

    action: CommitAction
    namespaces: frozenset[str]
    version: int | None
    rows: pa.Table | None = None
    deleted: Mapping[str, tuple[str, ...]] | None = None

    @property
    def failed(self) -> bool:
        """True when the commit raised."""
        return self.version is None

    @property
    def row_count(self) -> int:
        """Rows written (0 for a delete)."""
        return 0 if self.rows is None else self.rows.num_rows


#: A commit subscriber; it may return an awaitable, which the commit awaits.
CommitListener = Callable[[CommitEvent], Awaitable[None] | None]


class MemoryTable:
    """One LanceDB table of memories: open or create it, read it, commit to it.

    Args:
        uri: Local folder or LanceDB URI.
        table_name: The table.
        schema: The expected schema; its metadata (schema version, embedder, dimension) is checked
            against an existing table's.
        storage_options: LanceDB storage options (object stores).
        read_consistency_interval: How often the handle looks for other processes' commits.
    """

    def __init__(
        self,
        *,
        uri: str,
        table_name: str,
        schema: pa.Schema,
        storage_options: Mapping[str, str] | None,
        read_consistency_interval: timedelta | None,
    ) -> None:
        self.uri = uri
        self.table_name = table_name
        self.schema = schema
        self._storage_options = dict(storage_options) if storage_options else None
        self._consistency = read_consistency_interval
        self._table: Any = None
        self._listeners: list[CommitListener] = []
        self.indexed: set[str] = set()
        """Indexes present, as ``"<IndexType>:<column>"`` (refreshed by :meth:`refresh_indexes`)."""

    @property
    def where(self) -> str:
        """Names the table in messages."""
        return f"table {self.table_name!r} at {self.uri!r}"

    @property
    def handle(self) -> Any:
        """The LanceDB ``AsyncTable`` (for index builds and optimize)."""
        return self._table

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
        """
        if not is_uri(self.uri):
            try:
                Path(self.uri).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(
                    f"cannot use {self.uri!r} as the store folder ({exc.strerror or exc}); pass a folder path "
                    "that can be created or already is a folder"
                ) from exc
        try:
            db = await lancedb.connect_async(
                self.uri, storage_options=self._storage_options, read_consistency_interval=self._consistency
            )
            try:
                table = await db.open_table(self.table_name)
            except ValueError:  # not found: create it (exist_ok: another process may race us)
                table = await db.create_table(self.table_name, schema=self.schema, exist_ok=True)
            found = await table.schema()
        except MemoryRetrieversError:
            raise
        except Exception as exc:
            raise storage_error(f"open {self.where}", exc) from exc
        check_schema(found, self.schema, self.where)
        self._table = table
        await self.refresh_indexes()

    async def refresh_indexes(self) -> set[str]:
        """Re-read which indexes exist (another writer may have built some)."""
        indexed: set[str] = set()
        for index in await self._table.list_indices():
            for column in index.columns:
                indexed.add(f"{index.index_type}:{column}")
        self.indexed = indexed
        return indexed

    # ------------------------------------------------------------------ reads
    def query(self) -> Any:
        """A new LanceDB query on the table (run it with :meth:`read`)."""
        return self._table.query()

    async def read(self, query: Any, action: str) -> pa.Table:
        """Run a query built with :meth:`query`; a failure is a StorageError naming ``action``."""
        try:
            return await query.to_arrow()
        except Exception as exc:
            raise storage_error(action, exc) from exc

    async def rows(
        self,
        where: str,
        columns: Sequence[str],
        *,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool | None = None,
        action: str = "read the table",
    ) -> pa.Table:
        """Rows matching ``where``; ordered by ``created_at`` when ``newest_first`` is not ``None``.

        Equal timestamps (a frozen clock, imported history) are ordered by id, so pages never skip or
        repeat a row and the same read gives the same order.
        """
        query = self.query().where(where).select(list(columns))
        if newest_first is not None:
            query = query.order_by(
                [
                    ColumnOrdering(column_name="created_at", ascending=not newest_first),
                    ColumnOrdering(column_name="id", ascending=True),
                ]
            )
        if limit is not None:
            query = query.limit(limit)
        if offset:
            query = query.offset(offset)
        return await self.read(query, action)

    async def rows_by_id(
        self, namespace: str, ids: Sequence[str], *, columns: Sequence[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        """Stored rows of ``ids`` in ``namespace`` (superseded ones included), by id."""
        if not ids:
            return {}
        cols = list(columns) if columns is not None else [f.name for f in self.schema]
        out: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), _ID_CHUNK):
            chunk = unique[start : start + _ID_CHUNK]
            table = await self.rows(build_where(namespace, MemoryFilter(include_superseded=True), ids=chunk), cols)
            for row in table.to_pylist():
                out[row["id"]] = row
        return out

    async def count(self, where: str | None = None, *, action: str = "count rows") -> int:
        """Rows matching ``where`` (every row for ``None``)."""
        try:
            return int(await self._table.count_rows(where))
        except Exception as exc:
            raise storage_error(action, exc) from exc

    async def count_namespace(self, namespace: str) -> int:
        """Rows of a namespace, superseded ones included."""
        return await self.count(build_where(namespace, MemoryFilter(include_superseded=True)))

    async def version(self) -> int:
        """The version this handle sees (after ``read_consistency_interval``, others' commits too)."""
        try:
            return int(await self._table.version())
        except Exception as exc:
            raise storage_error("read the table version", exc) from exc

    # ------------------------------------------------------------------ commits
    def subscribe(self, listener: CommitListener) -> None:
        """Call ``listener`` after every commit, in subscription order (failed commits included)."""
        self._listeners.append(listener)

    async def add(self, data: pa.Table) -> CommitEvent:
        """Append new rows in one commit."""
        return await self._commit("add", _namespaces(data), lambda: self._table.add(data), rows=data)

    async def upsert(self, data: pa.Table) -> CommitEvent:
        """Insert rows, replacing whole any row with the same (namespace, id), in one commit."""
        builder = self._table.merge_insert(_KEY).when_matched_update_all().when_not_matched_insert_all()
        return await self._commit("upsert", _namespaces(data), lambda: builder.execute(data), rows=data)

    async def update(self, data: pa.Table) -> CommitEvent:
        """Set the given columns of existing rows, matched by (namespace, id); others are ignored."""
        builder = self._table.merge_insert(_KEY).when_matched_update_all()
        return await self._commit("update", _namespaces(data), lambda: builder.execute(data), rows=data)

    async def delete(self, namespace: str, ids: Sequence[str] | None) -> CommitEvent:
        """Delete ``ids`` of a namespace, or the whole namespace for ``None``, in one commit."""
        where = build_where(namespace, MemoryFilter(include_superseded=True), ids=ids)
        deleted = {namespace: tuple(ids)} if ids is not None else {}
        return await self._commit("delete", frozenset({namespace}), lambda: self._table.delete(where), deleted=deleted)

    async def delete_and_restore(self, namespace: str, ids: Sequence[str], restored: pa.Table) -> CommitEvent:
        """Delete ``ids`` and set columns of the ``restored`` rows, together in one commit.

        Deleting a successor and making its predecessor live again must not be two commits: a crash
        between them would hide the predecessor for good, or show both.
        """
        where = build_where(namespace, MemoryFilter(include_superseded=True), ids=ids)
        builder = self._table.merge_insert(_KEY).when_matched_update_all().when_not_matched_by_source_delete(where)
        return await self._commit(
            "delete",
            frozenset({namespace}),
            lambda: builder.execute(restored),
            rows=restored,
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
            result = await run()
        except Exception as exc:
            await self._emit(CommitEvent(action, namespaces, None, rows, deleted))
            raise storage_error(_ACTIONS[action], exc) from exc
        version = getattr(result, "version", None)
        event = CommitEvent(action, namespaces, int(version) if version is not None else None, rows, deleted)
        await self._emit(event)
        return event

    async def _emit(self, event: CommitEvent) -> None:
        # The commit has happened (or failed) whatever a subscriber does: a subscriber's error is
        # logged, never raised, or a caller would retry a write that landed or report a loss.
        for listener in self._listeners:
            try:
                outcome = listener(event)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.warning("memory-retrievers: a commit subscriber failed after a %s", event.action, exc_info=True)


_ACTIONS: dict[CommitAction, str] = {
    "add": "write memories",
    "upsert": "write memories",
    "update": "update memories",
    "delete": "delete memories",
}


def _namespaces(data: pa.Table) -> frozenset[str]:
    return frozenset(str(v) for v in data.column("namespace").unique().to_pylist())


def check_schema(found: pa.Schema, expected: pa.Schema, where: str) -> None:
    """Refuse a table of another schema version or embedding model (vectors of two models never mix).

    Raises:
        SchemaMismatchError: Not ours, or another schema version.
        EmbedderMismatchError: Another embedder (name or dimension); it is also a
            ``DimensionMismatchError``, so code catching either keeps working.
    """
    meta = found.metadata or {}
    want = expected.metadata or {}
    version = meta.get(META_SCHEMA_VERSION)
    if version is None:
        raise SchemaMismatchError(
            f"{where} was not created by memory-retrievers (no schema version recorded); use another table_name or path"
        )
    if int(version) != SCHEMA_VERSION:
        raise SchemaMismatchError(
            f"{where} has schema version {int(version)}, this memory-retrievers reads version {SCHEMA_VERSION}; "
            + (
                "upgrade memory-retrievers"
                if int(version) > SCHEMA_VERSION
                else "export it with the older version (store.list) and re-import"
            )
        )
    dim, name = int(meta.get(META_DIMENSION, b"0")), meta.get(META_EMBEDDER, b"").decode("utf-8")
    want_dim, want_name = int(want[META_DIMENSION]), want[META_EMBEDDER].decode("utf-8")
    if dim != want_dim or name != want_name:
        raise EmbedderMismatchError(
            f"{where} was written with embedder {name!r} (dimension {dim}), but this store uses {want_name!r} "
            f"(dimension {want_dim}); pass the original embedder, or use a new table_name/path for the new model "
            "(vectors of two models do not mix)"
        )
