"""The one edge to LanceDB: the operations the store needs, named, and their LanceDB implementation.

Everything above the table layer asks for what it wants in the store's own terms: a
:class:`Request` (a filter already compiled by :func:`memory_retrievers.filters.build_where`, the
columns, an order, a nearest-vector or full-text ranking) or an :data:`IndexKind`. Only this
module (and the commits in ``table.py``) turn those into LanceDB calls, so another backend
implements :class:`TableBackend` instead of being patched into search, dedup, maintenance and stats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, Protocol

import numpy as np
import pyarrow as pa

__all__ = [
    "INDEX_KINDS",
    "IndexInfo",
    "IndexKind",
    "LanceBackend",
    "Merge",
    "Request",
    "TableBackend",
    "index_config",
]

#: The indexes the store builds, by the name LanceDB lists them under (``"<kind>:<column>"`` keys).
IndexKind = Literal["BTree", "Bitmap", "LabelList", "FTS", "HnswSq"]
INDEX_KINDS: tuple[IndexKind, ...] = ("BTree", "Bitmap", "LabelList", "FTS", "HnswSq")


@dataclass(frozen=True)
class Request:
    """One read: rows matching ``where``, ranked by a vector or a text when given.

    Attributes:
        where: A SQL predicate compiled by ``build_where`` (hex literals, see filters.py).
        columns: Columns to return. A ranked read adds ``_distance`` (vector) or ``_score`` (text).
        limit: At most this many rows (``None``: all).
        offset: Rows to skip.
        order: ``(column, ascending)`` pairs, in order of precedence.
        vector: Nearest rows to this vector (cosine distance), or one list per query vector
            (then each row carries ``query_index``).
        text: BM25 full-text match of this text on ``text_column``.
        text_column: The FTS-indexed column for ``text``.
        refine: Re-rank this many times ``limit`` candidates with full vectors (quantized indexes).
    """

    where: str | None
    columns: Sequence[str]
    limit: int | None = None
    offset: int = 0
    order: Sequence[tuple[str, bool]] = field(default_factory=tuple)
    vector: np.ndarray | Sequence[np.ndarray] | None = None
    text: str | None = None
    text_column: str | None = None
    refine: int | None = None


@dataclass(frozen=True)
class Merge:
    """How a merge by key treats matched, unmatched and missing rows (one commit).

    Attributes:
        update: Rewrite matched rows with the source's (all columns given).
        update_where: Only matched rows satisfying this (``target.``/``source.`` columns).
        insert: Insert unmatched source rows, with Lance's same-key conflict check (``keys.inserting``).
        delete_where: Delete target rows the source does not hold that satisfy this (compiled filter).
        in_source_order: Join by hashing, never through the ``id`` index: the rewritten rows then
            land in the order of the source (the index path writes them in the table's order).
    """

    update: bool = True
    update_where: str | None = None
    insert: bool = False
    delete_where: str | None = None
    in_source_order: bool = False


@dataclass(frozen=True)
class IndexInfo:
    """One index of the table and how many rows it covers."""

    name: str
    kind: str
    columns: tuple[str, ...]
    indexed_rows: int
    unindexed_rows: int


class TableBackend(Protocol):
    """What the store needs of a table: reads, commits, indexes, optimize, versions.

    ``MemoryTable`` (``table.py``) runs every call within the store's deadline, turns failures into
    ``StorageError`` and tells its subscribers what each commit changed.
    """

    async def search(self, request: Request) -> pa.Table:
        """Run one read."""
        ...

    async def count(self, where: str | None) -> int:
        """Rows matching a compiled filter (all for ``None``)."""
        ...

    async def checkout_latest(self) -> None:
        """Move to the latest version (other processes' commits included)."""
        ...

    async def append(self, data: pa.Table) -> Any:
        """Add rows in one commit; the result has ``version``."""
        ...

    async def merge(self, data: pa.Table, key: Sequence[str], merge: Merge) -> Any:
        """Merge rows by the ``key`` columns in one commit; the result has ``version`` and row counts."""
        ...

    async def delete(self, where: str) -> Any:
        """Delete the rows matching a compiled filter in one commit; the result has ``version``."""
        ...

    async def indexes(self) -> list[IndexInfo]:
        """Every index with its coverage."""
        ...

    async def create_index(self, column: str, kind: IndexKind) -> None:
        """Build (or rebuild, replacing it) the index ``kind`` on ``column``."""
        ...

    async def drop_index(self, name: str) -> None:
        """Drop an index."""
        ...

    async def optimize(self, cleanup_older_than: timedelta, *, delete_unverified: bool = False) -> None:
        """Fold new rows into the indexes, compact fragments, prune versions older than given."""
        ...

    async def versions(self) -> list[dict[str, Any]]:
        """Every version kept: ``version``, ``timestamp``, ``metadata``."""
        ...

    async def rewrite_all_rows(self) -> None:
        """Rewrite every live row into new files in one commit (drops deletion files)."""
        ...

    async def table_stats(self) -> dict[str, Any]:
        """Sizes and fragments: ``total_bytes``, ``fragment_stats``."""
        ...

    async def version(self) -> int:
        """The version this handle sees."""
        ...

    async def schema(self) -> pa.Schema:
        """The stored schema, metadata included."""
        ...


def index_config(kind: str, column: str | None = None) -> Any:
    """LanceDB's config for index ``kind`` (FTS without positions: they crash optimize, lance#7653).

    Raises:
        ValueError: Not a kind of :data:`IndexKind`.
    """
    from lancedb.index import FTS, Bitmap, BTree, HnswSq, LabelList

    configs: dict[str, Any] = {
        "BTree": BTree,
        "Bitmap": Bitmap,
        "LabelList": LabelList,
        "FTS": lambda: FTS(with_position=False),
        "HnswSq": lambda: HnswSq(distance_type="cosine"),
    }
    if kind not in configs:
        raise ValueError(f"unknown index kind {kind!r} on {column!r}; known: {', '.join(INDEX_KINDS)}")
    return configs[kind]()


class LanceBackend:
    """:class:`TableBackend` over a LanceDB ``AsyncTable`` (or the engine's stand-in for one).

    Args:
        handle: The open table.
    """

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def compile(self, request: Request) -> Any:
        """The LanceDB query for ``request`` (run with ``await query.to_arrow()``)."""
        query = self.handle.query()
        if request.vector is not None:
            query = query.nearest_to(request.vector).distance_type("cosine")
            if request.refine is not None:
                query = query.refine_factor(request.refine)
        elif request.text is not None:
            query = query.nearest_to_text(request.text, columns=request.text_column)
        if request.where is not None:
            query = query.where(request.where)
        query = query.select(list(request.columns))
        if request.order:
            from lancedb.query import ColumnOrdering

            query = query.order_by([ColumnOrdering(column_name=c, ascending=asc) for c, asc in request.order])
        if request.limit is not None:
            query = query.limit(request.limit)
        if request.offset:
            query = query.offset(request.offset)
        return query

    async def search(self, request: Request) -> pa.Table:
        """Run one read."""
        result: pa.Table = await self.compile(request).to_arrow()
        return result

    async def count(self, where: str | None) -> int:
        """Rows matching a compiled filter (all for ``None``)."""
        return int(await self.handle.count_rows(where))

    async def checkout_latest(self) -> None:
        """Move to the latest version (other processes' commits included)."""
        await self.handle.checkout_latest()

    async def append(self, data: pa.Table) -> Any:
        """Add rows in one commit."""
        return await self.handle.add(data)

    async def merge(self, data: pa.Table, key: Sequence[str], merge: Merge) -> Any:
        """Merge rows by the ``key`` columns in one commit (see :class:`Merge`)."""
        from memory_retrievers.storage.keys import inserting

        builder = self.handle.merge_insert(list(key))
        if merge.update:
            builder = builder.when_matched_update_all(where=merge.update_where)
        if merge.insert:
            builder = inserting(builder)
        if merge.delete_where is not None:
            builder = builder.when_not_matched_by_source_delete(merge.delete_where)
        if merge.in_source_order:
            builder = builder.use_index(False)
        return await builder.execute(data)

    async def delete(self, where: str) -> Any:
        """Delete the rows matching a compiled filter in one commit."""
        return await self.handle.delete(where)

    async def indexes(self) -> list[IndexInfo]:
        """Every index with its coverage."""
        out = []
        for index in await self.handle.list_indices():
            stats = await self.handle.index_stats(index.name)
            out.append(
                IndexInfo(
                    index.name,
                    str(index.index_type),
                    tuple(index.columns),
                    int(stats.num_indexed_rows) if stats else 0,
                    int(stats.num_unindexed_rows) if stats else 0,
                )
            )
        return out

    async def index_keys(self) -> set[str]:
        """Every index as ``"<kind>:<column>"`` (one listing, no coverage read)."""
        return {f"{i.index_type}:{c}" for i in await self.handle.list_indices() for c in i.columns}

    async def listed_indexes(self) -> list[tuple[str, str, str]]:
        """Every index as ``(name, kind, first column)`` (one listing, no coverage read)."""
        return [(i.name, str(i.index_type), i.columns[0]) for i in await self.handle.list_indices()]

    async def create_index(self, column: str, kind: IndexKind) -> None:
        """Build (or rebuild, replacing it) the index ``kind`` on ``column``."""
        await self.handle.create_index(column, config=index_config(kind, column), replace=True)

    async def drop_index(self, name: str) -> None:
        """Drop an index."""
        await self.handle.drop_index(name)

    async def optimize(self, cleanup_older_than: timedelta, *, delete_unverified: bool = False) -> None:
        """Fold new rows into the indexes, compact fragments, prune versions older than given."""
        await self.handle.optimize(cleanup_older_than=cleanup_older_than, delete_unverified=delete_unverified)

    async def versions(self) -> list[dict[str, Any]]:
        """Every version kept: ``version``, ``timestamp``, ``metadata``."""
        return list(await self.handle.list_versions())

    async def rewrite_all_rows(self) -> None:
        """Rewrite every live row into new files in one commit (an update setting ``id`` to itself)."""
        await self.handle.update(updates_sql={"id": "id"})

    async def table_stats(self) -> dict[str, Any]:
        """Sizes and fragments (the async API gives plain dicts; the sync one wraps them)."""
        return dict(await self.handle.stats())

    async def version(self) -> int:
        """The version this handle sees."""
        return int(await self.handle.version())

    async def schema(self) -> pa.Schema:
        """The stored schema, metadata included."""
        schema: pa.Schema = await self.handle.schema()
        return schema
