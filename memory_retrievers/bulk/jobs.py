"""The bulk jobs: import chat history and re-embed a table, with the embedding spread over Ray workers.

Embedding is the expensive part of both (about 500 short texts/s per two cores for MiniLM); the
commit is not (one LanceDB commit per batch of hundreds of rows). So the workers embed and the
process that calls the job writes, through the store's own write path: an import through
``add_many`` with the precomputed vectors (duplicate detection, context fill and supersession as in
any write), a re-embedding through ``admin.restore`` (ids, timestamps, access statistics and
supersession links kept). One writer per table is also what LanceDB's commits favour: writers racing
on one table retry each other's conflicts.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_retrievers.bulk.batching import ImportReport, attach_vectors, check_factory, check_positive, export_records
from memory_retrievers.bulk.catch_up import catch_up
from memory_retrievers.bulk.engine import (
    EmbedBatch,
    EmbedderFactory,
    checked_factory,
    embedded_in_order,
    model_of,
    require_ray,
)
from memory_retrievers.bulk.tables import check_storage_options, table_openers
from memory_retrievers.errors import ConfigError, InvalidInputError, MemoryRetrieversError
from memory_retrievers.filters import sql_in
from memory_retrievers.storage.fields import SCALAR_COLUMNS
from memory_retrievers.validation import check_namespace

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["import_records", "reembed"]

#: Texts per Ray batch: large enough that the per-batch overhead of Ray is small against embedding it.
DEFAULT_EMBED_BATCH = 256


def _workers(workers: int | None, ray: Any) -> int:
    if workers is None:
        return max(1, int(ray.available_resources().get("CPU", 1)))
    return check_positive(workers, "workers")


def _check_ray_arguments(workers: int | None, embed_batch: int, embedder_factory: EmbedderFactory | None) -> None:
    """The arguments only Ray uses, checked before Ray starts (a bad one must change nothing)."""
    if workers is not None:
        check_positive(workers, "workers")
    check_positive(embed_batch, "embed_batch")
    check_factory(embedder_factory, "embedder_factory")


def import_records(
    store: MemoryStore,
    records: Iterable[Mapping[str, Any]],
    *,
    namespace: str | None = None,
    batch_size: int | None = None,
    dedup: bool | None = None,
    workers: int | None = None,
    embed_batch: int = DEFAULT_EMBED_BATCH,
    embedder_factory: EmbedderFactory | None = None,
) -> ImportReport:
    """Import many records (chat history, notes) with their embeddings computed in parallel on Ray.

    The result is what ``store.add_many(records, namespace=..., batch_size=..., dedup=...)`` stores
    (the same memories, ids and vectors): the records are embedded by ``workers`` Ray actors, each
    holding its own copy of the store's embedder, and written by this process with ``add_many``,
    batch by batch in input order, with the vectors attached. Records that carry a ``vector`` keep it.

    Every record is validated before Ray starts; a write error stops the job after the batches
    already committed (the exception's ``.written`` lists them, as for ``add_many``).

    Args:
        store: Where to write.
        records: Dicts with ``text`` and any writable field (see :meth:`MemoryStore.add`).
        namespace: For records that name none.
        batch_size: Records per commit (default ``StoreConfig.write_batch_size``).
        dedup: Override the config's duplicate detection.
        workers: Ray actors embedding at once (default: every CPU of the Ray cluster).
        embed_batch: Texts per Ray batch.
        embedder_factory: Builds the embedder in a worker (default: rebuilt from the store's); run
            once here first to check it builds the store's model.

    Returns:
        Counts and wall time.

    Raises:
        InvalidInputError: A record or argument is invalid; nothing was written.
        EmbedderMismatchError: ``embedder_factory`` builds another model than the store's.
        ConfigError: Ray is not installed, or the embedder cannot be sent to workers.
    """
    started = time.perf_counter()
    size = check_positive(batch_size if batch_size is not None else store.config.write_batch_size, "batch_size")
    _check_ray_arguments(workers, embed_batch, embedder_factory)
    items = _checked(store, records, namespace, dedup)
    factory = checked_factory(embedder_factory, store.embedder)
    ray = require_ray()
    runs = embedded_in_order(
        items, factory, workers=_workers(workers, ray), embed_batch=embed_batch, model=model_of(store.embedder)
    )
    counts, batches, first = _write_in_order(store, items, runs, size, namespace, dedup)
    seconds = time.perf_counter() - started
    return ImportReport(len(items), batches=batches, seconds=seconds, startup_seconds=first - started, **counts)


def _write_in_order(
    store: MemoryStore,
    items: list[dict[str, Any]],
    runs: Iterable[tuple[int, np.ndarray]],
    size: int,
    namespace: str | None,
    dedup: bool | None,
) -> tuple[dict[str, int], int, float]:
    """Write ``items`` with the vectors of ``runs`` in whole batches of ``size``, as ``add_many`` batches them.

    Returns the actions counted, the commits made and when the first vectors arrived (``perf_counter``).

    Raises:
        MemoryRetrieversError: A batch failed to embed or commit; its ``.written`` lists every
            record of the job already stored (as ``add_many``'s does), so a re-run skips them.
    """
    counts = {"added": 0, "updated": 0, "skipped": 0}
    stored: list[Any] = []
    batches = 0
    pending: list[np.ndarray] = []
    first: float | None = None
    try:
        for start, vectors in runs:
            first = time.perf_counter() if first is None else first
            pending.append(vectors)
            ready = sum(len(v) for v in pending)
            # Commit whole batches of ``size`` as add_many would; the rest waits for the next vectors.
            while ready >= size or (ready and start + len(vectors) == len(items)):
                stacked = np.concatenate(pending)
                take = min(size, len(stacked))
                chunk = attach_vectors(items[len(stored) : len(stored) + take], stacked[:take], start=len(stored))
                stored.extend(store.add_many(chunk, namespace=namespace, batch_size=size, dedup=dedup))
                batches += 1
                pending = [stacked[take:]] if take < len(stacked) else []
                ready -= take
    except MemoryRetrieversError as exc:
        _say_what_was_stored(exc, stored)
        raise
    for result in stored:
        counts[result.action.value] += 1
    return counts, batches, first if first is not None else time.perf_counter()


def _say_what_was_stored(exc: MemoryRetrieversError, stored: list[Any]) -> None:
    """Name on ``exc`` the records of the job committed before it (each ``add_many`` call knew only its own)."""
    done = [*stored, *exc.written]
    if done:
        exc.written = done
        n = len(done)
        exc.args = (f"{exc} (records 0-{n - 1} were stored, see .written; records {n} onwards were not)",)


def _checked(
    store: MemoryStore, records: Iterable[Mapping[str, Any]], namespace: str | None, dedup: bool | None
) -> list[dict[str, Any]]:
    """The records as a list, every one validated as ``add_many`` would (a bad one stops the job before Ray).

    ``namespace`` and ``dedup`` are checked too: records naming their own namespace never consult
    the argument, and ``add_many`` would refuse a bad one only at the first commit, after Ray started.
    """
    if namespace is not None:
        check_namespace(namespace, max_chars=store.config.max_key_chars)
    if dedup is not None and not isinstance(dedup, bool):
        raise InvalidInputError(f"dedup must be True, False or None, got {dedup!r}")
    if isinstance(records, (str, bytes, Mapping)):
        raise InvalidInputError("records must be a list of dicts; for one memory use store.add()")
    items = [dict(r) if isinstance(r, Mapping) else r for r in records]
    from memory_retrievers.validation import validate_record

    for i, raw in enumerate(items):
        try:
            validate_record(raw, store.config, namespace=namespace)
        except InvalidInputError as exc:
            raise type(exc)(f"record {i}: {exc}") from None
    return items


def reembed(
    source: MemoryStore,
    target: MemoryStore,
    *,
    namespaces: Sequence[str] | None = None,
    batch_size: int = 1000,
    workers: int | None = None,
    embed_batch: int = DEFAULT_EMBED_BATCH,
    storage_options: Mapping[str, str] | None = None,
    embedder_factory: EmbedderFactory | None = None,
) -> ImportReport:
    """Copy a store's memories into another store, embedded again with the target's model, on Ray.

    The source table is read in parallel with ``lance_ray.read_lance`` (one Ray task per fragment;
    every shard's table of a :class:`~memory_retrievers.ShardedMemoryStore`; a sharded ``target``
    restores each memory on its namespace's shard),
    the texts embedded by Ray actors holding the target's embedder, and every memory restored into
    ``target`` with ``admin.restore``: ids, timestamps, access statistics, supersession links and
    context kept, only the vector new. Superseded and expired memories are copied too, as an export
    would. Pending access statistics of ``source`` are written first so the copy carries them.

    Writers may go on: every memory added, changed or deleted in the source after the Ray read is
    copied after it (:func:`~memory_retrievers.bulk.catch_up.catch_up`) before the job returns.

    Args:
        source: The store to read (its table is not changed).
        target: A store opened with the new embedder (typically a new table or path).
        namespaces: Only these namespaces (default: all).
        batch_size: Records per restore commit.
        workers: Ray actors embedding at once (default: every CPU of the Ray cluster).
        embed_batch: Texts per Ray batch.
        storage_options: How Lance reads the source table on object storage (the ones the source
            store was opened with).
        embedder_factory: Builds the target's embedder in a worker (default: rebuilt from it).

    Returns:
        Counts (``updated``: replaced in the target; ``skipped``: deleted from the source meanwhile;
        ``caught_up``: added or changed in the source meanwhile, copied after the snapshot) and time.

    Raises:
        InvalidInputError: ``source`` and ``target`` are the same table, or a bad argument.
        EmbedderMismatchError: ``embedder_factory`` builds another model (it is run once here first).
        ConfigError: Ray or lance-ray is not installed, the embedder cannot be sent to workers, or
            ``source`` is on LanceDB Cloud (``db://``), which Lance cannot read directly.
        SourceChangingError: Writers never paused long enough for the copy to catch up (what was
            copied stays in ``target``; run again when they pause).
    """
    started = time.perf_counter()
    check_positive(batch_size, "batch_size")
    _check_ray_arguments(workers, embed_batch, embedder_factory)
    _check_copy(source, target, storage_options)
    where = _namespace_filter(namespaces)
    factory = checked_factory(embedder_factory, target.embedder)
    source.admin.flush_access()
    embedded = _embedded(_read_table(source, where, storage_options), factory, target, workers, embed_batch)
    return _restore_all(target, embedded, batch_size, started, source=source, namespaces=namespaces)


def _embedded(
    dataset: Any, factory: EmbedderFactory, target: MemoryStore, workers: int | None, embed_batch: int
) -> Any:
    """The source's rows as a Ray dataset of Arrow batches, each with a ``vector`` column of the target's model."""
    ray = require_ray()
    return dataset.map_batches(
        _WithVectors,
        fn_constructor_args=(factory, model_of(target.embedder)),
        batch_size=embed_batch,
        batch_format="pyarrow",
        # Autoscaled from one actor: a table of few fragments feeds few actors (Ray warns at a fixed pool).
        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=_workers(workers, ray)),
        num_cpus=1,
    )


def _restore_all(
    target: MemoryStore,
    embedded: Any,
    batch_size: int,
    started: float,
    *,
    source: MemoryStore,
    namespaces: Sequence[str] | None = None,
) -> ImportReport:
    """Restore the embedded rows into ``target``, ``batch_size`` per commit, as they arrive, then catch up.

    The rows are the source as it was when the Ray read started; every change the source took
    since (adds, updates, supersessions, deletions, forgotten namespaces) is then copied too
    (:func:`~memory_retrievers.bulk.catch_up.catch_up`), so the job reports done only on a copy of
    the source as it is now.
    """
    added = replaced = batches = records = 0
    copied: dict[str, list[str]] = {}
    first: float | None = None
    for batch in embedded.iter_batches(batch_size=batch_size, batch_format="pyarrow"):
        first = time.perf_counter() - started if first is None else first
        rows = export_records(batch.to_pylist())
        restored = target.admin.restore(rows)
        for row in rows:
            copied.setdefault(row["namespace"], []).append(row["id"])
        added, replaced = added + restored.added, replaced + restored.replaced
        records += batch.num_rows
        batches += 1
    done = catch_up(source, target, copied, namespaces)
    seconds = time.perf_counter() - started
    return ImportReport(
        records,
        max(0, added - done.dropped),
        replaced,
        done.dropped,
        batches,
        seconds,
        first or 0.0,
        caught_up=done.recopied,
    )


def _namespace_filter(namespaces: Sequence[str] | None) -> str | None:
    """A Lance SQL filter on the namespace column (escaped as every filter of the store is)."""
    if namespaces is None:
        return None
    if isinstance(namespaces, str):
        raise InvalidInputError("namespaces must be a list of str, e.g. ['alice']; got a single str")
    if not namespaces:
        raise InvalidInputError("namespaces is empty; pass None for every namespace")
    return sql_in("namespace", [check_namespace(ns, max_chars=10_000) for ns in namespaces])


def _check_copy(source: MemoryStore, target: MemoryStore, storage_options: Mapping[str, str] | None) -> None:
    """Refuse a copy onto the source's own table, a source Lance cannot read (LanceDB Cloud), bad options."""
    check_storage_options(storage_options)
    if any(o["uri"].startswith("db://") for o in table_openers(source, None)):
        raise ConfigError(
            "reembed reads the source table with Lance directly, which cannot read LanceDB Cloud (db://); copy "
            "it with admin.export()/admin.restore() into a store of the same model on a folder or bucket, and "
            "re-embed that copy"
        )
    if _tables(source) & _tables(target):
        raise InvalidInputError("source and target are the same table; open the target on a new table or path")


def _tables(store: MemoryStore) -> set[tuple[str, str]]:
    """Location and name of each table of ``store`` (each shard's of a sharded store), one spelling each.

    ``s3://b/mem/`` is the table at ``s3://b/mem``, a symlinked folder its target: copying a table
    onto itself must be refused however spelled (the shards' own rule, ``table_identity``).
    """
    from memory_retrievers.shards.calls import table_identity

    return {table_identity(o["uri"], o["table_name"]) for o in table_openers(store, None)}


def _read_table(source: MemoryStore, where: str | None, storage_options: Mapping[str, str] | None) -> Any:
    """The source's rows as one Ray dataset: its table, or every shard's table of a sharded store."""
    datasets = [_read_one(o["uri"], o["table_name"], where, storage_options) for o in table_openers(source, None)]
    return datasets[0].union(*datasets[1:]) if len(datasets) > 1 else datasets[0]


def _read_one(location: str, table: str, where: str | None, storage_options: Mapping[str, str] | None) -> Any:
    try:
        from lance_ray.datasource import LanceDatasource
    except ImportError:
        from memory_retrievers.errors import ConfigError, install_extra

        raise ConfigError(f"reembed reads tables with lance-ray: {install_extra('ray')}") from None
    ray = require_ray()
    uri = f"{location.rstrip('/')}/{table}.lance"
    # lance_ray.read_lance with its read tasks taking no CPU slot: reading a fragment is I/O and
    # Lance's own threads, and with a slot each the embedding actors (one CPU each) held every slot
    # and the reads never ran (measured: a hang on 2 CPUs with 2 actors).
    datasource = LanceDatasource(
        uri=uri, columns=list(SCALAR_COLUMNS), filter=where, storage_options=dict(storage_options or {}) or None
    )
    return ray.data.read_datasource(datasource, num_cpus=0)


class _WithVectors(EmbedBatch):
    """Arrow batches of stored rows, each with a new ``vector`` column from the target's embedder."""

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        texts = batch.column("text").to_pylist()
        out = super().__call__({"i": np.arange(len(texts)), "text": np.asarray(texts, dtype=object)})
        vectors = out["vector"]
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])
        return batch.append_column("vector", column)
