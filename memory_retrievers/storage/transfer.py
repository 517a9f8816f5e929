"""Export and restore: every stored field of a memory out as plain JSON values, and back, exactly.

An export record is :meth:`Memory.to_dict` with the vector: ids, timestamps, access statistics,
supersession links and the stored (unit-length, float32) vector, so a restore writes the very rows
that were read. A restore is not a write of new memories: no duplicate detection, no context fill,
no new timestamps. It upserts by (namespace, id), so restoring the same export twice changes
nothing, and it commits through the write path's single :meth:`Writer.commit`, so the table's
subscribers (views, maintenance) see it like any other commit.

float32 -> Python float -> JSON -> float -> float32 is exact (every float32 is a float64, and
``repr`` of a float round-trips), so vectors survive the text form bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from memory_retrievers.config import StoreConfig
from memory_retrievers.errors import InvalidInputError, StorageError
from memory_retrievers.filters import MemoryFilter, build_where
from memory_retrievers.storage.fields import FIELDS, WRITABLE_FIELDS, build_row
from memory_retrievers.storage.schema import SCALAR_COLUMNS, row_to_memory
from memory_retrievers.storage.table import MemoryTable
from memory_retrievers.storage.vectors import VectorMaker
from memory_retrievers.storage.writes import Writer
from memory_retrievers.validation import check_key, content_hash, to_utc, validate_record

#: The largest access_count the int64 column holds.
_MAX_INT64 = 2**63 - 1

#: Attempts at landing records whose memories another process changes meanwhile.
_ATTEMPTS = 5

__all__ = ["EXPORT_FIELDS", "RestoreResult", "RestoreRow", "Transfer", "parse_restore_record"]

#: Writable timestamp fields an export record may hold (``created_at`` is required, so apart).
_OPTIONAL_TIMESTAMPS = tuple(
    f.name
    for f in FIELDS
    if f.name in WRITABLE_FIELDS and f.name != "created_at" and f.type == pa.timestamp("us", tz="UTC")
)

#: The keys of an export record: every public field (``vector`` only when vectors are exported).
EXPORT_FIELDS: frozenset[str] = frozenset(f.name for f in FIELDS if f.public)


@dataclass(frozen=True, slots=True)
class RestoreRow:
    """One checked export record, ready to be written.

    Attributes:
        row: Every column but ``vector`` and ``search_text``, as the write path builds rows.
        vector: The stored vector (checked, unit length), or ``None`` to embed ``text``.
    """

    row: dict[str, Any]
    vector: np.ndarray | None


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """What one :meth:`~memory_retrievers.StoreAdmin.restore` wrote.

    Attributes:
        added: Memories whose (namespace, id) was not in the table.
        replaced: Memories that replaced a stored one with the same (namespace, id).
        embedded: Records without a vector, embedded with the store's embedder.
    """

    added: int
    replaced: int
    embedded: int

    @property
    def written(self) -> int:
        """Every memory written."""
        return self.added + self.replaced


def _required_timestamp(value: Any, field: str) -> datetime:
    if value is None:
        raise InvalidInputError(f"{field} is required in an export record (an ISO 8601 timestamp with offset)")
    return _timestamp(value, field)


def _timestamp(value: Any, field: str) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInputError(f"{field} is not an ISO 8601 timestamp: {value!r}") from None
    return to_utc(value, field)


def parse_restore_record(raw: Any, config: StoreConfig, *, namespace: str | None = None) -> RestoreRow:
    """Check one export record (as :meth:`StoreAdmin.export` returns it, or parsed from its JSON).

    Writable fields are validated like any write; ``id``, ``created_at`` and ``updated_at`` are
    required; ``content_hash`` is recomputed from the text (an edited text gets a correct hash).

    Args:
        raw: The record.
        config: Limits to apply.
        namespace: Used when the record names none.

    Raises:
        InvalidInputError: Naming the field and the fix.
    """
    if not isinstance(raw, Mapping):
        raise InvalidInputError(f"an export record must be a JSON object, got {type(raw).__name__}")
    unknown = set(raw) - EXPORT_FIELDS
    if unknown:
        raise InvalidInputError(
            f"unknown field(s) {sorted(map(str, unknown))} in an export record; "
            f"fields are: {', '.join(sorted(EXPORT_FIELDS))}"
        )
    if raw.get("id") is None:
        raise InvalidInputError("id is required in an export record (a restore keeps every memory's id)")
    writable = {k: v for k, v in raw.items() if k in WRITABLE_FIELDS and k not in ("vector", "created_at")}
    writable["created_at"] = _required_timestamp(raw.get("created_at"), "created_at")
    # Timestamps come back as the ISO 8601 strings an export's JSON holds them as.
    for field in _OPTIONAL_TIMESTAMPS:
        if writable.get(field) is not None:
            writable[field] = _timestamp(writable[field], field)
    rec = validate_record(writable, config, namespace=namespace)
    count = raw.get("access_count", 0)
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= _MAX_INT64:
        raise InvalidInputError(f"access_count must be an int in [0, {_MAX_INT64}], got {count!r}")
    superseded_by, accessed = raw.get("superseded_by"), raw.get("last_accessed_at")
    maintained = {
        "created_at": rec["created_at"],
        "last_accessed_at": None if accessed is None else _timestamp(accessed, "last_accessed_at"),
        "access_count": count,
        "superseded_by": None
        if superseded_by is None
        else check_key(superseded_by, field="superseded_by", max_chars=config.max_key_chars),
    }
    # build_row keeps the maintained fields of the row it "replaces": here, the exported values.
    row = build_row(
        rec, content_hash(rec["text"]), maintained, _required_timestamp(raw.get("updated_at"), "updated_at")
    )
    if row["context"] is not None:
        row["context_auto"] = None  # who filled it is not exported: judged by its content, as on old rows
    vector = raw.get("vector")
    return RestoreRow(row, None if vector is None else np.asarray(vector, dtype=np.float32))


def _key(item: RestoreRow) -> tuple[str, str]:
    return item.row["namespace"], item.row["id"]


class Transfer:
    """Reads a namespace out whole and writes export records back.

    Args:
        table: The table layer.
        vectors: Checks stored vectors and embeds records that come without one.
        writer: Its :meth:`Writer.commit` writes the rows (one commit per restore).
    """

    def __init__(self, table: MemoryTable, vectors: VectorMaker, writer: Writer) -> None:
        self._table = table
        self._vectors = vectors
        self._writer = writer

    async def export(
        self, namespace: str, *, limit: int | None, offset: int, include_vectors: bool
    ) -> list[dict[str, Any]]:
        """Export records of a namespace, superseded memories included, oldest first (ties by id)."""
        columns = [*SCALAR_COLUMNS, "vector"] if include_vectors else list(SCALAR_COLUMNS)
        table = await self._table.rows(
            build_where(namespace, MemoryFilter(include_superseded=True)),
            columns,
            limit=limit,
            offset=offset,
            newest_first=False,
            action="export memories",
        )
        return [row_to_memory(row, row.get("vector")).to_dict() for row in table.to_pylist()]

    async def restore(self, rows: Sequence[RestoreRow]) -> RestoreResult:
        """Write checked records in one commit, replacing stored memories with the same (namespace, id).

        Raises:
            InvalidInputError: A vector has the wrong width, is not finite or is all zeros.
            EmbeddingError: Embedding a record without a vector failed.
        """
        if not rows:
            return RestoreResult(0, 0, 0)
        matrix = np.empty((len(rows), self._vectors.dimension), dtype=np.float32)
        missing: list[int] = []
        for i, item in enumerate(rows):
            if item.vector is None:
                missing.append(i)
            else:
                matrix[i] = self._vectors.given(item.vector, source=f"the vector of record {i}")
        if missing:
            matrix[missing] = await self._vectors.embed([rows[i].row["text"] for i in missing])
        # The last record for a key wins, as in a write batch; one row per key reaches the commit.
        last: dict[tuple[str, str], int] = {_key(r): i for i, r in enumerate(rows)}
        todo = sorted(last.values())
        added = replaced = 0
        for _ in range(_ATTEMPTS):
            # A commit replaces a stored row only at the revision it read (see ``table``): read them now.
            stored: dict[tuple[str, str], int] = {}
            by_ns: dict[str, list[str]] = {}
            for i in todo:
                by_ns.setdefault(rows[i].row["namespace"], []).append(rows[i].row["id"])
            for ns, ids in by_ns.items():
                for id_, got in (await self._table.rows_by_id(ns, ids, columns=["id", "revision"])).items():
                    stored[(ns, id_)] = int(got["revision"])
            batch = []
            for i in todo:
                key = _key(rows[i])
                batch.append({**rows[i].row, "revision": stored[key] + 1 if key in stored else 0})
            event = await self._writer.commit(batch, matrix[todo], upsert=True)
            # Asked of the stamps this commit drew: a restore writes the revision and updated_at
            # another restore of the same records writes too, so those cannot tell whose row landed
            # (issue 40 item 13: concurrent restores of new ids were each told "added").
            missed = set() if event.landed == len(todo) else await self._writer.not_landed(batch, event)
            replaced += sum(1 for k in stored if k not in missed)
            added += sum(1 for i in todo if _key(rows[i]) not in stored and _key(rows[i]) not in missed)
            # Rows another writer inserted or changed between our read and our commit go again.
            todo = [i for i in todo if _key(rows[i]) in missed]
            if not todo:
                return RestoreResult(added=added, replaced=replaced, embedded=len(missing))
        raise StorageError(f"{len(todo)} record(s) could not be restored: their memories kept changing; retry")
