"""The clustering rewrite on Ray: every table of a store laid out by namespace, tables in parallel.

One Ray task per table (each shard of a :class:`~memory_retrievers.ShardedMemoryStore`, or the one
table of a :class:`~memory_retrievers.MemoryStore`) opens that table itself and runs one
:meth:`~memory_retrievers.store.admin.StoreAdmin.cluster` pass on it, then optionally
:meth:`~memory_retrievers.store.admin.StoreAdmin.optimize`. Tables never share a row or a commit
sequence, so the tasks never meet; within a table the pass is what ``store.admin.cluster()`` does
(conditional commits: writers of that table lose nothing). A table that fails is reported with its
error, and the other tables' results are kept.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_retrievers.bulk.batching import check_factory, check_positive
from memory_retrievers.bulk.engine import EmbedderFactory, factory_for, require_ray
from memory_retrievers.bulk.tables import open_table, table_openers
from memory_retrievers.errors import InvalidInputError, MemoryRetrieversError, StorageError
from memory_retrievers.storage.cluster import ClusterResult

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["ClusterReport", "TableCluster", "cluster_tables"]


@dataclass(frozen=True, slots=True)
class TableCluster:
    """The clustering of one table.

    Attributes:
        shard: The shard's index (0 for the table of a plain store).
        uri: The table's location.
        table: The table's name.
        result: What the pass did (``None`` when the pass failed; kept when only optimize did).
        optimized: Whether ``optimize`` ran after the pass.
        seconds: Wall time of the task (pass and optimize).
        error: Why the table failed (``None`` when it did not): the library's own error, or a
            :class:`~memory_retrievers.StorageError` naming what Ray or LanceDB raised.
    """

    shard: int
    uri: str
    table: str
    result: ClusterResult | None
    optimized: bool
    seconds: float
    error: MemoryRetrieversError | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the error as its type name and message)."""
        return {
            "shard": self.shard,
            "uri": self.uri,
            "table": self.table,
            "result": None if self.result is None else self.result.to_dict(),
            "optimized": self.optimized,
            "seconds": round(self.seconds, 3),
            "error": None if self.error is None else {"type": type(self.error).__name__, "message": str(self.error)},
        }


@dataclass(frozen=True, slots=True)
class ClusterReport:
    """What :func:`cluster_tables` did.

    Attributes:
        tables: One entry per table, in shard order.
        seconds: Wall time of the job.
    """

    tables: tuple[TableCluster, ...]
    seconds: float

    @property
    def failed(self) -> tuple[TableCluster, ...]:
        """The tables whose pass failed (each with its ``error``); empty when every table was clustered."""
        return tuple(t for t in self.tables if t.error is not None)

    @property
    def moved(self) -> int:
        """Rows rewritten, over every table clustered."""
        return sum(t.result.moved for t in self.tables if t.result is not None)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "tables": [t.to_dict() for t in self.tables],
            "moved": self.moved,
            "failed": len(self.failed),
            "seconds": round(self.seconds, 3),
        }


def cluster_tables(
    store: MemoryStore,
    *,
    optimize: bool = False,
    workers: int | None = None,
    ray_address: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    embedder_factory: EmbedderFactory | None = None,
) -> ClusterReport:
    """Lay out every table of ``store`` by namespace (one clustering pass each), tables in parallel on Ray.

    Each table gets a Ray task that opens it and runs ``admin.cluster()`` (see
    :meth:`~memory_retrievers.store.admin.StoreAdmin.acluster`: incremental, searchable throughout,
    nothing lost to concurrent writers), then ``admin.optimize()`` when ``optimize`` is set, which
    folds the moved rows back into the indexes. A task holds its table's rows being rewritten in
    memory (every row when runs are merged): size the Ray workers for the largest shard.

    Args:
        store: A :class:`~memory_retrievers.MemoryStore` (one task) or a
            :class:`~memory_retrievers.ShardedMemoryStore` (one task per shard, opened in the task).
        optimize: Also optimize each table after its pass.
        workers: Tables clustered at once (default: as many as Ray schedules, one CPU each).
        ray_address: Join this Ray cluster first (default: the running instance, or a local one).
        storage_options: Those the store was opened with (object storage credentials).
        embedder_factory: Builds the store's embedder in a task (default: rebuilt from it; the
            pass embeds nothing, but a store opens with its table's model).

    Returns:
        Each table's pass figures or error, and the wall time. Check ``report.failed``: a table's
        failure does not raise.

    Raises:
        InvalidInputError: ``workers`` is not an int >= 1.
        ConfigError: Ray is not installed, or the embedder cannot be sent to workers.
    """
    started = time.perf_counter()
    at_once = check_positive(workers, "workers") if workers is not None else None
    if not isinstance(optimize, bool):
        raise InvalidInputError(f"optimize must be True or False, got {optimize!r}")
    check_factory(embedder_factory, "embedder_factory")
    openers = table_openers(store, storage_options)
    factory = embedder_factory or factory_for(store.embedder)
    ray = require_ray(ray_address)
    store.flush()  # this process's queued writes are committed before the tasks read the tables
    task = ray.remote(num_cpus=1)(_cluster_one)
    tables = _run_tasks(ray, task, [(i, o, factory, optimize) for i, o in enumerate(openers)], openers, at_once)
    return ClusterReport(tuple(tables), time.perf_counter() - started)


def _run_tasks(
    ray: Any, task: Any, calls: list[tuple[Any, ...]], openers: list[dict[str, Any]], at_once: int | None
) -> list[TableCluster]:
    """Every call of ``task``, at most ``at_once`` in flight; a task Ray itself failed is reported, not raised."""
    results: dict[int, TableCluster] = {}
    waiting: dict[Any, int] = {}

    def collect(refs: list[Any]) -> None:
        for ref in refs:
            shard = waiting.pop(ref)
            try:
                results[shard] = ray.get(ref)
            except Exception as exc:  # the worker died, or the result did not come back
                opener = openers[shard]
                said = _scrubbed(opener, f"{type(exc).__name__}: {exc}")
                error = StorageError(f"shard {shard}: the Ray task failed: {said}")
                results[shard] = TableCluster(shard, opener["uri"], opener["table_name"], None, False, 0.0, error)

    for args in calls:
        if at_once is not None and len(waiting) >= at_once:
            done, _ = ray.wait(list(waiting), num_returns=1)
            collect(done)
        waiting[task.remote(*args)] = args[0]
    collect(list(waiting))
    return [results[i] for i in sorted(results)]


def _cluster_one(shard: int, opener: dict[str, Any], factory: EmbedderFactory, optimize: bool) -> TableCluster:
    """One Ray task: open the table, run a clustering pass (and optimize), report it or its error."""
    started = time.perf_counter()
    result: ClusterResult | None = None
    optimized = False
    error: MemoryRetrieversError | None = None
    try:
        with open_table(opener, factory()) as store:
            result = store.admin.cluster()
            if optimize:
                store.admin.optimize()
                optimized = True
    except MemoryRetrieversError as exc:
        exc.args = (_scrubbed(opener, str(exc)),)
        error = exc
    except Exception as exc:  # LanceDB or the OS, past the library's own wrapping: still this table's error
        error = StorageError(f"shard {shard}: {_scrubbed(opener, f'{type(exc).__name__}: {exc}')}")
    seconds = time.perf_counter() - started
    return TableCluster(shard, opener["uri"], opener["table_name"], result, optimized, seconds, error)


def _scrubbed(opener: Mapping[str, Any], text: str) -> str:
    """``text`` with the table's LanceDB Cloud API key masked: a report is printed, logged and sent as JSON."""
    cloud = opener.get("cloud")
    return text if cloud is None else str(cloud.scrub(text))
