"""A health read of the table: memories per namespace and kind, index coverage, fragments, versions, size.

Everything here is read-only and cheap enough to run on demand: one scan of three small columns,
LanceDB's own index and fragment statistics, the version list, and (for a local folder) a walk of
the table's files.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memory_retrievers.errors import StorageError
from memory_retrievers.storage.backend import Request
from memory_retrievers.storage.schema import META_DIMENSION, META_EMBEDDER, META_SCHEMA_VERSION
from memory_retrievers.storage.table import MemoryTable, is_uri, storage_error

__all__ = ["IndexCoverage", "NamespaceCounts", "StoreStats", "human_bytes", "read_stats"]


@dataclass(frozen=True, slots=True)
class NamespaceCounts:
    """Memories of one namespace.

    Attributes:
        namespace: The namespace.
        live: Memories not superseded (what searches see).
        superseded: Memories replaced by a newer one.
        kinds: Live memories per kind.
    """

    namespace: str
    live: int
    superseded: int
    kinds: dict[str, int]


@dataclass(frozen=True, slots=True)
class IndexCoverage:
    """One LanceDB index and how much of the table it covers.

    Attributes:
        name: The index name.
        index_type: ``FTS``, ``BTREE``, ``BITMAP``, ``LABEL_LIST`` or a vector index type.
        columns: The indexed columns.
        indexed_rows: Rows the index covers.
        unindexed_rows: Rows written since it was last updated (scanned flat until ``optimize``).
    """

    name: str
    index_type: str
    columns: tuple[str, ...]
    indexed_rows: int
    unindexed_rows: int


@dataclass(frozen=True, slots=True)
class StoreStats:
    """What :meth:`~memory_retrievers.store.admin.StoreAdmin.stats` (``store.admin.stats()``) reports.

    Attributes:
        uri: Where the database lives.
        table: The table name.
        embedder: The embedding model recorded in the table.
        dimension: Its vector width.
        schema_version: The table's schema version.
        rows: Every row (all namespaces, superseded ones included).
        namespaces: Counts per namespace, sorted by name.
        indexes: Every index, sorted by name.
        fragments: Data fragments (each commit adds one until ``optimize`` compacts them).
        small_fragments: Fragments LanceDB considers small enough to compact.
        version: The current table version.
        versions: Versions kept on disk (``optimize`` prunes old ones).
        data_bytes: Size of the current version's data and index files (LanceDB's figure).
        disk_bytes: Size of the table folder, old versions included; ``None`` for object stores.
    """

    uri: str
    table: str
    embedder: str
    dimension: int
    schema_version: int
    rows: int
    namespaces: tuple[NamespaceCounts, ...]
    indexes: tuple[IndexCoverage, ...]
    fragments: int
    small_fragments: int
    version: int
    versions: int
    data_bytes: int
    disk_bytes: int | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


def human_bytes(n: int) -> str:
    """A byte count for people: ``512 B``, ``1.5 KB``, ``2.0 GB`` (binary units, GB at most)."""
    value = float(n)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _folder_size(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file():
                total += path.stat().st_size
        except OSError:  # a file removed by a concurrent optimize: not part of the table any more
            continue
    return total


def _namespace_counts(columns: pa.Table) -> tuple[NamespaceCounts, ...]:
    """Live memories per namespace and kind, and superseded ones per namespace."""
    live = pc.is_null(columns.column("superseded_by"))
    counts: dict[str, dict[str, int]] = {}
    superseded: dict[str, int] = {}
    for ns, kind, is_live in zip(
        columns.column("namespace").to_pylist(), columns.column("kind").to_pylist(), live.to_pylist(), strict=True
    ):
        kinds = counts.setdefault(ns, {})
        if is_live:
            kinds[kind] = kinds.get(kind, 0) + 1
        else:
            superseded[ns] = superseded.get(ns, 0) + 1
    return tuple(
        NamespaceCounts(ns, sum(kinds.values()), superseded.get(ns, 0), dict(sorted(kinds.items())))
        for ns, kinds in sorted(counts.items())
    )


async def read_stats(table: MemoryTable) -> StoreStats:
    """Read the statistics of an open table.

    Raises:
        StorageError: LanceDB could not read them.
    """
    request = Request(None, ["namespace", "kind", "superseded_by"])
    columns = await table.search(request, "read the namespace and kind columns")
    namespaces = _namespace_counts(columns)
    backend = table.backend
    action = f"read the statistics of {table.where}"
    try:
        indexes = [
            IndexCoverage(i.name, i.kind, i.columns, i.indexed_rows, i.unindexed_rows)
            for i in await table.bounded(backend.indexes(), action)
        ]
        table_stats = await table.bounded(backend.table_stats(), action)
        versions = await table.bounded(backend.versions(), action)
        version = await table.bounded(backend.version(), action)
        schema = await table.bounded(backend.schema(), action)
    except StorageError:
        raise
    except Exception as exc:
        raise storage_error(f"read the statistics of {table.where}", exc) from exc
    meta = schema.metadata or {}
    # The async API returns plain dicts here (the sync API wraps them in dataclasses).
    fragments = table_stats["fragment_stats"]
    disk = (
        None
        if is_uri(table.uri)
        else await asyncio.to_thread(_folder_size, Path(table.uri) / f"{table.table_name}.lance")
    )
    return StoreStats(
        uri=table.uri,
        table=table.table_name,
        embedder=meta.get(META_EMBEDDER, b"").decode("utf-8"),
        dimension=int(meta.get(META_DIMENSION, b"0")),
        schema_version=int(meta.get(META_SCHEMA_VERSION, b"0")),
        rows=columns.num_rows,
        namespaces=namespaces,
        indexes=tuple(sorted(indexes, key=lambda i: i.name)),
        fragments=int(fragments["num_fragments"]),
        small_fragments=int(fragments["num_small_fragments"]),
        version=int(version),
        versions=len(versions),
        data_bytes=int(table_stats["total_bytes"]),
        disk_bytes=disk,
    )
