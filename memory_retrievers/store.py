"""`MemoryStore`: memories in one LanceDB table, with dedup, supersession and search primitives.

The implementation is async, over LanceDB's native async API; every sync method is a thin shell
that runs its async twin on a private loop thread (see ``_loop``), so both behave identically.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, overload

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.index import FTS, Bitmap, BTree, HnswSq, LabelList
from lancedb.query import ColumnOrdering

from . import _loop
from ._view import NamespaceView
from .config import StoreConfig, validated
from .context import window_contexts
from .dedup import first_duplicate_in_batch
from .embeddings import Embedder, SentenceTransformerEmbedder, check_vectors
from .errors import (
    ConfigError,
    DimensionMismatchError,
    EmbeddingError,
    InvalidInputError,
    MemoryRetrieversError,
    NotFoundError,
    SchemaMismatchError,
    StorageError,
)
from .filters import MemoryFilter, build_where, coerce_filter, sql_list, sql_literal
from .models import AddedMemory, DedupPolicy, FtsField, Hit, Memory, MemoryKind, WriteAction
from .schema import (
    META_DIMENSION,
    META_EMBEDDER,
    META_SCHEMA_VERSION,
    SCALAR_COLUMNS,
    SCHEMA_VERSION,
    memory_schema,
    rows_to_memories,
    search_text,
    to_arrow,
)
from .validation import WRITABLE_FIELDS, check_key, check_text, content_hash, to_utc, validate_record

__all__ = ["DEFAULT_TABLE", "MemoryStore", "default_store_path"]

logger = logging.getLogger(__name__)

DEFAULT_TABLE = "memories"
_KEY = ["namespace", "id"]
_MAX_QUERY_K = 10_000
_MAX_QUERY_CHARS = 8_000

#: Indexes the store keeps: column -> (index name, config factory).
_SCALAR_INDEXES: dict[str, Callable[[], Any]] = {
    "namespace": Bitmap,
    "id": BTree,
    "kind": Bitmap,
    "session_id": BTree,
    "project": Bitmap,
    "topic": Bitmap,
    "pinned": Bitmap,
    "created_at": BTree,
    "content_hash": BTree,
    "tags": LabelList,
    "entities": LabelList,
}
#: Full-text (BM25) indexes. Positions stay off: phrase positions crash optimize() (lance#7653).
_FTS_COLUMNS = {FtsField.TEXT: "text", FtsField.CONTEXT: "search_text", FtsField.ENTITIES: "entities"}


def default_store_path() -> Path:
    """Where ``MemoryStore()`` keeps its table when no URI is given.

    The user data directory (``~/.local/share/memory-retrievers/store`` on Linux), never a temp dir.
    """
    import platformdirs

    return platformdirs.user_data_path("memory-retrievers") / "store"


def _is_uri(value: str) -> bool:
    return "://" in value


def _now_utc() -> datetime:
    return datetime.now(timezone.utc)


def _ranked(table: pa.Table) -> pa.Table:
    """Rows by score, ties by id.

    LanceDB returns equal scores in arbitrary (parallel) order, and rank fusion would turn that into
    different results for the same query.
    """
    if table.num_rows < 2 or "id" not in table.column_names:
        return table
    return table.sort_by([("_score", "descending"), ("id", "ascending")])


_CONFLICT_ATTEMPTS = 10


async def _retry_conflicts(action: str, attempt: Callable[[], Awaitable[Any]], *, defer_ok: bool = False) -> Any:
    """Run maintenance, retrying LanceDB's *retryable* commit conflicts.

    Index builds and compaction commit a new table version; when another thread or process
    committed first, Lance reports a retryable conflict. Retrying (with a short, growing pause)
    is what it asks for; any other error raises StorageError. Conflicts that persist raise too,
    unless ``defer_ok``: compaction that concurrent deletes and updates keep preempting is only
    deferred (the data is intact), so it is logged and left to the next optimize.
    """
    for n in range(_CONFLICT_ATTEMPTS):
        try:
            return await attempt()
        except Exception as exc:
            conflict = "retryable commit conflict" in str(exc).lower()
            if conflict and defer_ok and n == _CONFLICT_ATTEMPTS - 1:
                logger.warning("%s deferred: concurrent writes kept preempting it (%s)", action, exc)
                return None
            if not conflict or n == _CONFLICT_ATTEMPTS - 1:
                raise _storage(action, exc) from exc
            # Jittered, growing pauses (20 ms .. ~1 s) so racing maintainers do not retry in lockstep.
            await asyncio.sleep(min(1.0, 0.02 * 2**n) * (0.5 + random.random()))
    raise AssertionError("unreachable")  # pragma: no cover


def _storage(action: str, exc: Exception) -> StorageError:
    return StorageError(f"LanceDB could not {action}: {exc}")


class _AccessLog:
    """Accesses recorded by recall, held in memory and written in batches (never per recall).

    A LanceDB update rewrites rows and pushes them out of the indexes until the next optimize.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], tuple[int, datetime]] = {}

    def record(self, namespace: str, ids: Iterable[str], at: datetime) -> int:
        with self._lock:
            for id_ in ids:
                count, last = self._pending.get((namespace, id_), (0, at))
                self._pending[(namespace, id_)] = (count + 1, max(last, at))
            return len(self._pending)

    def take(self) -> dict[tuple[str, str], tuple[int, datetime]]:
        with self._lock:
            pending, self._pending = self._pending, {}
            return pending

    def restore(self, pending: dict[tuple[str, str], tuple[int, datetime]]) -> None:
        with self._lock:
            for key, (count, last) in pending.items():
                have, have_last = self._pending.get(key, (0, last))
                self._pending[key] = (have + count, max(have_last, last))

    def peek(self, namespace: str, id_: str) -> tuple[int, datetime] | None:
        with self._lock:
            return self._pending.get((namespace, id_))


class MemoryStore:
    """Long-term memories in one embedded LanceDB table.

    Every read and write names a ``namespace`` (the user or tenant); no call ever returns a memory
    of another namespace. Writes validate everything first, then commit once per batch.

    Args:
        uri: A local folder (created if missing) or a LanceDB URI such as ``s3://bucket/path``.
            Defaults to :func:`default_store_path`. An existing table is opened, never overwritten.
        table_name: Table inside the database.
        embedder: Any :class:`~memory_retrievers.embeddings.Embedder`; defaults to the offline
            all-MiniLM-L6-v2 :class:`SentenceTransformerEmbedder`.
        config: :class:`StoreConfig` or a dict of its fields.
        storage_options: Passed to LanceDB for object storage (credentials, endpoint...).
        clock: Returns the current UTC time; inject one for reproducible timestamps.

    Raises:
        ConfigError: Bad config or embedder.
        SchemaMismatchError: The table was written by another schema version or embedding model.
        StorageError: The database could not be opened.

    Example:
        >>> store = MemoryStore("./memories")                                   # doctest: +SKIP
        >>> store.add("Alice prefers the dark theme", namespace="alice", kind="preference")
        >>> store.fts_search("theme", namespace="alice")
    """

    def __init__(
        self,
        uri: str | os.PathLike[str] | None = None,
        *,
        table_name: str = DEFAULT_TABLE,
        embedder: Embedder | None = None,
        config: StoreConfig | Mapping[str, Any] | None = None,
        storage_options: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] | None = None,
        _open: bool = True,
    ) -> None:
        self._config: StoreConfig = validated(StoreConfig, config, "StoreConfig")
        self._embedder: Embedder = embedder if embedder is not None else SentenceTransformerEmbedder()
        if not isinstance(self._embedder, Embedder):
            raise ConfigError(
                f"embedder {type(self._embedder).__name__} does not implement the Embedder protocol "
                "(name, dimension, embed_documents, embed_query, aembed_documents, aembed_query)"
            )
        if not isinstance(table_name, str) or not table_name.replace("_", "").replace("-", "").isalnum():
            raise ConfigError(f"table_name must be letters, digits, '_' or '-', got {table_name!r}")
        self._uri = str(uri) if uri is not None else str(default_store_path())
        self._table_name = table_name
        self._storage_options = dict(storage_options) if storage_options else None
        self._clock = clock or _now_utc
        self._dimension = int(self._embedder.dimension)
        self._schema = memory_schema(self._dimension, self._embedder.name)
        self._table: Any = None
        self._indexed: set[str] = set()
        self._counter_lock = threading.Lock()
        self._rows_since_optimize = 0
        self._commits_since_optimize = 0
        self._access = _AccessLog()
        # namespace -> (has entity-tagged memories, monotonic time checked); see has_entities()
        self._entity_cache: dict[str, tuple[bool, float]] = {}
        # In-memory namespace views for recall (see _aview), the table versions this store wrote,
        # and a per-namespace write counter that tells a view built during a write to go away.
        self._views: dict[str, NamespaceView] = {}
        self._own_versions: set[int] = set()
        self._epochs: dict[str, int] = {}
        self._maintenance = threading.Lock()
        self._closed = False
        if _open:
            _loop.run_sync(self._aopen())

    @classmethod
    async def aopen(
        cls,
        uri: str | os.PathLike[str] | None = None,
        *,
        table_name: str = DEFAULT_TABLE,
        embedder: Embedder | None = None,
        config: StoreConfig | Mapping[str, Any] | None = None,
        storage_options: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> MemoryStore:
        """Async constructor: same arguments as :class:`MemoryStore`, opens without blocking."""
        store = cls(
            uri,
            table_name=table_name,
            embedder=embedder,
            config=config,
            storage_options=storage_options,
            clock=clock,
            _open=False,
        )
        await store._aopen()
        return store

    # ------------------------------------------------------------------ properties
    @property
    def config(self) -> StoreConfig:
        """The frozen configuration."""
        return self._config

    @property
    def embedder(self) -> Embedder:
        """The embedder that wrote (and queries) this table."""
        return self._embedder

    @property
    def uri(self) -> str:
        """Where the database lives."""
        return self._uri

    @property
    def table_name(self) -> str:
        """The LanceDB table name."""
        return self._table_name

    def __repr__(self) -> str:
        return f"MemoryStore(uri={self._uri!r}, table={self._table_name!r}, embedder={self._embedder.name!r})"

    # ------------------------------------------------------------------ open / close
    async def _aopen(self) -> None:
        if not _is_uri(self._uri):
            try:
                Path(self._uri).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(
                    f"cannot use {self._uri!r} as the store folder ({exc.strerror or exc}); pass a folder path "
                    "that can be created or already is a folder"
                ) from exc
        try:
            db = await lancedb.connect_async(
                self._uri,
                storage_options=self._storage_options,
                read_consistency_interval=self._config.read_consistency_interval,
            )
            try:
                table = await db.open_table(self._table_name)
            except ValueError:  # not found: create it (exist_ok: another process may race us)
                table = await db.create_table(self._table_name, schema=self._schema, exist_ok=True)
            schema = await table.schema()
        except MemoryRetrieversError:
            raise
        except Exception as exc:
            raise _storage(f"open table {self._table_name!r} at {self._uri!r}", exc) from exc
        self._check_schema(schema)
        self._table = table
        self._indexed = await self._index_columns()

    def _check_schema(self, schema: pa.Schema) -> None:
        meta = schema.metadata or {}
        where = f"table {self._table_name!r} at {self._uri!r}"
        version = meta.get(META_SCHEMA_VERSION)
        if version is None:
            raise SchemaMismatchError(
                f"{where} was not created by memory-retrievers (no schema version recorded); "
                "use another table_name or path"
            )
        if int(version) != SCHEMA_VERSION:
            raise SchemaMismatchError(
                f"{where} has schema version {int(version)}, this memory-retrievers reads version "
                f"{SCHEMA_VERSION}; "
                + (
                    "upgrade memory-retrievers"
                    if int(version) > SCHEMA_VERSION
                    else "export it with the older version (store.list) and re-import"
                )
            )
        dim = int(meta.get(META_DIMENSION, b"0"))
        name = meta.get(META_EMBEDDER, b"").decode("utf-8")
        if dim != self._dimension or name != self._embedder.name:
            msg = (
                f"{where} was written with embedder {name!r} (dimension {dim}), but this store uses "
                f"{self._embedder.name!r} (dimension {self._dimension}); pass the original embedder, "
                "or use a new table_name/path for the new model (vectors of two models do not mix)"
            )
            if dim != self._dimension:
                raise DimensionMismatchError(msg)
            raise SchemaMismatchError(msg)

    async def _index_columns(self) -> set[str]:
        indexed: set[str] = set()
        for index in await self._table.list_indices():
            for column in index.columns:
                indexed.add(f"{index.index_type}:{column}")
        return indexed

    def close(self) -> None:
        """Write pending access statistics. The store must not be used afterwards."""
        _loop.run_sync(self.aclose())

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        if not self._closed:
            await self.aflush_access()
            self._closed = True

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _ensure_open(self) -> None:
        if self._closed:
            raise StorageError("this MemoryStore is closed; open a new one")

    # ------------------------------------------------------------------ writes
    def add(self, text: str, *, namespace: str, dedup: bool | None = None, **fields: Any) -> AddedMemory:
        """Store one memory and return it (``.action`` says added, updated or skipped).

        Args:
            text: What to remember. Stored verbatim.
            namespace: The user or tenant it belongs to.
            dedup: Override the config: ``False`` skips duplicate detection.
            **fields: Any writable field: ``id`` (an existing id is upserted), ``kind``,
                ``session_id``, ``project``, ``topic``, ``tags``, ``entities``, ``priority``,
                ``pinned``, ``importance``, ``created_at``, ``context``, ``metadata``, ``links``,
                ``supersedes``, ``vector``.

        Raises:
            InvalidInputError: Bad text or field (nothing is written).
            EmbeddingError: The embedder failed (nothing is written).
        """
        return _loop.run_sync(self.aadd(text, namespace=namespace, dedup=dedup, **fields))

    async def aadd(self, text: str, *, namespace: str, dedup: bool | None = None, **fields: Any) -> AddedMemory:
        """Async twin of :meth:`add`."""
        (result,) = await self.aadd_many([{**fields, "text": text, "namespace": namespace}], dedup=dedup)
        return result

    def add_many(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        batch_size: int | None = None,
        dedup: bool | None = None,
        progress: bool = False,
    ) -> builtins.list[AddedMemory]:
        """Store many memories: embedded in batches, one LanceDB commit per batch.

        Args:
            records: Dicts with ``text`` and any writable field (see :meth:`add`).
            namespace: Namespace for records that do not name one.
            batch_size: Records per commit (default ``StoreConfig.write_batch_size``).
            dedup: Override the config's duplicate detection.
            progress: Show a tqdm progress bar.

        Returns:
            One :class:`AddedMemory` per record, in order.

        Raises:
            InvalidInputError: A record is invalid. Every record is validated before the first
                commit, so an invalid record means nothing at all was written.
        """
        return _loop.run_sync(
            self.aadd_many(records, namespace=namespace, batch_size=batch_size, dedup=dedup, progress=progress)
        )

    async def aadd_many(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        batch_size: int | None = None,
        dedup: bool | None = None,
        progress: bool = False,
    ) -> builtins.list[AddedMemory]:
        """Async twin of :meth:`add_many`."""
        self._ensure_open()
        if isinstance(records, (str, bytes, Mapping)):
            raise InvalidInputError("records must be a list of dicts; for one memory use add()")
        size = batch_size if batch_size is not None else self._config.write_batch_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidInputError(f"batch_size must be a positive int, got {size!r}")
        recs: builtins.list[dict[str, Any]] = []
        for i, raw in enumerate(records):
            try:
                recs.append(validate_record(raw, self._config, namespace=namespace))
            except InvalidInputError as exc:
                raise type(exc)(f"record {i}: {exc}") from None
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(recs), unit="memory", desc="add_many")
        results: builtins.list[AddedMemory] = []
        try:
            for start in range(0, len(recs), size):
                batch = recs[start : start + size]
                results.extend(await self._awrite_batch(batch, dedup=dedup, first_index=start))
                if bar is not None:
                    bar.update(len(batch))
        finally:
            if bar is not None:
                bar.close()
        return results

    async def _aembed(self, texts: Sequence[str]) -> np.ndarray:
        try:
            raw = await self._embedder.aembed_documents(list(texts))
        except MemoryRetrieversError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"embedder {self._embedder.name!r} failed: {exc}") from exc
        return check_vectors(
            raw, rows=len(texts), dimension=self._dimension, source=f"embedder {self._embedder.name!r}"
        )

    async def _avectors(self, recs: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """One vector per record: the caller's (validated) or embedded in one batch."""
        vectors = np.empty((len(recs), self._dimension), dtype=np.float32)
        need = [i for i, r in enumerate(recs) if r.get("vector") is None]
        for i, r in enumerate(recs):
            if r.get("vector") is not None:
                vectors[i] = check_vectors(
                    r["vector"], rows=1, dimension=self._dimension, source=f"the vector of record {i}"
                )[0]
        if need:
            vectors[need] = await self._aembed([recs[i]["text"] for i in need])
        return vectors

    async def _aquery(self, where: str, columns: Sequence[str], limit: int | None = None) -> pa.Table:
        query = self._table.query().where(where).select(list(columns))
        if limit is not None:
            query = query.limit(limit)
        try:
            return await query.to_arrow()
        except Exception as exc:
            raise _storage("read the table", exc) from exc

    async def _arows_by_id(
        self, namespace: str, ids: Sequence[str], *, columns: Sequence[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        cols = list(columns) if columns is not None else [f.name for f in self._schema]
        out: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 1000):  # keep IN lists short
            chunk = unique[start : start + 1000]
            table = await self._aquery(build_where(namespace, MemoryFilter(include_superseded=True), ids=chunk), cols)
            for row in table.to_pylist():
                out[row["id"]] = row
        return out

    async def _afind_duplicates(
        self, namespace: str, hashes: Sequence[str], vectors: np.ndarray
    ) -> builtins.list[tuple[str, float] | None]:
        """For each candidate, an existing (not superseded) memory it duplicates, if any."""
        out: builtins.list[tuple[str, float] | None] = [None] * len(hashes)
        if not len(hashes) or await self._acount_fast(namespace) == 0:
            return out
        live = MemoryFilter()
        if self._config.exact_dedup:
            where = (
                build_where(namespace, live)
                + f" AND content_hash IN ({', '.join(sql_literal(h) for h in set(hashes))})"
            )
            found = {
                r["content_hash"]: r["id"] for r in (await self._aquery(where, ["id", "content_hash"])).to_pylist()
            }
            for i, h in enumerate(hashes):
                if h in found:
                    out[i] = (found[h], 1.0)
        threshold = self._config.near_duplicate_threshold
        todo = [i for i in range(len(hashes)) if out[i] is None]
        if threshold is not None and todo:
            query = (
                self._table.query()
                .nearest_to([vectors[i] for i in todo])
                .distance_type("cosine")
                .where(build_where(namespace, live))
                .select(["id", "_distance"])
                .limit(1)
            )
            try:
                table = await query.to_arrow()
            except Exception as exc:
                raise _storage("search for near duplicates", exc) from exc
            qidx = (
                table.column("query_index").to_pylist() if "query_index" in table.column_names else [0] * table.num_rows
            )
            for q, id_, dist in zip(
                qidx, table.column("id").to_pylist(), table.column("_distance").to_pylist(), strict=False
            ):
                sim = 1.0 - float(dist)
                if sim >= threshold:
                    out[todo[q]] = (id_, sim)
        return out

    async def _acount_fast(self, namespace: str) -> int:
        try:
            return int(await self._table.count_rows(build_where(namespace, MemoryFilter(include_superseded=True))))
        except Exception as exc:
            raise _storage("count rows", exc) from exc

    async def _adetect_duplicates(
        self,
        recs: Sequence[Mapping[str, Any]],
        hashes: Sequence[str],
        vectors: np.ndarray,
        by_ns: Mapping[str, Sequence[int]],
    ) -> builtins.list[tuple[str | int, float] | None]:
        """Find duplicates of each record.

        Returns per record ``(existing id, similarity)`` for a stored duplicate,
        ``(index, similarity)`` for an earlier record of the same batch, or ``None``.
        """
        dup_of: builtins.list[tuple[str | int, float] | None] = [None] * len(recs)
        candidate = [
            r["kind"] not in self._config.dedup_exempt_kinds and r.get("id") is None and r.get("supersedes") is None
            for r in recs
        ]
        for ns, idx in by_ns.items():
            cidx = [i for i in idx if candidate[i]]
            if not cidx:
                continue
            found = await self._afind_duplicates(ns, [hashes[i] for i in cidx], vectors[cidx])
            for i, hit in zip(cidx, found, strict=False):
                dup_of[i] = hit
            in_batch = first_duplicate_in_batch(
                [hashes[i] for i in idx],
                vectors[list(idx)],
                [candidate[i] and dup_of[i] is None for i in idx],
                self._config.near_duplicate_threshold,
            )
            for i, own in zip(idx, in_batch, strict=False):
                if own is not None:
                    dup_of[i] = (idx[own[0]], own[1])
        return dup_of

    async def _awrite_batch(
        self, recs: builtins.list[dict[str, Any]], *, dedup: bool | None, first_index: int = 0
    ) -> builtins.list[AddedMemory]:
        """Core of every write of validated records: embed, dedup, resolve upserts, one commit."""
        if not recs:
            return []
        vectors = await self._avectors(recs)
        now = self._clock()
        hashes = [content_hash(r["text"]) for r in recs]
        by_ns: dict[str, builtins.list[int]] = {}
        for i, r in enumerate(recs):
            by_ns.setdefault(r["namespace"], []).append(i)
        # Rows that caller ids will replace (upsert), fetched whole so their history survives.
        existing: dict[tuple[str, str], dict[str, Any]] = {}
        for ns, idx in by_ns.items():
            ids = [recs[i]["id"] for i in idx if recs[i].get("id") is not None]
            for id_, row in (await self._arows_by_id(ns, ids)).items():
                existing[(ns, id_)] = row
        use_dedup = self._config.exact_dedup or self._config.near_duplicate_threshold is not None
        dup_of = (
            await self._adetect_duplicates(recs, hashes, vectors, by_ns)
            if use_dedup and dedup is not False
            else [None] * len(recs)
        )
        last_with_id = {(r["namespace"], r["id"]): i for i, r in enumerate(recs) if r.get("id") is not None}

        policy = self._config.dedup_policy
        target: builtins.list[str] = [""] * len(recs)
        # key -> (row, record index, action, duplicate id, similarity)
        writes: dict[tuple[str, str], tuple[dict[str, Any], int, WriteAction, str | None, float | None]] = {}
        skipped: dict[int, tuple[str, float | None]] = {}
        for i, r in enumerate(recs):
            ns = r["namespace"]
            if r.get("id") is not None and last_with_id[(ns, r["id"])] != i:
                target[i] = r["id"]
                skipped[i] = (r["id"], None)  # a later record of this batch rewrites the same id
                continue
            dup_id: str | None = None
            sim: float | None = None
            hit = dup_of[i]
            if hit is not None:
                ref, sim = hit
                dup_id = target[ref] if isinstance(ref, int) else ref
                if policy is DedupPolicy.SKIP:
                    target[i] = dup_id
                    skipped[i] = (dup_id, sim)
                    continue
            update_dup = hit is not None and policy is DedupPolicy.UPDATE
            target[i] = r.get("id") or (dup_id if update_dup and dup_id else uuid.uuid4().hex)
            key = (ns, target[i])
            prior = existing.get(key) or (writes[key][0] if key in writes else None)
            if prior is None and update_dup:
                prior = (await self._arows_by_id(ns, [target[i]])).get(target[i])
            row = self._build_row(r, hashes[i], prior, now, offset_us=first_index + i, row_id=target[i])
            row["_auto_context"] = r.get("context") is None
            row["_vector"] = i
            action = WriteAction.UPDATED if prior is not None else WriteAction.ADDED
            writes[key] = (row, i, action, dup_id, sim)

        rows = [w[0] for w in writes.values()]
        refreshed = await self._afill_context(rows)
        if rows:
            upsert = bool(refreshed) or any(w[2] is WriteAction.UPDATED for w in writes.values())
            await self._acommit(rows, vectors[[row["_vector"] for row in rows]], extra=refreshed, upsert=upsert)

        written = {w[1]: w for w in writes.values()}
        by_key = {key: rows_to_memories(pa.Table.from_pylist([_public(w[0])]))[0] for key, w in writes.items()}
        out: builtins.list[AddedMemory] = []
        for i, r in enumerate(recs):
            if i in written:
                _, _, action, dup_id, sim = written[i]
                out.append(_added(by_key[(r["namespace"], target[i])], action, dup_id, sim))
                continue
            dup_id2, sim2 = skipped[i]
            mem = by_key.get((r["namespace"], dup_id2))
            if mem is None:
                mem = (await self._aget_memories(r["namespace"], [dup_id2]))[0]
            is_dup = sim2 is not None
            out.append(_added(mem, WriteAction.SKIPPED, dup_id2 if is_dup else None, sim2))
        return out

    async def _afill_context(self, rows: builtins.list[dict[str, Any]]) -> builtins.list[dict[str, Any]]:
        """Fill the ``context`` of message rows from their session neighbours (in place).

        Returns stored rows (with vectors) whose auto-filled context changed because their next
        turns just arrived; they are rewritten in the same commit. Turns are assumed to be written
        in conversation order.
        """
        window = self._config.context_window
        if window == 0:
            return []
        sessions: dict[tuple[str, str], builtins.list[dict[str, Any]]] = {}
        for row in rows:
            if row["kind"] == MemoryKind.MESSAGE.value and row["session_id"] is not None:
                sessions.setdefault((row["namespace"], row["session_id"]), []).append(row)
        refreshed: builtins.list[dict[str, Any]] = []
        for (ns, session), new_rows in sessions.items():
            if not any(r.get("_auto_context") for r in new_rows):
                continue
            new_rows.sort(key=lambda r: r["created_at"])
            flt = MemoryFilter(session_ids=(session,), kinds=(MemoryKind.MESSAGE,), include_superseded=True)
            query = (
                self._table.query()
                .where(build_where(ns, flt))
                .select([f.name for f in self._schema])
                .order_by([ColumnOrdering(column_name="created_at", ascending=False)])
                .limit(2 * window + len(new_rows))
            )
            try:
                fetched = (await query.to_arrow()).to_pylist()
            except Exception as exc:
                raise _storage("read session turns", exc) from exc
            writing = {r["id"] for r in new_rows}
            stored = [r for r in reversed(fetched) if r["id"] not in writing][-2 * window :]
            before = [r["text"] for r in stored]
            turns = before + [r["text"] for r in new_rows]
            offset = len(stored)
            contexts = window_contexts(turns, window)
            for j, row in enumerate(new_rows):
                if row.get("_auto_context"):
                    row["context"] = contexts[offset + j] or None
            # A stored turn whose context is exactly what auto-fill gave it without the new turns
            # was auto-filled: extend it with its newly arrived next turns.
            old_contexts = window_contexts(before, window)
            for k in range(max(0, offset - window), offset):
                if (stored[k]["context"] or "") == old_contexts[k] and (contexts[k] or None) != stored[k]["context"]:
                    refreshed.append({**stored[k], "context": contexts[k] or None})
        return refreshed

    def _build_row(
        self,
        rec: Mapping[str, Any],
        chash: str,
        prior: Mapping[str, Any] | None,
        now: datetime,
        *,
        offset_us: int = 0,
        row_id: str | None = None,
    ) -> dict[str, Any]:
        """A full table row (without vector) from a validated record and the row it replaces."""
        # Distinct microseconds keep the write order of one batch visible in created_at.
        created = rec.get("created_at") or (prior or {}).get("created_at") or now + timedelta(microseconds=offset_us)
        return {
            "id": row_id or rec.get("id") or (prior or {}).get("id") or uuid.uuid4().hex,
            "namespace": rec["namespace"],
            "text": rec["text"],
            "kind": rec["kind"].value,
            "session_id": rec["session_id"],
            "project": rec["project"],
            "topic": rec["topic"],
            "tags": rec["tags"],
            "entities": rec["entities"],
            "priority": rec["priority"],
            "pinned": rec["pinned"],
            "importance": rec["importance"],
            "created_at": created,
            "updated_at": now,
            "last_accessed_at": (prior or {}).get("last_accessed_at"),
            "access_count": (prior or {}).get("access_count", 0),
            "content_hash": chash,
            "supersedes": rec["supersedes"],
            "superseded_by": (prior or {}).get("superseded_by"),
            "links": rec["links"],
            "context": rec.get("context"),
            "metadata": rec["metadata"],
        }

    async def _acommit(
        self,
        rows: builtins.list[dict[str, Any]],
        vectors: np.ndarray,
        *,
        extra: builtins.list[dict[str, Any]] | None = None,
        upsert: bool,
    ) -> None:
        """Write rows (and full stored rows in ``extra``) in exactly one LanceDB commit."""
        clean = [_public(r) for r in rows]
        extra = extra or []
        if extra:
            extra_vectors = np.asarray([r["vector"] for r in extra], dtype=np.float32)
            clean += [{k: v for k, v in r.items() if k != "vector"} for r in extra]
            vectors = np.concatenate([vectors.reshape(-1, self._dimension), extra_vectors])
        for row in clean:  # derived here, the one place every write passes through
            row["search_text"] = search_text(row["text"], row["context"])
            if row["entities"]:
                self._entity_cache[row["namespace"]] = (True, time.monotonic())
        data = to_arrow(clean, vectors, self._schema)
        try:
            if upsert:
                result = await (
                    self._table.merge_insert(_KEY).when_matched_update_all().when_not_matched_insert_all().execute(data)
                )
            else:
                result = await self._table.add(data)
        except Exception as exc:
            self._wrote({r["namespace"] for r in clean}, None)
            raise _storage("write memories", exc) from exc
        self._wrote({r["namespace"] for r in clean}, result)
        await self._after_commit(len(clean))

    async def _after_commit(self, rows: int) -> None:
        with self._counter_lock:
            self._rows_since_optimize += rows
            self._commits_since_optimize += 1
            due = (
                self._rows_since_optimize >= self._config.optimize_after_rows
                or self._commits_since_optimize >= self._config.optimize_after_commits
            )
        # The write is committed: a maintenance failure now must not make it look failed (the
        # caller would retry or report a loss). Log it; the next commit tries again.
        try:
            if not self._has_base_indexes():
                await self._aensure_indexes(wait=False)  # the first build covers every row written so far
                with self._counter_lock:
                    self._rows_since_optimize = 0
                    self._commits_since_optimize = 0
            elif due:
                await self._aoptimize(wait=False)
        except StorageError as exc:
            logger.warning("maintenance after a write failed and will be retried: %s", exc)

    def _has_base_indexes(self) -> bool:
        return "FTS:text" in self._indexed and "Bitmap:namespace" in self._indexed

    async def _aensure_indexes(self, *, wait: bool = True) -> None:
        """Create any missing FTS/scalar index (and the ANN index once the table is large)."""
        await self._amaintain(lambda: _retry_conflicts("build indexes", self._abuild_missing_indexes), wait=wait)

    async def _amaintain(self, work: Callable[[], Awaitable[Any]], *, wait: bool) -> bool:
        """Run maintenance of this store one at a time; returns False when skipped.

        Two maintenance runs of one store would only conflict with each other's commits. A lock
        shared across event loops needs a thread lock, taken off the loop. Automatic maintenance
        (``wait=False``) skips when another run is in progress: that run covers the new rows.
        """
        if wait:
            await asyncio.to_thread(self._maintenance.acquire)
        elif not self._maintenance.acquire(blocking=False):
            return False
        try:
            await work()
        finally:
            self._maintenance.release()
        return True

    async def _abuild_missing_indexes(self) -> None:
        rows = int(await self._table.count_rows())
        if rows == 0:
            return
        # Re-read on every attempt: after a conflict, the other writer may have built the index.
        self._indexed = await self._index_columns()
        for column in _FTS_COLUMNS.values():
            if f"FTS:{column}" not in self._indexed:
                await self._table.create_index(column, config=FTS(with_position=False), replace=True)
        for column, factory in _SCALAR_INDEXES.items():
            cfg = factory()
            if f"{type(cfg).__name__}:{column}" not in self._indexed:
                await self._table.create_index(column, config=cfg, replace=True)
        if rows >= self._config.ann_index_min_rows and not any(k.endswith(":vector") for k in self._indexed):
            await self._table.create_index("vector", config=HnswSq(distance_type="cosine"), replace=True)
        self._indexed = await self._index_columns()

    def optimize(self) -> None:
        """Fold new rows into the indexes, compact small fragments, prune old versions.

        Also builds missing indexes. The store runs this on its own thresholds (see
        :class:`StoreConfig`), never on every write.
        """
        _loop.run_sync(self.aoptimize())

    async def aoptimize(self) -> None:
        """Async twin of :meth:`optimize`."""
        await self._aoptimize(wait=True)

    async def _aoptimize(self, *, wait: bool) -> None:
        self._ensure_open()
        with self._counter_lock:
            self._rows_since_optimize = 0
            self._commits_since_optimize = 0
        await self.aflush_access()

        async def work() -> None:
            await _retry_conflicts("build indexes", self._abuild_missing_indexes)
            await _retry_conflicts(
                "optimize the table",
                lambda: self._table.optimize(cleanup_older_than=self._config.version_retention),
                defer_ok=True,
            )

        if not await self._amaintain(work, wait=wait):
            return
        removed = await asyncio.to_thread(self._remove_stale_temp_files)
        if removed:
            logger.info("optimize removed %d temporary file(s) left by interrupted writes", removed)

    def _remove_stale_temp_files(self, min_age_s: float = 3600.0) -> int:
        """Delete temporary files that a killed writer left in a local table folder.

        A write in progress has its temporary files for well under a second, so only files older
        than ``min_age_s`` are removed: a concurrent writer's in-flight files are never touched.
        Object stores need no cleanup here (their uploads are atomic).
        """
        if _is_uri(self._uri):
            return 0
        folder = Path(self._uri) / f"{self._table_name}.lance"
        cutoff = time.time() - min_age_s
        removed = 0
        for path in folder.rglob("*"):
            name = path.name
            if not (name.startswith(".tmp") or name.endswith(".tmp") or name.startswith("_tmp")):
                continue
            try:
                if path.is_file() and path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except OSError:  # raced with its owner or already gone: not ours to fail on
                continue
        return removed

    def update(self, id: str, /, *, namespace: str, **fields: Any) -> Memory:
        """Change fields of one memory; text changes are re-embedded.

        Raises:
            NotFoundError: No memory with that id in the namespace.
            InvalidInputError: Bad field values, or ``id``/``namespace`` in ``fields``.
        """
        return _loop.run_sync(self.aupdate(id, namespace=namespace, **fields))

    async def aupdate(self, id: str, /, *, namespace: str, **fields: Any) -> Memory:
        """Async twin of :meth:`update`."""
        self._ensure_open()
        ns = self._ns(namespace)
        id_ = check_key(id, field="id", max_chars=self._config.max_key_chars)
        if not fields:
            raise InvalidInputError("update() needs at least one field to change")
        for fixed in ("id", "namespace"):
            if fixed in fields:
                raise InvalidInputError(f"{fixed} cannot be changed by update(); add a new memory instead")
        unknown = set(fields) - WRITABLE_FIELDS
        if unknown:
            raise InvalidInputError(
                f"unknown field(s) {sorted(unknown)}; writable fields are: {', '.join(sorted(WRITABLE_FIELDS))}"
            )
        prior = (await self._arows_by_id(ns, [id_])).get(id_)
        if prior is None:
            raise NotFoundError(f"no memory {id_!r} in namespace {ns!r}", [id_])
        merged = {k: prior[k] for k in WRITABLE_FIELDS if k in prior and k not in ("vector",)}
        merged["metadata"] = json.loads(prior["metadata"])
        merged.update(fields)
        rec = validate_record(merged, self._config)
        if "vector" in fields:
            vector = (await self._avectors([rec]))[0]
        elif rec["text"] != prior["text"]:
            vector = (await self._aembed([rec["text"]]))[0]
        else:
            vector = np.asarray(prior["vector"], dtype=np.float32)
        row = self._build_row(rec, content_hash(rec["text"]), prior, self._clock())
        await self._acommit([row], vector.reshape(1, -1), upsert=True)
        return rows_to_memories(pa.Table.from_pylist([row]))[0]

    def supersede(self, old_id: str, new: str | Mapping[str, Any], *, namespace: str) -> AddedMemory:
        """Replace a memory by a newer one, keeping both linked.

        The new memory inherits the old one's fields unless ``new`` (a text or a dict of fields)
        sets them; it records ``supersedes=old_id`` and the old one ``superseded_by=<new id>``,
        in one commit. Superseded memories are left out of searches unless a filter asks for them.

        Raises:
            NotFoundError: ``old_id`` does not exist in the namespace.
            InvalidInputError: ``old_id`` is already superseded, or the new record is invalid.
        """
        return _loop.run_sync(self.asupersede(old_id, new, namespace=namespace))

    async def asupersede(self, old_id: str, new: str | Mapping[str, Any], *, namespace: str) -> AddedMemory:
        """Async twin of :meth:`supersede`."""
        self._ensure_open()
        ns = self._ns(namespace)
        old_key = check_key(old_id, field="old_id", max_chars=self._config.max_key_chars)
        old = (await self._arows_by_id(ns, [old_key])).get(old_key)
        if old is None:
            raise NotFoundError(f"no memory {old_key!r} in namespace {ns!r}", [old_key])
        if old["superseded_by"] is not None:
            raise InvalidInputError(
                f"memory {old_key!r} is already superseded by {old['superseded_by']!r}; supersede that one instead"
            )
        fields: dict[str, Any] = {"text": new} if isinstance(new, str) else dict(new)
        inherited = {
            k: old[k]
            for k in (
                "kind",
                "session_id",
                "project",
                "topic",
                "tags",
                "entities",
                "priority",
                "pinned",
                "importance",
                "links",
            )
        }
        inherited["metadata"] = json.loads(old["metadata"])
        rec = validate_record({**inherited, **fields, "supersedes": old_key, "namespace": ns}, self._config)
        if rec.get("id") == old_key:
            raise InvalidInputError("the new memory needs an id different from old_id")
        if rec.get("id") is not None and (await self._arows_by_id(ns, [rec["id"]])):
            raise InvalidInputError(f"id {rec['id']!r} already exists; omit id to generate one")
        vector = await self._avectors([rec])
        now = self._clock()
        row = self._build_row(rec, content_hash(rec["text"]), None, now)
        old_row = {**old, "superseded_by": row["id"], "updated_at": now}
        await self._acommit([row], vector, extra=[old_row], upsert=True)
        mem = rows_to_memories(pa.Table.from_pylist([row]))[0]
        return _added(mem, WriteAction.ADDED, None, None)

    def delete(self, ids: str | Sequence[str], *, namespace: str, missing_ok: bool = False) -> int:
        """Delete memories by id; returns how many were deleted.

        Raises:
            NotFoundError: Some ids do not exist (and ``missing_ok`` is false); nothing is deleted.
        """
        return _loop.run_sync(self.adelete(ids, namespace=namespace, missing_ok=missing_ok))

    async def adelete(self, ids: str | Sequence[str], *, namespace: str, missing_ok: bool = False) -> int:
        """Async twin of :meth:`delete`."""
        self._ensure_open()
        ns = self._ns(namespace)
        wanted = self._ids(ids)
        found = await self._arows_by_id(ns, wanted, columns=["id"])
        missing = [i for i in wanted if i not in found]
        if missing and not missing_ok:
            raise NotFoundError(
                f"{len(missing)} id(s) not found in namespace {ns!r}: {missing[:5]}; nothing was deleted "
                "(pass missing_ok=True to delete the others)",
                missing,
            )
        if not found:
            return 0
        try:
            result = await self._table.delete(build_where(ns, MemoryFilter(include_superseded=True), ids=list(found)))
        except Exception as exc:
            self._wrote([ns], None)
            raise _storage("delete memories", exc) from exc
        self._wrote([ns], result)
        await self._after_commit(0)
        return len(found)

    def forget(self, namespace: str) -> int:
        """Delete every memory of a namespace (a user's right to be forgotten); returns the count."""
        return _loop.run_sync(self.aforget(namespace))

    async def aforget(self, namespace: str) -> int:
        """Async twin of :meth:`forget`."""
        self._ensure_open()
        ns = self._ns(namespace)
        count = await self._acount_fast(ns)
        if count:
            try:
                result = await self._table.delete(build_where(ns, MemoryFilter(include_superseded=True)))
            except Exception as exc:
                self._wrote([ns], None)
                raise _storage("forget a namespace", exc) from exc
            self._wrote([ns], result)
            await self._after_commit(0)
        return count

    # ------------------------------------------------------------------ reads
    @overload
    def get(self, ids: str, *, namespace: str, include_vector: bool = ...) -> Memory: ...  # type: ignore[overload-overlap]
    @overload
    def get(self, ids: Sequence[str], *, namespace: str, include_vector: bool = ...) -> builtins.list[Memory]: ...

    def get(
        self, ids: str | Sequence[str], *, namespace: str, include_vector: bool = False
    ) -> Memory | builtins.list[Memory]:
        """Fetch memories by id, in the order asked (superseded ones included).

        Returns one :class:`Memory` for a str id, a list for a list of ids.

        Raises:
            NotFoundError: Any id is missing from the namespace.
        """
        return _loop.run_sync(self.aget(ids, namespace=namespace, include_vector=include_vector))

    async def aget(
        self, ids: str | Sequence[str], *, namespace: str, include_vector: bool = False
    ) -> Memory | builtins.list[Memory]:
        """Async twin of :meth:`get`."""
        self._ensure_open()
        ns = self._ns(namespace)
        wanted = self._ids(ids)
        mems = await self._aget_memories(ns, wanted, include_vector=include_vector)
        return mems[0] if isinstance(ids, str) else mems

    async def _aget_memories(
        self, ns: str, ids: Sequence[str], *, include_vector: bool = False, missing_ok: bool = False
    ) -> builtins.list[Memory]:
        columns = [*SCALAR_COLUMNS, "vector"] if include_vector else list(SCALAR_COLUMNS)
        rows = await self._arows_by_id(ns, ids, columns=columns)
        missing = [i for i in ids if i not in rows]
        if missing and not missing_ok:
            raise NotFoundError(f"{len(missing)} id(s) not found in namespace {ns!r}: {missing[:5]}", missing)
        ordered = [rows[i] for i in dict.fromkeys(ids) if i in rows]
        return (
            [self._with_pending_access(m) for m in rows_to_memories(pa.Table.from_pylist(ordered))] if ordered else []
        )

    def _with_pending_access(self, mem: Memory) -> Memory:
        pending = self._access.peek(mem.namespace, mem.id)
        if pending is None:
            return mem
        from dataclasses import replace

        count, last = pending
        newest = max(last, mem.last_accessed_at) if mem.last_accessed_at else last
        return replace(mem, access_count=mem.access_count + count, last_accessed_at=newest)

    def list(
        self,
        namespace: str,
        *,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> builtins.list[Memory]:
        """Memories of a namespace ordered by ``created_at``, optionally filtered and paged."""
        return _loop.run_sync(
            self.alist(namespace, filter=filter, limit=limit, offset=offset, newest_first=newest_first)
        )

    async def alist(
        self,
        namespace: str,
        *,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> builtins.list[Memory]:
        """Async twin of :meth:`list`."""
        self._ensure_open()
        ns = self._ns(namespace)
        self._check_int(limit, "limit", 1)
        self._check_int(offset, "offset", 0)
        query = (
            self._table.query()
            .where(build_where(ns, coerce_filter(filter)))
            .select(list(SCALAR_COLUMNS))
            .order_by([ColumnOrdering(column_name="created_at", ascending=not newest_first)])
            .limit(limit)
            .offset(offset)
        )
        try:
            table = await query.to_arrow()
        except Exception as exc:
            raise _storage("list memories", exc) from exc
        return [self._with_pending_access(m) for m in rows_to_memories(table)]

    def count(self, namespace: str, *, filter: MemoryFilter | Mapping[str, Any] | None = None) -> int:
        """Number of memories in a namespace (superseded ones excluded unless the filter asks)."""
        return _loop.run_sync(self.acount(namespace, filter=filter))

    async def acount(self, namespace: str, *, filter: MemoryFilter | Mapping[str, Any] | None = None) -> int:
        """Async twin of :meth:`count`."""
        self._ensure_open()
        where = build_where(self._ns(namespace), coerce_filter(filter))
        try:
            return int(await self._table.count_rows(where))
        except Exception as exc:
            raise _storage("count memories", exc) from exc

    def namespaces(self) -> builtins.list[str]:
        """Every namespace that holds at least one memory, sorted.

        An administrative read across tenants (the only one): it lets adapters such as the
        LangGraph store list their namespaces. It scans the ``namespace`` column only.
        """
        return _loop.run_sync(self.anamespaces())

    async def anamespaces(self) -> builtins.list[str]:
        """Async twin of :meth:`namespaces`."""
        self._ensure_open()
        try:
            table = await self._table.query().select(["namespace"]).to_arrow()
        except Exception as exc:
            raise _storage("list namespaces", exc) from exc
        return sorted(str(v) for v in pc.unique(table.column("namespace")).to_pylist())

    # ------------------------------------------------------------------ search primitives
    def vector_search(
        self,
        query: str | Sequence[float] | np.ndarray,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """Nearest memories by cosine similarity (``Hit.score`` in [-1, 1], higher is better).

        ``query`` is a text (embedded with the store's embedder) or a vector.
        """
        return _loop.run_sync(self.avector_search(query, namespace=namespace, k=k, filter=filter))

    async def avector_search(
        self,
        query: str | Sequence[float] | np.ndarray,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """Async twin of :meth:`vector_search`."""
        self._ensure_open()
        where = build_where(self._ns(namespace), coerce_filter(filter))
        self._check_int(k, "k", 1, _MAX_QUERY_K)
        vector = (
            await self.aembed_query(query)
            if isinstance(query, str)
            else check_vectors(query, rows=1, dimension=self._dimension, source="the query vector")[0]
        )
        return _hits(await self._avector_table(vector, where, k, ["id"]))

    async def _avector_table(self, vector: np.ndarray, where: str, k: int, columns: Sequence[str]) -> pa.Table:
        """Nearest rows with ``columns`` and ``_score`` (cosine similarity)."""
        q = (
            self._table.query()
            .nearest_to(vector)
            .distance_type("cosine")
            .where(where)
            .select([*columns, "_distance"])
            .limit(k)
        )
        if any(key.endswith(":vector") for key in self._indexed):
            q = q.refine_factor(5)  # re-rank quantized candidates with full vectors
        try:
            table = await q.to_arrow()
        except Exception as exc:
            raise _storage("run a vector search", exc) from exc
        # The one place a distance becomes a score: cosine similarity = 1 - cosine distance.
        similarity = pc.subtract(pa.scalar(1.0, pa.float32()), table.column("_distance").cast(pa.float32()))
        return _ranked(table.drop_columns(["_distance"]).append_column("_score", similarity))

    async def aembed_query(self, query: str) -> np.ndarray:
        """Embed a query text with the store's embedder (validated output)."""
        text = check_text(query, field="query", max_chars=_MAX_QUERY_CHARS)
        try:
            raw = await self._embedder.aembed_query(text)
        except MemoryRetrieversError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"embedder {self._embedder.name!r} failed on the query: {exc}") from exc
        return np.asarray(
            check_vectors(raw, rows=1, dimension=self._dimension, source=f"embedder {self._embedder.name!r}")[0]
        )

    def fts_search(
        self,
        query: str,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        field: FtsField | str = FtsField.TEXT,
    ) -> builtins.list[Hit]:
        """BM25 full-text search with LanceDB's native index (``Hit.score`` = BM25, higher is better).

        Args:
            query: Keywords or a question (keep it short: long FTS queries are slow).
            namespace: Whose memories to search.
            k: How many hits.
            filter: Metadata prefilter.
            field: What to match: :attr:`FtsField.TEXT` (the memory alone), :attr:`FtsField.CONTEXT`
                (the memory together with its ``context``, e.g. neighbouring turns) or
                :attr:`FtsField.ENTITIES`.
        """
        return _loop.run_sync(self.afts_search(query, namespace=namespace, k=k, filter=filter, field=field))

    async def afts_search(
        self,
        query: str,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        field: FtsField | str = FtsField.TEXT,
    ) -> builtins.list[Hit]:
        """Async twin of :meth:`fts_search`."""
        self._ensure_open()
        where = build_where(self._ns(namespace), coerce_filter(filter))
        self._check_int(k, "k", 1, _MAX_QUERY_K)
        text = check_text(query, field="query", max_chars=_MAX_QUERY_CHARS)
        try:
            fts_field = FtsField(field)
        except ValueError:
            valid = ", ".join(f.value for f in FtsField)
            raise InvalidInputError(f"field must be one of {valid}, got {field!r}") from None
        return _hits(await self._afts_table(text, where, k, fts_field, ["id"]))

    async def _afts_table(self, text: str, where: str, k: int, field: FtsField, columns: Sequence[str]) -> pa.Table:
        """BM25 rows with ``columns`` and ``_score``; empty when nothing was ever indexed."""
        column = _FTS_COLUMNS[field]
        if f"FTS:{column}" not in self._indexed:
            return pa.table(
                {c: pa.array([], self._schema.field(c).type) for c in columns} | {"_score": pa.array([], pa.float32())}
            )
        query = (
            self._table.query().nearest_to_text(text, columns=column).where(where).select([*columns, "_score"]).limit(k)
        )
        try:
            return _ranked(await query.to_arrow())
        except Exception as exc:
            raise _storage("run a full-text search", exc) from exc

    def entity_search(
        self,
        entities: Sequence[str],
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """Memories sharing entities with ``entities`` (case-insensitive), most shared first.

        Ties go to the newer memory. ``Hit.score`` = number of shared entities.
        """
        return _loop.run_sync(self.aentity_search(entities, namespace=namespace, k=k, filter=filter))

    async def aentity_search(
        self,
        entities: Sequence[str],
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """Async twin of :meth:`entity_search`."""
        self._ensure_open()
        where = build_where(self._ns(namespace), coerce_filter(filter))
        self._check_int(k, "k", 1, _MAX_QUERY_K)
        if isinstance(entities, str):
            raise InvalidInputError(f"entities must be a list of str; wrap it: [{entities!r}]")
        wanted = [check_key(e, field="entity", max_chars=self._config.max_key_chars) for e in entities]
        return _hits(await self._aentity_table(wanted, where, k, ["id"]))

    def _wrote(self, namespaces: Iterable[str], result: Any) -> None:
        """Bookkeeping after a write (or a failed one).

        Drops the touched namespaces' views; other views move up to the version the write produced
        when every version since theirs is one of ours, so the set of versions to remember stays
        small. Forgetting a version can only make a view rebuild, never keep a stale one.
        """
        for ns in namespaces:
            self._epochs[ns] = self._epochs.get(ns, 0) + 1
            self._views.pop(ns, None)
        version = getattr(result, "version", None)
        if version is None:
            return
        self._own_versions.add(int(version))
        for ns, view in list(self._views.items()):
            if all(v in self._own_versions for v in range(view.version + 1, int(version) + 1)):
                view.version = int(version)
            else:  # something else changed the table in between: the view is stale anyway
                del self._views[ns]
        oldest = min((v.version for v in self._views.values()), default=int(version))
        self._own_versions = {v for v in self._own_versions if v > oldest}

    async def _aview(self, namespace: str) -> NamespaceView | None:
        """The namespace's in-memory view for recall, or ``None`` when disabled or too large.

        A view stays valid while every table version after it was written by this store without
        touching its namespace; anything else (another process's commit seen through
        ``read_consistency_interval``, compaction, index builds) rebuilds it.
        """
        limit = self._config.recall_view_max_rows
        if limit == 0:
            return None
        try:
            current = int(await self._table.version())
        except Exception as exc:
            raise _storage("read the table version", exc) from exc
        view = self._views.get(namespace)
        if view is not None and all(v in self._own_versions for v in range(view.version + 1, current + 1)):
            view.version = current
            return view
        epoch = self._epochs.get(namespace, 0)
        if await self._acount_fast(namespace) > limit:
            return None
        table = await self._aquery(
            build_where(namespace, MemoryFilter(include_superseded=True)), [*SCALAR_COLUMNS, "vector"]
        )
        view = NamespaceView.from_table(namespace, current, table)
        if self._epochs.get(namespace, 0) == epoch:  # no write of ours raced the load
            self._views[namespace] = view
            while sum(len(v) for v in self._views.values()) > 4 * limit and len(self._views) > 1:
                self._views.pop(next(iter(self._views)))  # evict the oldest view
        return view

    async def ahas_entities(self, namespace: str, *, max_age_s: float = 60.0) -> bool:
        """Whether any memory of the namespace has entities (lets recall skip a useless query).

        Cached per namespace: a write through this store with entities sets it at once; writes by
        other processes are seen after at most ``max_age_s`` seconds.
        """
        ns = self._ns(namespace)
        cached = self._entity_cache.get(ns)
        now = time.monotonic()
        if cached is not None and (cached[0] or now - cached[1] < max_age_s):
            return cached[0]
        where = build_where(ns, MemoryFilter(include_superseded=True)) + " AND array_length(entities) > 0"
        try:
            found = int(await self._table.count_rows(where)) > 0
        except Exception as exc:
            raise _storage("count entity-tagged memories", exc) from exc
        self._entity_cache[ns] = (found, now)
        return found

    async def _aentity_table(self, entities: Sequence[str], where: str, k: int, columns: Sequence[str]) -> pa.Table:
        """Rows sharing entities, most shared first (ties: newer first), with ``_score`` = count."""
        wanted = sorted({e.strip().casefold() for e in entities})
        cols = list(dict.fromkeys([*columns, "entities", "created_at"]))
        if not wanted:
            return pa.table(
                {c: pa.array([], self._schema.field(c).type) for c in columns} | {"_score": pa.array([], pa.float32())}
            )
        table = await self._aquery(where + f" AND array_has_any(entities, {sql_list(wanted)})", cols)
        want = set(wanted)
        overlap = [float(len(want.intersection(e or []))) for e in table.column("entities").to_pylist()]
        created = table.column("created_at").to_pylist()
        order = sorted(range(table.num_rows), key=lambda i: (overlap[i], created[i]), reverse=True)[:k]
        out = table.take(pa.array(order, pa.int64())).select(list(columns))
        return out.append_column("_score", pa.array([overlap[i] for i in order], pa.float32()))

    def recency_search(
        self,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """The newest memories (``Hit.score`` = ``created_at`` as POSIX seconds)."""
        return _loop.run_sync(self.arecency_search(namespace=namespace, k=k, filter=filter))

    async def arecency_search(
        self,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """Async twin of :meth:`recency_search`."""
        self._ensure_open()
        where = build_where(self._ns(namespace), coerce_filter(filter))
        self._check_int(k, "k", 1, _MAX_QUERY_K)
        return _hits(await self._arecency_table(where, k, ["id"]))

    async def _arecency_table(self, where: str, k: int, columns: Sequence[str]) -> pa.Table:
        """Newest rows with ``_score`` = ``created_at`` in POSIX seconds."""
        cols = list(dict.fromkeys([*columns, "created_at"]))
        query = (
            self._table.query()
            .where(where)
            .select(cols)
            .order_by([ColumnOrdering(column_name="created_at", ascending=False)])
            .limit(k)
        )
        try:
            table = await query.to_arrow()
        except Exception as exc:
            raise _storage("run a recency search", exc) from exc
        seconds = [ts.timestamp() for ts in table.column("created_at").to_pylist()]
        return table.select(list(columns)).append_column("_score", pa.array(seconds, pa.float64()))

    # ------------------------------------------------------------------ access statistics
    def record_access(self, ids: Sequence[str], *, namespace: str, at: datetime | None = None) -> None:
        """Count an access of each id (e.g. recalled).

        Held in memory and written in one batch once ``StoreConfig.access_flush_size`` accesses
        are pending, off the caller's path.
        """
        ns = self._ns(namespace)
        when = to_utc(at, "at") if at is not None else self._clock()
        pending = self._access.record(ns, self._ids(ids), when)
        if pending >= self._config.access_flush_size:
            _loop.submit(self._aflush_logged())

    async def arecord_access(self, ids: Sequence[str], *, namespace: str, at: datetime | None = None) -> None:
        """Async twin of :meth:`record_access` (never waits for the write)."""
        self.record_access(ids, namespace=namespace, at=at)

    async def _aflush_logged(self) -> None:
        try:
            await self.aflush_access()
        except Exception:  # background work: report, never raise into nowhere
            logger.warning("memory-retrievers: writing access statistics failed; will retry", exc_info=True)

    def flush_access(self) -> int:
        """Write pending access statistics now; returns how many memories were updated."""
        return _loop.run_sync(self.aflush_access())

    async def aflush_access(self) -> int:
        """Async twin of :meth:`flush_access`."""
        pending = self._access.take()
        if not pending or self._table is None:
            return 0
        by_ns: dict[str, builtins.list[str]] = {}
        for ns, id_ in pending:
            by_ns.setdefault(ns, []).append(id_)
        ns_col: builtins.list[str] = []
        id_col: builtins.list[str] = []
        counts: builtins.list[int] = []
        lasts: builtins.list[datetime] = []
        try:
            for ns, ids in by_ns.items():
                rows = await self._arows_by_id(ns, ids, columns=["id", "access_count", "last_accessed_at"])
                for id_, row in rows.items():  # deleted memories are simply dropped
                    count, last = pending[(ns, id_)]
                    ns_col.append(ns)
                    id_col.append(id_)
                    counts.append(int(row["access_count"]) + count)
                    prev = row["last_accessed_at"]
                    lasts.append(max(prev, last) if prev is not None else last)
            if not id_col:
                return 0
            data = pa.table(
                {
                    "namespace": pa.array(ns_col, pa.string()),
                    "id": pa.array(id_col, pa.string()),
                    "access_count": pa.array(counts, pa.int64()),
                    "last_accessed_at": pa.array(lasts, pa.timestamp("us", tz="UTC")),
                }
            )
            result = await self._table.merge_insert(_KEY).when_matched_update_all().execute(data)
        except Exception as exc:
            self._access.restore(pending)
            self._wrote(set(ns_col), None)
            raise _storage("write access statistics", exc) from exc
        self._wrote(set(ns_col), result)
        await self._after_commit(len(id_col))
        return len(id_col)

    # ------------------------------------------------------------------ helpers
    def _ns(self, namespace: Any) -> str:
        return check_key(namespace, field="namespace", max_chars=self._config.max_key_chars)

    def _ids(self, ids: str | Sequence[str]) -> builtins.list[str]:
        if isinstance(ids, str):
            ids = [ids]
        if not isinstance(ids, Sequence) or isinstance(ids, bytes):
            raise InvalidInputError(f"ids must be a str or a list of str, got {type(ids).__name__}")
        if not ids:
            raise InvalidInputError("ids is empty; pass at least one id")
        return [check_key(i, field="id", max_chars=self._config.max_key_chars) for i in ids]

    @staticmethod
    def _check_int(value: Any, name: str, low: int, high: int | None = None) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
            bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
            raise InvalidInputError(f"{name} must be an int {bound}, got {value!r}")


def _hits(table: pa.Table) -> builtins.list[Hit]:
    """Ranked ``Hit``s from a search table with ``id`` and ``_score`` columns."""
    return [
        Hit(id_, float(score))
        for id_, score in zip(table.column("id").to_pylist(), table.column("_score").to_pylist(), strict=True)
    ]


def _public(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row without the private ``_`` bookkeeping keys of the write path."""
    return {k: v for k, v in row.items() if not k.startswith("_")}


def _added(mem: Memory, action: WriteAction, dup: str | None, sim: float | None) -> AddedMemory:
    fields = {f: getattr(mem, f) for f in Memory.__dataclass_fields__}
    return AddedMemory(**fields, action=action, duplicate_of=dup, similarity=sim)
